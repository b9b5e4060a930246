"""``email_verified`` tells the truth: stored per user, emitted in ID tokens and UserInfo, shown to admins.

True for a user an admin made (command line, admin API, console) or whose provider vouched for the
address (an OpenID provider's ``email_verified``, a provider with trust_email); false for a user a
SAML, plain OAuth 2.0, LDAP or unverified OpenID Connect sign-in made. Real providers on loopback:
tests/fakes/providers.py, the pysaml2 IdP, slapd.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from flask_migrate import upgrade
from sqlalchemy import select
from sqlalchemy import text as sql

from authsvc import create_app
from authsvc.cli import migrations
from authsvc.core.database import db
from authsvc.core.models import ExternalIdentity, LdapAccount, LdapDirectory, SsoProvider, User
from tests.helpers import OIDC_SCOPES, PASSWORD, base_config, get_code, headers, signin
from tests.helpers import sso as sso_helpers
from tests.helpers.console import CONSOLE, text
from tests.helpers.id_tokens import exchange, verify
from tests.helpers.ldap import signin as directory_signin
from tests.helpers.saml import sign_in as saml_sign_in
from tests.helpers.sso import api, create_provider, sign_in

# Here ``oidc`` is the loopback OpenID provider, not the root conftest's OIDC domain.
oidc = sso_helpers.oidc

pytestmark = pytest.mark.slow


@pytest.fixture
def setup(world):
    """The domain of the providers' fixtures, with OpenID Connect's scopes and an application that asks them."""

    class Setup:
        domain = world.domain(scopes=OIDC_SCOPES)
        app, secret = world.application(domain, confidential=True, scopes=OIDC_SCOPES)
        person = world.user(domain, "person@example.com", name="Person")

    return Setup


def claims(client, setup) -> tuple[dict, dict]:
    """The signed-in user's ID token claims and UserInfo answer, for ``openid email``."""
    code = get_code(client, setup.app.client_id, scope="openid email")
    body = exchange(client, setup.app, setup.secret, code).get_json()
    _, id_claims = verify(client, body["id_token"])
    userinfo = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {body['access_token']}"))
    assert userinfo.status_code == 200, userinfo.get_json()
    return id_claims, userinfo.get_json()


def stored(world, email: str) -> bool:
    [verified] = world.query(select(User.email_verified).where(User.email == email))
    return verified


def assert_verified(client, setup, email: str, expected: bool) -> None:
    id_claims, userinfo = claims(client, setup)
    assert (id_claims["email"], id_claims["email_verified"]) == (email, expected)
    assert (userinfo["email"], userinfo["email_verified"]) == (email, expected)


def test_a_user_made_by_a_saml_sign_in_is_not_verified(app, client, world, setup, idp, saml_provider):
    _, finished = saml_sign_in(app, client, idp, saml_provider["id"])
    assert finished is not None and finished.status_code in (302, 303), finished
    assert_verified(client, setup, "ada@example.com", False)
    assert stored(world, "ada@example.com") is False


def test_a_user_made_by_an_ldap_sign_in_is_not_verified(client, world, setup, corp):
    assert directory_signin(client, "ada@example.com", "ada-password").status_code == 202
    assert_verified(client, setup, "ada@example.com", False)
    assert stored(world, "ada@example.com") is False


def test_a_user_made_by_an_oauth2_sign_in_is_not_verified(client, world, setup, oauth2_id):
    _, callback = sign_in(client, oauth2_id)
    assert callback.status_code in (302, 303), callback.get_data(as_text=True)
    assert_verified(client, setup, "grace@example.com", False)
    assert stored(world, "grace@example.com") is False


def test_a_user_made_by_an_unverified_oidc_sign_in_is_not_verified_until_the_provider_says_so(
    runner, client, world, setup, oidc
):
    provider_id = create_provider(runner, "--issuer", oidc.url)["id"]
    oidc.sign_in_as(sub="ext-1", email="ada@example.com", email_verified=False, name="Ada")
    _, callback = sign_in(client, provider_id)
    assert callback.status_code in (302, 303), callback.get_data(as_text=True)
    assert_verified(client, setup, "ada@example.com", False)
    assert stored(world, "ada@example.com") is False
    # The provider vouches for the same address at a later sign-in: from then on it is verified.
    oidc.sign_in_as(sub="ext-1", email="ada@example.com", email_verified=True, name="Ada")
    sign_in(client, provider_id)
    assert_verified(client, setup, "ada@example.com", True)


def test_a_user_made_by_a_verified_oidc_sign_in_or_a_trusted_provider_is_verified(runner, client, world, setup, oidc):
    provider_id = create_provider(runner, "--issuer", oidc.url)["id"]
    oidc.sign_in_as(sub="ext-1", email="ada@example.com", email_verified=True, name="Ada")
    sign_in(client, provider_id)
    assert_verified(client, setup, "ada@example.com", True)
    trusted = create_provider(runner, "--issuer", oidc.url, "--name", "Trusted", "--trust-email")["id"]
    oidc.sign_in_as(sub="ext-2", email="bob@example.com", name="Bob")
    sign_in(client, trusted)
    assert stored(world, "bob@example.com") is True
    assert_verified(client, setup, "bob@example.com", True)


