"""The data a run needs: records through the CLI, tokens in bulk through COPY.

Only rows are added; the schema is the one the migrations build.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import subprocess
import tempfile
import time
from dataclasses import dataclass
from urllib.parse import quote

import psycopg
from joserfc import jwt
from joserfc.jwk import ECKey

from bench import BenchError
from devtools.services import REPO, procfile_command, tool

HOST = "127.0.0.1"
REDIRECT_URI = "http://127.0.0.1/callback"
SERVICE_EMAIL = "service@bench.test"
PERSON_EMAIL = "person@bench.test"
# A system admin: the admin API's domain list and the console's domain page (the tenancy rows).
SYSTEM_ADMIN_EMAIL = "sysadmin@bench.test"
PASSWORD = "bench-password-1234"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# Bulk tokens stay valid for the whole run.
BULK_TOKEN_TTL = 7 * 24 * 3600
REFRESH_TTL = 30 * 24 * 3600

COPY_COLUMNS = (
    "application_id, user_id, access_token_digest, refresh_token_digest, family, grant_type, scope, "
    "issued_at, expires_in, refresh_expires_at, grant_expires_at, purgeable_at"
)


@dataclass
class Seed:
    """What the load needs to know about the seeded records."""

    client_id: str
    application_id: int
    service_user_id: int
    api_key: str
    api_key_id: str
    password_hash: str
    # An application with the device grant (RFC 8628), for the device poll row.
    device_client_id: str
    # A confidential application bound to the service account: the client credentials grant.
    machine_client_id: str
    machine_client_secret: str
    # One bound to it that authenticates with private_key_jwt, and the private key it signs with.
    keyed_client_id: str
    keyed_private_jwk: dict
    # A domain admin's API key with the scim scope: the SCIM rows.
    scim_key: str = ""
    # A system admin's API key with the admin scope, and the bench domain's id: the tenancy rows' admin pages.
    admin_key: str = ""
    domain_id: str = ""

    @property
    def bcrypt_rounds(self) -> int:
        # "$2b$12$...": the cost the service hashed the password with.
        return int(self.password_hash.split("$")[2])

    def authorize_path(self, openid: bool = False) -> str:
        """The authorisation request; with ``openid`` (and a nonce) the exchange adds an RS256 ID token."""
        scope = "openid&nonce=bench-nonce-0123456789" if openid else "public"
        return (
            f"/auth/oauth/authorize?response_type=code&client_id={quote(self.client_id)}"
            f"&redirect_uri={quote(REDIRECT_URI, safe='')}&scope={scope}"
        )

    def exchange_path_prefix(self) -> str:
        """The code exchange in the query string, as clients send it (docs/platform.md); the code goes last."""
        return (
            f"/auth/oauth/token?grant_type=authorization_code&client_id={quote(self.client_id)}"
            f"&redirect_uri={quote(REDIRECT_URI, safe='')}&code="
        )


def flask(env: dict[str, str], *args: str) -> dict:
    """Run ``flask --app app ARGS`` as the CLI contract says and return its JSON."""
    result = subprocess.run(
        [tool("flask"), "--app", "app", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:])
        raise BenchError(f"flask {' '.join(args[:2])} failed:\n{tail}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def migrate(env: dict[str, str]) -> None:
    """The Procfile's release command."""
    result = subprocess.run(procfile_command("release"), cwd=REPO, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:])
        raise BenchError(f"migrations failed:\n{tail}")


