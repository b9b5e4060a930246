"""``python -m bench.imports``: what each library holds in a worker, measured by importing them in order.

One fresh interpreter imports the stack one library at a time, in the order a
worker meets them (the framework, the database, the store, the OAuth server,
then what loads at first use: JOSE, outbound HTTP, the SCIM schemas, SAML, LDAP, passkeys,
QR codes, logos), and reads its resident memory (VmRSS) after each. A library's row is
what it added on top of the ones above it, so what two libraries share is
counted once, with the first. docs/performance.md, "Memory by role".
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# (row, modules imported for it): the order a worker meets them.
STACK = (
    ("Flask, Werkzeug, Jinja", ("flask",)),
    ("SQLAlchemy", ("sqlalchemy", "sqlalchemy.orm")),
    ("psycopg (libpq, OpenSSL)", ("psycopg",)),
    ("Flask-SQLAlchemy", ("flask_sqlalchemy",)),
    ("redis-py, with OpenTelemetry's metrics SDK", ("redis",)),
    ("Authlib (OAuth 2.0 server)", ("authlib.integrations.flask_oauth2", "authlib.oauth2.rfc6749")),
    ("Flask-Limiter, limits", ("flask_limiter", "limits.strategies")),
    ("Flask-Babel, Babel's core", ("flask_babel",)),
    ("Flask-WTF, WTForms", ("flask_wtf", "wtforms")),
    ("prometheus-client", ("prometheus_client",)),
    ("bcrypt", ("bcrypt",)),
    ("cryptography (Fernet)", ("cryptography.fernet",)),
    (
        "authsvc's own modules (create_app's imports)",
        ("authsvc.cli", "authsvc.api.fastpath", "authsvc.app.blueprints", "authsvc.oauth.server", "config.settings"),
    ),
    ("joserfc, cryptography's JOSE (ID tokens, DPoP)", ("joserfc.jwt", "joserfc.jwk", "joserfc.jws")),
    ("requests, urllib3, charset-normalizer (outbound)", ("requests", "requests_hardened")),
    ("pydantic, scim2-models (SCIM, admin schemas)", ("pydantic", "scim2_models")),
    ("pysaml2", ("saml2", "saml2.client")),
    ("ldap3", ("ldap3",)),
    ("py_webauthn", ("webauthn",)),
    ("segno (QR codes)", ("segno",)),
    ("Pillow (logos)", ("PIL.Image",)),
)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure() -> list[tuple[str, float]]:
    """In this process: the interpreter's own, then each row's addition, in MB."""
    rows = [("the interpreter", rss_mb())]
    for label, modules in STACK:
        before = rss_mb()
        for module in modules:
            importlib.import_module(module)
        rows.append((label, rss_mb() - before))
    return rows


def main() -> int:
    # A fresh interpreter, which runs this file without importing the bench package (and its imports).
    child = f"runpy.run_path({str(Path(__file__))!r}, run_name='child')"
    code = f"import json, runpy; print(json.dumps({child}['measure']()))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    for label, mb in rows:
        print(f"{label:<52} {mb:6.1f} MB")
    print(f"{'in all':<52} {sum(mb for _, mb in rows):6.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
