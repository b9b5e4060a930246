"""A worker loads the rarely used features' libraries only when one is first used.

joserfc's keys, JWS and JWTs load cryptography (about 10 MB with joserfc): a
worker that serves opaque bearer tokens (inspect, the code flow and refresh
without ``openid``, client credentials with a secret) never loads them; the
first request that signs or verifies a JWS, or asks for ``openid``, does.

The ``flask`` command groups (authsvc/cli/), e-mail's header machinery and SMTP, Babel's catalog
compiler and bcrypt load when a command line, a message, a stale catalog or a password needs
them: a worker that serves only inspect loads none of them (docs/performance.md, "Memory by role").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from authsvc.cli import COMMANDS
from authsvc.web import catalogs
from tests.helpers import in_one_pass
from tests.helpers.admin_api import call

ROOT = Path(__file__).resolve().parents[3]
# segno: our QR codes; Flask-Migrate (Alembic, Mako, Pygments): a `flask db` command's own (authsvc/cli/migrations.py);
# Pillow (PIL): the first logo uploaded (authsvc/core/logo.py).
LAZY = (
    *("saml2", "ldap3", "webauthn", "qrcode", "segno", "pydantic", "flask_migrate", "alembic", "mako", "pygments"),
    "PIL",
)
# Modules (not packages: ``joserfc.errors`` and cryptography's package are light, and loaded).
JOSE = ("joserfc.jwk", "joserfc.jws", "joserfc.jwt", "cryptography.hazmat.bindings._rust")
# Modules of packages the app loads in part: the commands, e-mail's header parser and registry (email.policy),
# Babel's catalog reader and writer (authsvc.web.catalogs, only for a stale catalog).
# bcrypt: the first password hashed or checked (authsvc.core.security).
COMMANDS_MAIL_PASSWORDS = ("email.policy", "email.headerregistry", "smtplib", "babel.messages", "bcrypt")
DEFERRED = (
    *JOSE,
    *COMMANDS_MAIL_PASSWORDS,
    "authlib.oidc.core",  # ID tokens: authsvc.oauth.id_tokens
    "authlib.oauth2.rfc7523",  # private_key_jwt: authsvc.oauth.private_key_jwt
    "authlib.oauth2.rfc7591",  # dynamic registration: authsvc.oauth.registration
    "authsvc.oauth.id_tokens",
    "authsvc.oauth.private_key_jwt",
    "authsvc.oauth.registration",
)

# A command group's module: imported when that group runs (authsvc/cli/__init__.py), not by building the app.
CLI_GROUPS = tuple(f"authsvc.cli.{module}" for module, _ in COMMANDS.values())

PROBE = """
import json, sys
from authsvc import create_app
app = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe"})
built = sorted(m for m in sys.modules if m.split(".")[0] in %r or m in %r)
# Then one command group runs (its help: no database needed): its module, and no other group's, loads.
assert app.test_cli_runner().invoke(args=["keys", "--help"]).exit_code == 0
print(json.dumps({"built": built, "keys --help": sorted(m for m in sys.modules if m in %r)}))
"""

# Requests in the order a worker might first see them; after each, the deferred modules loaded.
FIRST_USES = """
import json, sys
from authsvc import create_app
from authsvc.core.database import db
from authsvc.core.models import Domain

app = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe"})
with app.app_context():
    db.create_all()
    db.session.add(Domain(name="localhost", host="localhost", scopes="public"))
    db.session.commit()
client = app.test_client()
ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
BASIC = {"Authorization": "Basic bm9wZTpub3Bl"}
TOKEN = "/auth/oauth/token"
uses = [
    ("inspect", "GET", "/api/engine/v2/api_keys/inspect", {"headers": {"Authorization": "Bearer abc"}}),
    ("refresh", "POST", TOKEN, {"data": {"grant_type": "refresh_token", "refresh_token": "x"}, "headers": BASIC}),
    ("client credentials", "POST", TOKEN, {"data": {"grant_type": "client_credentials"}, "headers": BASIC}),
    ("DPoP proof", "POST", TOKEN, {"data": {"grant_type": "client_credentials"}, "headers": {**BASIC, "DPoP": "a.b"}}),
    (
        "client assertion",
        "POST",
        TOKEN,
        {"data": {"grant_type": "client_credentials", "client_assertion_type": ASSERTION, "client_assertion": "a.b"}},
    ),
    ("code grant", "POST", TOKEN, {"data": {"grant_type": "authorization_code", "code": "x"}, "headers": BASIC}),
    ("authorisation request", "GET", "/auth/oauth/authorize?response_type=code&client_id=nope&scope=public", {}),
    ("openid authorisation request", "GET", "/auth/oauth/authorize?response_type=code&client_id=nope&scope=openid", {}),
    ("registration", "POST", "/auth/oauth/register", {"json": {"redirect_uris": ["https://app.example/cb"]}}),
]
loaded = {"create_app": sorted(m for m in %r if m in sys.modules)}
for name, method, path, kwargs in uses:
    response = client.open(path, method=method, base_url="https://localhost", **kwargs)
    assert response.status_code in (400, 401), (name, response.status_code, response.get_data(as_text=True))
    loaded[name] = sorted(m for m in %r if m in sys.modules)