def seed_records(env: dict[str, str], db: psycopg.Connection) -> Seed:
    flask(env, "domains", "create", "--name", "Bench", "--host", HOST)
    flask(env, "domains", "scopes", "add", "--domain", HOST, "openid")
    # The metadata document client's row serves its document on loopback (bench/metadata_documents.py).
    flask(env, "domains", "update", "--domain", HOST, "--client-metadata-allow-private-network")
    # The legacy mode (no PKCE): the benchmark's code flow is the specification's, sent literally.
    application = flask(
        env,
        "apps",
        "create",
        "--domain",
        HOST,
        "--name",
        "Bench",
        "--redirect-uri",
        REDIRECT_URI,
        # openid: the code flow with an ID token, beside the plain one, from the same application.
        "--scopes",
        "public openid",
        "--no-require-pkce",
    )
    service = flask(
        env,
        "users",
        "create",
        "--domain",
        HOST,
        "--email",
        SERVICE_EMAIL,
        "--password",
        PASSWORD,
        "--name",
        "Bench service",
        "--service-account",
    )
    machine = flask(
        env,
        "apps",
        "create",
        "--domain",
        HOST,
        "--name",
        "Bench machine",
        "--confidential",
        "--service-account",
        SERVICE_EMAIL,
        # The token exchange row (RFC 8693) exchanges this application's own tokens.
        "--token-exchange",
    )
    keyed, private_jwk = _keyed_application(env)
    flask(env, "users", "create", "--domain", HOST, "--email", PERSON_EMAIL, "--password", PASSWORD, "--name", "Person")
    key = flask(env, "api-keys", "create", "--domain", HOST, "--user", SERVICE_EMAIL, "--name", "bench")
    device = flask(
        env, "apps", "create", "--domain", HOST, "--name", "Bench screen", "--redirect-uri", REDIRECT_URI, "--device"
    )
    scim_admin = "scim-admin@bench.example"
    flask(env, "users", "create", "--domain", HOST, "--email", scim_admin, "--password", PASSWORD, "--admin")
    scim_key = flask(
        env, "api-keys", "create", "--domain", HOST, "--user", scim_admin, "--name", "scim", "--scopes", "scim"
    )
    system_admin = SYSTEM_ADMIN_EMAIL
    flask(
        env, "users", "create", "--domain", HOST, "--email", system_admin, "--password", PASSWORD, "--admin",
        "--system-admin",
    )  # fmt: skip
    # An API key acts with its user's admin permission only when created with --permission admin.
    admin_key = flask(
        env, "api-keys", "create", "--domain", HOST, "--user", system_admin, "--name", "admin", "--scopes", "admin",
        "--permission", "admin",
    )  # fmt: skip
    domain_id = db.execute("SELECT id FROM domain WHERE host = %s", (HOST,)).fetchone()[0]
    password_hash = db.execute('SELECT password_hash FROM "user" WHERE id = %s', (int(service["id"]),)).fetchone()[0]
    return Seed(
        client_id=application["client_id"],
        application_id=int(application["id"]),
        service_user_id=int(service["id"]),
        api_key=key["key"],
        api_key_id=key["id"],
        password_hash=password_hash,
        device_client_id=device["client_id"],
        machine_client_id=machine["client_id"],
        machine_client_secret=machine["client_secret"],
        keyed_client_id=keyed["client_id"],
        keyed_private_jwk=private_jwk,
        scim_key=scim_key["key"],
        admin_key=admin_key["key"],
        domain_id=str(domain_id),
    )


def _keyed_application(env: dict[str, str]) -> tuple[dict, dict]:
    """A client_credentials application with a registered JWKS (private_key_jwt), and its private key."""
    key = ECKey.generate_key("P-256", parameters={"kid": "bench"})
    with tempfile.NamedTemporaryFile("w", suffix=".json") as jwks:
        jwks.write(json.dumps({"keys": [key.as_dict(private=False)]}))
        jwks.flush()
        created = flask(
            env,
            "apps",
            "create",
            "--domain",
            HOST,
            "--name",
            "Bench keyed machine",
            "--service-account",
            SERVICE_EMAIL,
            "--jwks-file",
            jwks.name,
        )
    return created, key.as_dict(private=True)


def client_assertions(seed: Seed, audience: str, count: int) -> list[str]:
    """``count`` signed client assertions of the keyed application, each with its own jti."""
    key = ECKey.import_key(seed.keyed_private_jwk)
    now = int(time.time())
    claims = {"iss": seed.keyed_client_id, "sub": seed.keyed_client_id, "aud": audience, "exp": now + 900}
    header = {"alg": "ES256", "kid": "bench"}
    return [jwt.encode(header, {**claims, "jti": f"{now}-{i}-{random.getrandbits(32)}"}, key) for i in range(count)]


class DPoPKey:
    """A DPoP client's key (RFC 9449): ES256 proofs, each with its own jti."""

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256")
        self.nonce: str | None = None

    def proofs(self, method: str, url: str, count: int, access_token: str | None = None) -> list[str]:
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.key.as_dict(private=False)}
        claims: dict = {"htm": method, "htu": url, "iat": int(time.time())}
        if self.nonce:
            claims["nonce"] = self.nonce
        if access_token:
            claims["ath"] = _secret(hashlib.sha256(access_token.encode()).digest())
        return [jwt.encode(header, {**claims, "jti": f"{i}-{random.getrandbits(64)}"}, self.key) for i in range(count)]


def _post(port: int, path: str, body: str, headers: dict[str, str]) -> tuple[int, dict, dict]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/x-www-form-urlencoded", **headers})
    response = conn.getresponse()
    data = json.loads(response.read() or b"{}")
    conn.close()
    return response.status, data, dict(response.getheaders())


def dpop_nonce(port: int, holder: DPoPKey, url: str) -> str | None:
    """The service's current DPoP nonce (None when AUTHSVC_DPOP_NONCE is off), learnt as a client does."""
    (proof,) = holder.proofs("POST", url, 1)
    _, _, headers = _post(port, "/auth/oauth/token", "grant_type=none", {"DPoP": proof})
    return headers.get("DPoP-Nonce")


