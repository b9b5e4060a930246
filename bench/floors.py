"""The floors' records: the Authlib twin's tables, clients, user and tokens (``bench/twin.py``).

The round-trip floor (``bench/roundtrip_app.py``) needs nothing: it reads the
service's own token rows. The twin gets its tables (``twin_*``) in the same
database, created from its models, and records that mirror the service's seed:
a public client for the code flow and refresh, a confidential one for client
credentials, one user, and refresh tokens to rotate.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

import psycopg
import sqlalchemy
from authlib.common.encoding import json_dumps
from flask import Flask
from flask.sessions import SecureCookieSessionInterface

from bench import seed, twin

# Twice the access token's lifetime is the example's refresh lifetime (OAuth2Token.is_refresh_token_active).
REFRESH_EXPIRES_IN = seed.BULK_TOKEN_TTL


@dataclass
class TwinSeed:
    """What the twin's loads need."""

    client_id: str
    machine_client_id: str
    machine_client_secret: str
    user_id: int

    def authorize_path(self) -> str:
        return (
            f"/oauth/authorize?response_type=code&client_id={self.client_id}"
            f"&redirect_uri={seed.REDIRECT_URI.replace(':', '%3A').replace('/', '%2F')}&scope=public"
        )

    def exchange_body(self) -> str:
        """The code exchange as a form body (Authlib reads the form only); the code goes last."""
        return (
            f"grant_type=authorization_code&client_id={self.client_id}"
            f"&redirect_uri={seed.REDIRECT_URI.replace(':', '%3A').replace('/', '%2F')}&code="
        )


def seed_twin(database_url: str, conn: psycopg.Connection) -> TwinSeed:
    """Create the twin's tables from its models and insert its user and clients."""
    engine = sqlalchemy.create_engine(twin.sqlalchemy_url(database_url))
    twin.db.metadata.create_all(engine)
    engine.dispose()
    user_id = conn.execute("INSERT INTO twin_user (username) VALUES ('bench') RETURNING id").fetchone()[0]
    public = {
        "redirect_uris": [seed.REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "scope": "public",
        "token_endpoint_auth_method": "none",
    }
    machine = {"grant_types": ["client_credentials"], "scope": "public"}
    client_id, machine_id, secret = secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(32)
    insert = (
        "INSERT INTO twin_client (client_id, client_secret, client_id_issued_at, client_secret_expires_at, "
        "client_metadata, user_id) VALUES (%s, %s, %s, 0, %s, %s)"
    )
    now = int(time.time())
    conn.execute(insert, (client_id, "", now, json_dumps(public), user_id))
    conn.execute(insert, (machine_id, hashlib.sha256(secret.encode()).hexdigest(), now, json_dumps(machine), user_id))
    return TwinSeed(client_id, machine_id, secret, user_id)


def twin_refresh_tokens(conn: psycopg.Connection, records: TwinSeed, count: int) -> list[str]:
    """``count`` live refresh tokens of the twin's public client (each good once: rotation)."""
    now = int(time.time())
    rows = [
        (records.client_id, "Bearer", secrets.token_urlsafe(32), secrets.token_urlsafe(36), "public", now,
         REFRESH_EXPIRES_IN, records.user_id)
        for _ in range(count)
    ]  # fmt: skip
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO twin_token (client_id, token_type, access_token, refresh_token, scope, issued_at, expires_in, "
            "access_token_revoked_at, refresh_token_revoked_at, user_id) VALUES (%s, %s, %s, %s, %s, %s, %s, 0, 0, %s)",
            rows,
        )
    conn.execute("VACUUM (ANALYZE) twin_token")
    return [row[3] for row in rows]


def twin_session_cookie(secret_key: str, user_id: int) -> str:
    """The twin's Flask session cookie for ``user_id``, as the example's sign-in sets it (``session["id"]``)."""
    app = Flask("twin-cookie")
    app.secret_key = secret_key
    serializer = SecureCookieSessionInterface().get_signing_serializer(app)
    assert serializer is not None
    return f"session={serializer.dumps({'id': user_id})}"