def test_admin_made_users_are_verified_and_the_admin_api_shows_and_changes_it(runner, client, setup, admin_key):
    result = runner.invoke(
        args=["users", "create", "--domain", setup.domain.host, "--email", "cli@example.com", "--password", PASSWORD]
    )
    assert result.exit_code == 0, result.output
    signin(client, "cli@example.com")
    assert_verified(client, setup, "cli@example.com", True)

    key = admin_key
    created = api(client, "post", "/users", key, {"email": "api@example.com", "password": PASSWORD})
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["email_verified"] is True
    changed = api(client, "patch", f"/users/{created.get_json()['id']}", key, {"email_verified": False})
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["email_verified"] is False
    signin(client, "api@example.com")
    assert_verified(client, setup, "api@example.com", False)
    # A new address is unverified until its owner follows the link sent to it
    # (tests/api/account/test_address_verification.py),
    # unless the admin vouches for it in the same change.
    renamed = api(client, "patch", f"/users/{created.get_json()['id']}", key, {"email": "api2@example.com"})
    assert renamed.get_json()["email_verified"] is False
    both = {"email": "api3@example.com", "email_verified": True}
    vouched = api(client, "patch", f"/users/{created.get_json()['id']}", key, both)
    assert vouched.get_json()["email_verified"] is True
    listed = {item["email"]: item["email_verified"] for item in api(client, "get", "/users", key).get_json()["items"]}
    assert listed["api3@example.com"] is True and listed["person@example.com"] is True


def test_the_console_shows_whether_the_address_is_verified(runner, client, world, setup, oauth2_id):
    sign_in(client, oauth2_id)
    [grace] = world.query(select(User).where(User.email == "grace@example.com"))
    world.user(setup.domain, "admin@example.com", admin=True)
    signin(client, "admin@example.com")
    page = text(client.get(f"{CONSOLE}/domains/{setup.domain.id}/users/{grace.id}", headers=headers()))
    assert "No (nobody vouched for the address)" in page
    page = text(client.get(f"{CONSOLE}/domains/{setup.domain.id}/users/{setup.person.id}", headers=headers()))
    assert "E-mail verified</dt><dd>Yes" in page


def test_the_migration_keeps_admin_made_users_verified_and_not_those_a_sign_in_made(tmp_path):
    app = create_app({**base_config(), "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'before.sqlite3'}"})
    migrations.install(app)
    with app.app_context():
        upgrade(revision="b8d2f4a6c1e3")  # the schema before email_verified
        # Rows written in SQL, not through the models: they describe the schema of today's head.
        db.session.execute(
            sql(
                "INSERT INTO domain (name, host, scopes, mfa_require, created_at)"
                " VALUES ('d', 'd.example', 'public', 'off', 0)"
            )
        )
        domain_id = db.session.execute(sql("SELECT id FROM domain WHERE host = 'd.example'")).scalar_one()
        domain = SimpleNamespace(id=domain_id)
        for email in ("admin-made", "sso-new", "trusted-new", "sso-by-email", "ldap-new", "ldap-by-email"):
            db.session.execute(
                sql(
                    'INSERT INTO "user" (domain_id, email, name, service_account, admin, support, groups, disabled,'
                    " system_admin, sessions_valid_after, created_at)"
                    " VALUES (:domain, :email, '', false, false, false, '[]', false, false, 0, 0)"
                ),
                {"domain": domain.id, "email": f"{email}@example.com"},
            )
        ids = dict(db.session.execute(sql('SELECT email, id FROM "user"')).all())
        common = {"domain_id": domain.id, "kind": "oidc", "client_id": "c", "client_secret_encrypted": "x"}
        db.session.add_all(
            [
                SsoProvider(id="plain", name="Plain", scopes="openid", **common),
                SsoProvider(id="trusted", name="Trusted", scopes="openid", trust_email=True, **common),
                LdapDirectory(
                    id="corp",
                    domain_id=domain.id,
                    name="Corp",
                    url="ldap://x",
                    bind_dn="cn=x",
                    bind_password_encrypted="x",
                    base_dn="dc=x",
                ),
            ]
        )
        db.session.flush()
        for email, provider, via in (
            ("sso-new", "plain", "new_user"),
            ("trusted-new", "trusted", "new_user"),
            ("sso-by-email", "plain", "email"),
        ):
            identity = ExternalIdentity(
                provider_id=provider, user_id=ids[f"{email}@example.com"], subject=email, via=via
            )
            db.session.add(identity)
        for email, via in (("ldap-new", "new_user"), ("ldap-by-email", "email")):
            account = LdapAccount(directory_id="corp", user_id=ids[f"{email}@example.com"], subject=email, dn=email)
            account.via = via
            db.session.add(account)
        db.session.commit()
        upgrade(revision="f3a9c6e1d2b7")
        verified = dict(db.session.execute(sql('SELECT email, email_verified FROM "user"')).all())
        db.engine.dispose()
    assert {email.split("@")[0]: bool(value) for email, value in verified.items()} == {
        "admin-made": True,
        "sso-new": False,
        "trusted-new": True,
        "sso-by-email": True,
        "ldap-new": False,
        "ldap-by-email": True,
    }