def machine_token(port: int, seed: Seed) -> str:
    """An access token of the machine application (client credentials): the token exchange row's subject."""
    basic = base64.b64encode(f"{seed.machine_client_id}:{seed.machine_client_secret}".encode()).decode()
    status, data, _ = _post(
        port, "/auth/oauth/token", "grant_type=client_credentials", {"Authorization": f"Basic {basic}"}
    )
    if status != 200:
        raise BenchError(f"no client credentials token: {status} {data}")
    return data["access_token"]


def dpop_token(port: int, seed: Seed, holder: DPoPKey) -> str:
    """An access token bound to ``holder``'s key: client credentials of the machine application, with a proof."""
    url = f"http://{HOST}:{port}/auth/oauth/token"
    holder.nonce = dpop_nonce(port, holder, url)
    basic = base64.b64encode(f"{seed.machine_client_id}:{seed.machine_client_secret}".encode()).decode()
    (proof,) = holder.proofs("POST", url, 1)
    status, data, _ = _post(
        port, "/auth/oauth/token", "grant_type=client_credentials", {"Authorization": f"Basic {basic}", "DPoP": proof}
    )
    if status != 200 or data.get("token_type") != "DPoP":
        raise BenchError(f"no DPoP-bound token: {status} {data}")
    return data["access_token"]


def _secret(raw: bytes) -> str:
    # The shape of security.new_secret(): 256 bits, URL-safe base64 without padding.
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def insert_tokens(db: psycopg.Connection, seed: Seed, count: int, keep: int, *, refresh: bool = False) -> list[str]:
    """COPY ``count`` live tokens of the bench application into ``token``.

    Returns the secrets of ``keep`` of them, picked at random over the batch:
    access tokens, or refresh tokens when ``refresh`` is set.
    """
    if count <= 0:
        return []
    kept_rows = set(random.sample(range(count), min(keep, count)))
    kept: list[str] = []
    issued = int(time.time())
    refresh_expires = issued + REFRESH_TTL
    prefix = f"{seed.application_id}\t{seed.service_user_id}\t"
    chunk = 20_000
    with db.cursor() as cur, cur.copy(f"COPY token ({COPY_COLUMNS}) FROM STDIN") as copy:  # noqa: S608
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            randomness = os.urandom(64 * n)
            lines = []
            for i in range(n):
                access = _secret(randomness[64 * i : 64 * i + 32])
                family = _secret(randomness[64 * i + 32 : 64 * i + 64])
                if refresh:
                    secret = _secret(hashlib.sha256(randomness[64 * i : 64 * i + 64]).digest())
                    lines.append(
                        f"{prefix}{digest(access)}\t{digest(secret)}\t{family}\tpassword\tpublic\t"
                        f"{issued}\t{BULK_TOKEN_TTL}\t{refresh_expires}\t{refresh_expires}\t{refresh_expires}\n"
                    )
                else:
                    secret = access
                    lines.append(
                        f"{prefix}{digest(access)}\t\\N\t{family}\tpassword\tpublic\t{issued}\t{BULK_TOKEN_TTL}\t\\N\t\\N\t"
                        f"{issued + BULK_TOKEN_TTL}\n"
                    )
                if start + i in kept_rows:
                    kept.append(secret)
            copy.write("".join(lines))
    random.shuffle(kept)
    return kept


def vacuum_analyze(db: psycopg.Connection) -> None:
    """What autovacuum does in a steady state: statistics and the visibility map (index-only scans)."""
    db.execute("VACUUM (ANALYZE) token")


def token_count(db: psycopg.Connection) -> int:
    return db.execute("SELECT count(*) FROM token").fetchone()[0]


def scim_user_email(i: int) -> str:
    return f"scim-user-{i}@bench.example"


def insert_users(db: psycopg.Connection, count: int) -> None:
    """COPY plain users (no password) into the bench domain until it holds ``count`` of them."""
    domain_id = db.execute("SELECT id FROM domain WHERE host = %s", (HOST,)).fetchone()[0]
    have = db.execute("SELECT count(*) FROM \"user\" WHERE email LIKE 'scim-user-%%'").fetchone()[0]
    created = int(time.time())
    columns = "domain_id, email, name, groups, service_account, admin, support, disabled, system_admin, "
    columns += "sessions_valid_after, created_at"
    with db.cursor() as cur, cur.copy(f'COPY "user" ({columns}) FROM STDIN') as copy:  # noqa: S608
        for i in range(have, count):
            copy.write(f"{domain_id}\t{scim_user_email(i)}\tUser {i}\t[]\tf\tf\tf\tf\tf\t0\t{created}\n")
    db.execute('VACUUM (ANALYZE) "user"')