print(json.dumps(loaded))
"""


def _probe(tmp_path: Path, code: str, web_worker: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["AUTHSVC_INSTANCE_DIR"] = str(tmp_path)
    if web_worker:
        env["AUTHSVC_WEB_WORKER"] = "1"  # as config/gunicorn.py sets it
    else:
        env.pop("AUTHSVC_WEB_WORKER", None)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
@pytest.mark.parametrize("web_worker", [True, False], ids=["gunicorn worker", "flask command"])
def test_building_the_app_imports_no_saml_ldap_webauthn_qr_codes_pydantic_migrations_jose_mail_or_command_groups(
    tmp_path, web_worker
):
    catalogs.compile_stale()  # as every start does: a stale catalog would load Babel's compiler in the probe
    probed = json.loads(_probe(tmp_path, PROBE % (LAZY, (*DEFERRED, *CLI_GROUPS), CLI_GROUPS), web_worker))
    assert probed["built"] == []
    assert probed["keys --help"] == ["authsvc.cli.keys"]


HELP = """
import json, sys
from authsvc import create_app
app = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe"})
groups = %r
built = [m for m in groups if m in sys.modules]
listed = app.test_cli_runner().invoke(args=["--help"])
print(json.dumps({"built": built, "help": listed.output}))
"""


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_the_commands_are_all_listed_by_help(tmp_path):
    # ``flask --app app --help`` lists the app's commands (Flask asks its group): they are all there.
    probed = json.loads(_probe(tmp_path, HELP % (CLI_GROUPS,), web_worker=False))
    assert probed["built"] == []
    for command in ("domains", "apps", "users", "api-keys", "tokens", "keys", "sso", "db"):
        assert f"  {command} " in probed["help"], command


# A domain, a service account with an API key and a client credentials client, made by the commands and
# the token endpoint (which load and configure what they need), in one interpreter.
SEED_INSPECT = """
import json
from authsvc import create_app
from authsvc.core.database import db
app = create_app({"SQLALCHEMY_DATABASE_URI": %r, "SECRET_KEY": "probe"})
with app.app_context():
    db.create_all()
cli = app.test_cli_runner()
def run(*args):
    done = cli.invoke(args=list(args))
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])
run("domains", "create", "--name", "Probe", "--host", "localhost")
run("users", "create", "--domain", "localhost", "--email", "service@probe.test", "--password", "probe-pass-1234",
    "--name", "Service", "--service-account")
key = run("api-keys", "create", "--domain", "localhost", "--user", "service@probe.test", "--name", "probe")["key"]
client = run("apps", "create", "--domain", "localhost", "--name", "Machine", "--confidential",
             "--service-account", "service@probe.test")
answer = app.test_client().post("/auth/oauth/token", base_url="https://localhost", data={
    "grant_type": "client_credentials", "client_id": client["client_id"], "client_secret": client["client_secret"]})
print(json.dumps({"key": key, "token": answer.get_json()["access_token"]}))
"""

# A worker that serves only inspect, a bearer token and an API key (its last use noted, as due), in another.
INSPECT_ONLY = """
import json, sys
from authsvc import create_app
app = create_app({"SQLALCHEMY_DATABASE_URI": %r, "SECRET_KEY": "probe"})
seeded = %r
client = app.test_client()
before = set(sys.modules)
statuses = []
for headers in ({"Authorization": "Bearer " + seeded["token"]}, {"X-API-Key": seeded["key"]}) * 2:
    answer = client.get("/api/engine/v2/api_keys/inspect", base_url="https://localhost", headers=headers)
    statuses.append(answer.status_code)
