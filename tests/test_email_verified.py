"""``email_verified`` tells the truth: stored per user, emitted in ID tokens and UserInfo, shown to admins.

True for a user an admin made (command line, admin API, console) or whose provider vouched for the
address (an OpenID provider's ``email_verified``, a provider with trust_email); false for a user a
SAML, plain OAuth 2.0, LDAP or unverified OpenID Connect sign-in made. Real providers on loopback:
tests/providers.py, the pysaml2 IdP, slapd.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import User
from tests.conftest import OIDC_SCOPES, PASSWORD, get_code, headers, signin
from tests.console_support import CONSOLE, text
from tests.ldap_support import corp as corp  # noqa: F401 - a fixture
from tests.ldap_support import directory as directory  # noqa: F401 - a fixture
from tests.ldap_support import signin as directory_signin
from tests.saml_support import idp as idp  # noqa: F401 - a fixture
from tests.saml_support import saml_provider as saml_provider  # noqa: F401 - a fixture
from tests.saml_support import sign_in as saml_sign_in
from tests.sso_support import admin_key as admin_key  # noqa: F401 - a fixture
from tests.sso_support import api, create_provider, sign_in
from tests.sso_support import oauth2 as oauth2  # noqa: F401 - a fixture
from tests.sso_support import oauth2_id as oauth2_id  # noqa: F401 - a fixture
from tests.sso_support import oidc as oidc  # noqa: F401 - a fixture
from tests.test_id_tokens import exchange, verify

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
    # A new address typed by an admin is one they vouch for.
    renamed = api(client, "patch", f"/users/{created.get_json()['id']}", key, {"email": "api2@example.com"})
    assert renamed.get_json()["email_verified"] is True
    listed = {item["email"]: item["email_verified"] for item in api(client, "get", "/users", key).get_json()["items"]}
    assert listed["api2@example.com"] is True and listed["person@example.com"] is True


def test_the_console_shows_whether_the_address_is_verified(runner, client, world, setup, oauth2_id):
    sign_in(client, oauth2_id)
    [grace] = world.query(select(User).where(User.email == "grace@example.com"))
    world.user(setup.domain, "admin@example.com", admin=True)
    signin(client, "admin@example.com")
    page = text(client.get(f"{CONSOLE}/domains/{setup.domain.id}/users/{grace.id}", headers=headers()))
    assert "No (nobody vouched for the address)" in page
    page = text(client.get(f"{CONSOLE}/domains/{setup.domain.id}/users/{setup.person.id}", headers=headers()))
    assert "E-mail verified</dt><dd>Yes" in page
