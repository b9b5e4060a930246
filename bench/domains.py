"""``python -m bench.domains COUNT``: add domains to the database of ``DATABASE_URL`` until it holds COUNT.

Each new domain gets what a tenant has in use: an application (public, with a
redirect URI and the code flow), a user with a password, and a current RS256
signing key. Bulk INSERTs through the models' tables, a thousand rows a
statement, in one transaction per thousand domains: 10,000 domains take
seconds, where one CLI call per domain would take hours. Run with the
service's environment (``DATABASE_URL``, ``SECRET_KEY``: the keys are
encrypted with it, as the service encrypts them).

Two shortcuts, both of data only (the schema is the migrations'): every user
shares one bcrypt hash (one hash costs 0.25 s), and every key shares one RSA key
pair under its own ``kid`` (a pair costs 50 ms to make). The service looks
keys up by domain and ``kid``, and never compares their material.
bench/README.md, "Ten thousand domains".
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import BenchError, say
from devtools.services import REPO, Database, Gunicorn, free_port

BATCH = 1000
PASSWORD = "bench-password-1234"


def host(i: int) -> str:
    """The ``i``-th seeded domain's host (a ``Host`` header the benchmark sends)."""
    return f"tenant-{i}.bench.test"


def seed(count: int) -> int:
    """Add domains until there are ``count``; returns how many were added."""
    os.environ.setdefault("AUTHSVC_WEB_WORKER", "1")
    from joserfc.jwk import RSAKey
    from sqlalchemy import func, insert, select

    from authsvc import create_app
    from authsvc.core import security
    from authsvc.core.database import db
    from authsvc.core.models import Application, Domain, SigningKey, User

    app = create_app()
    with app.app_context():
        have = db.session.scalar(select(func.count()).select_from(Domain)) or 0
        pair = RSAKey.generate_key(2048, parameters={"alg": "RS256", "use": "sig"}, private=True)
        pem = pair.as_pem(private=True).decode("ascii")
        public = pair.as_dict(private=False)
        password_hash = security.hash_password(PASSWORD)
        now = int(time.time())
        for start in range(have, count, BATCH):
            numbers = range(start, min(count, start + BATCH))
            domain_ids = db.session.scalars(
                insert(Domain).returning(Domain.id, sort_by_parameter_order=True),
                [{"name": f"Tenant {i}", "host": host(i), "created_at": now} for i in numbers],
            ).all()
            db.session.execute(
                insert(Application),
                [
                    {
                        "domain_id": d,
                        "name": "Tenant app",
                        "client_id": secrets.token_urlsafe(24),
                        "redirect_uris": ["http://127.0.0.1/callback"],
                        "scopes": "public openid",
                        "require_pkce": False,
                    }
                    for d in domain_ids
                ],
            )
            db.session.execute(
                insert(User),
                [
                    {"domain_id": d, "email": f"user@{host(i)}", "password_hash": password_hash}
                    for i, d in zip(numbers, domain_ids, strict=True)
                ],
            )
            kids = [secrets.token_urlsafe(16) for _ in domain_ids]
            db.session.execute(
                insert(SigningKey),
                [
                    {
                        "domain_id": d,
                        "kid": kid,
                        "alg": "RS256",
                        "private_key_encrypted": security.encrypt(pem),
                        "public_jwk": {**public, "kid": kid},
                        "created_at": now,
                    }
                    for d, kid in zip(domain_ids, kids, strict=True)
                ],
            )
            db.session.commit()
        return max(0, count - have)


@dataclass
class DomainSet:
    """One authsvc on a copy of the first database grown to ``count`` domains (the bench's own among them)."""

    count: int
    db: Database
    server: Gunicorn
    start_s: float = 0.0  # from gunicorn's start to every worker running
    cookie: str = ""  # the bench person's session on it, for the code flow
    admin_cookie: str = ""  # the system admin's, for the console's domain page

    @property
    def hosts(self) -> list[str]:
        """The seeded domains' hosts, for the rows that ask a random one (discovery, JWKS)."""
        return [host(i) for i in range(1, self.count)]


def prepare(template: Database, name: str, count: int, env: dict[str, str], log: Path) -> DomainSet:
    """Copy ``template`` (one domain, the bench's) to ``name`` and grow it to ``count`` domains with this command."""
    db = Database(template.admin_url, name)
    db.create(template=template)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bench.domains", str(count)],
        cwd=REPO,
        env={**env, "DATABASE_URL": db.url},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        db.drop()
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise BenchError(f"seeding {count:,} domains failed:\n{tail}")
    with db.connect() as conn:
        conn.execute("VACUUM (ANALYZE)")
    say(f"{name}: {count:,} domains ({time.monotonic() - began:.1f} s to seed and VACUUM ANALYZE)")
    return DomainSet(count, db, Gunicorn(f"authsvc-{count}-domains", free_port(), {**env, "DATABASE_URL": db.url}, log))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].replace("_", "").isdigit():
        print("usage: python -m bench.domains COUNT  (with DATABASE_URL and SECRET_KEY set)", file=sys.stderr)
        return 2
    began = time.monotonic()
    added = seed(int(argv[0].replace("_", "")))
    print(f"bench.domains: {added:,} domains added in {time.monotonic() - began:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