print(json.dumps({
    "statuses": statuses,
    "deferred": sorted(m for m in %r if m in sys.modules),
    "loaded_by_inspect": sorted(m for m in set(sys.modules) - before if m.startswith("authsvc")),
}))
"""


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_a_worker_that_serves_only_inspect_loads_no_command_mail_or_bcrypt(tmp_path):
    # A valid bearer token and a valid API key, as the platform's API requests present them: inspect
    # compares digests, sends nothing and runs no command.
    database = f"sqlite:///{tmp_path / 'inspect.sqlite'}"
    seeded = json.loads(_probe(tmp_path, SEED_INSPECT % database))
    probed = json.loads(_probe(tmp_path, INSPECT_ONLY % (database, seeded, DEFERRED)))
    assert probed["statuses"] == [200, 200, 200, 200]
    assert probed["deferred"] == []
    assert probed["loaded_by_inspect"] == []


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_jose_loads_at_the_first_request_that_signs_or_verifies_a_jws(tmp_path):
    loaded = json.loads(_probe(tmp_path, FIRST_USES % (DEFERRED, DEFERRED)))
    # Bearer tokens, a refresh without openid, a client secret: none of it.
    assert loaded["create_app"] == loaded["inspect"] == loaded["refresh"] == loaded["client credentials"] == []
    assert {"joserfc.jws", "cryptography.hazmat.bindings._rust"} <= set(loaded["DPoP proof"])
    assert "authsvc.oauth.private_key_jwt" not in loaded["DPoP proof"]
    assert "authsvc.oauth.private_key_jwt" in loaded["client assertion"]
    assert "authsvc.oauth.id_tokens" not in loaded["client assertion"]
    # The code flow without openid (an exchange, an authorisation request) loads no ID tokens; with it, it does.
    assert "authsvc.oauth.id_tokens" not in loaded["code grant"]
    assert "authsvc.oauth.id_tokens" not in loaded["authorisation request"]
    assert {"authsvc.oauth.id_tokens", "authlib.oidc.core"} <= set(loaded["openid authorisation request"])
    assert "authsvc.oauth.registration" not in loaded["openid authorisation request"]
    assert "authsvc.oauth.registration" in loaded["registration"]


ENDED_SESSIONS = """
import json, sys
from authsvc import create_app
from authsvc.auth import sessions

app = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe"})
receivers = sorted(f"{r.__module__}.{r.__name__}" for r in sessions.sessions_ended.receivers_for(app))
print(json.dumps({"id_tokens": "authsvc.oauth.id_tokens" in sys.modules, "receivers": receivers}))
"""


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_a_worker_that_never_issued_an_id_token_still_tells_applications_of_ended_sessions(tmp_path):
    # ID tokens load at a worker's first use of openid; the worker that ends a session may never have had one,
    # and its applications must be told all the same (back-channel logout).
    probed = json.loads(_probe(tmp_path, ENDED_SESSIONS))
    assert probed["id_tokens"] is False
    assert probed["receivers"] == ["authsvc.oauth.backchannel._sessions_ended"]


def test_the_admin_schemas_still_answer_once_loaded(client, keys):
    """The first admin write loads pydantic and reads its body as before: every problem at once."""
    response = call(client, "post", "/users", keys.admin_key, json={"email": 5, "admin": "yes"})
    assert response.status_code == 422, response.get_json()
    assert set(response.get_json()["fields"]) >= {"email", "admin"}


LOCALE_DATA = """
import json
from babel import localedata
from authsvc import create_app
from authsvc.core.database import db
from authsvc.core.models import Domain

app = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe"})
with app.app_context():
    db.create_all()
    db.session.add(Domain(name="localhost", host="localhost", scopes="public"))
    db.session.commit()
client = app.test_client()
read = {"create_app": sorted(localedata._cache)}
bearer = {"Authorization": "Bearer x"}
inspect = client.get("/api/engine/v2/api_keys/inspect", base_url="https://localhost", headers=bearer)
metadata = client.get("/.well-known/openid-configuration", base_url="https://localhost")
read["inspect, metadata"] = sorted(localedata._cache)
read["ui_locales_supported"] = metadata.get_json()["ui_locales_supported"]
page = client.get("/auth/login", base_url="https://localhost", headers={"Accept-Language": "de"})
read["sign-in page"] = sorted(localedata._cache)
read["page"] = page.status_code, 'lang="de"' in page.get_data(as_text=True)
print(json.dumps(read))
"""


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_babels_locale_data_is_read_by_neither_an_api_worker_nor_a_page(tmp_path):
    # Babel keeps each language's locale data it reads for the worker's life (about 11 MB for the
    # shipped seven): the language switcher's names and directions come from authsvc.web.i18n's table.
    read = json.loads(_probe(tmp_path, LOCALE_DATA))
    assert read["create_app"] == read["inspect, metadata"] == []
    assert {"de", "en", "fr"} <= set(read["ui_locales_supported"])
    assert read["page"] == [200, True]
    assert read["sign-in page"] == []
