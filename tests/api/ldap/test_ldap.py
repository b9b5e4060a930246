"""LDAP / Active Directory sign-in against a real OpenLDAP slapd on loopback.

A good password provisions the user with the directory's groups; wrong, empty and injected input signs
nobody in; a directory that is down, slow or untrusted is the directory's trouble (a 503), not a wrong
password; and which local accounts a directory sign-in may reach. Fixtures are in tests/helpers/ldap.py;
deprovisioning is in tests/api/ldap/test_ldap_deprovisioning.py, configuring directories in
tests/api/ldap/test_ldap_admin.py.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import LdapAccount, LdapDirectory, User
from tests.fakes.ldap_directory import SERVICE_PASSWORD, person_dn
from tests.helpers import PASSWORD, headers
from tests.helpers.ldap import INSPECT, access_token, create_directory, directory_browser, events, signin
from tests.helpers.pages import csrf_token

pytestmark = pytest.mark.slow

# Signing in


@pytest.mark.parametrize("transport", ["starttls", "ldaps"])
def test_a_good_password_provisions_the_user_with_their_groups(client, runner, world, directory, setup, transport):
    url = directory.ldaps_url if transport == "ldaps" else directory.starttls_url
    directory_id = create_directory(runner, directory, url=url)
    response = signin(client, "Ada@Example.com", "ada-password")
    assert response.status_code == 202, response.get_json()
    assert response.get_json()["email"] == "ada@example.com"
    [user] = world.query(select(User).where(User.email == "ada@example.com"))
    assert user.password_hash is None and user.name == "Ada Lovelace"
    assert sorted(user.groups) == ["ops", "staff"]
    [account] = world.query(select(LdapAccount))
    assert (account.user_id, account.directory_id, account.via) == (user.id, directory_id, "new_user")
    assert account.dn == person_dn("ada")
    [succeeded] = events(world, "signin.succeeded")
    assert succeeded.details == {"via": "signin", "directory": directory_id, "linked": "new_user"}
    # A second sign-in uses the link, and provisions nobody new.
    assert signin(client, "ada@example.com", "ada-password").status_code == 202
    assert len(world.query(select(User).where(User.email == "ada@example.com"))) == 1


def test_the_directorys_groups_are_in_inspect(client, world, setup, corp):
    assert signin(client, "ada@example.com", "ada-password").status_code == 202
    token = access_token(client, setup.public_app.client_id)
    claims = client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).get_json()
    assert sorted(claims["u"]["r"]) == ["ops", "staff"]
    assert claims["u"]["e"] == "ada@example.com"


def test_the_sign_in_page_checks_the_directory_too(client, world, setup, corp):
    form = {
        "email": "ada@example.com",
        "password": "ada-password",
        "csrf_token": csrf_token(client.get("/auth/login", headers=headers())),
    }
    response = client.post("/auth/login", data=form, headers=headers())
    assert response.status_code == 303
    assert world.query(select(User.email).where(User.email == "ada@example.com")) == ["ada@example.com"]


def test_a_wrong_password_is_refused_and_provisions_nobody(client, world, directory, setup, corp):
    response = signin(client, "ada@example.com", "not-adas-password")
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_credentials"
    assert world.query(select(User).where(User.email == "ada@example.com")) == []
    [failed] = events(world, "signin.failed")
    assert failed.details == {"via": "signin", "reason": "invalid_credentials", "directory": corp}


def test_an_empty_password_is_refused_before_any_bind(client, world, directory, setup, corp):
    before = directory.binds_as(person_dn("ada"))
    assert signin(client, "ada@example.com", "").status_code == 400
    response = client.post("/auth/signin", data={"email": "ada@example.com", "password": ""}, headers=headers())
    assert response.status_code == 400
    assert directory.binds_as(person_dn("ada")) == before
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


@pytest.mark.parametrize("email", ["*)(uid=*", "a*a@example.com", "*", "ada@example.com)(|(mail=*", "\\2a"])
def test_filter_injection_finds_nobody(client, world, directory, setup, corp, email):
    # Unescaped, "a*a@example.com" would find Ada's entry alone and her password would sign in.
    response = signin(client, email, "ada-password")
    assert response.status_code == 401, response.get_json()
    assert sorted(world.query(select(User.email))) == ["person@example.com", "service@example.com"]
    assert world.query(select(LdapAccount)) == []


def test_an_email_that_finds_two_entries_signs_nobody_in(client, world, setup, corp):
    assert signin(client, "twin@example.com", "twin-password").status_code == 401
    assert world.query(select(LdapAccount)) == []


def test_a_disabled_directory_account_is_refused(client, world, setup, corp):
    response = signin(client, "carol@example.com", "carol-password")
    assert response.status_code == 401
    assert world.query(select(User).where(User.email == "carol@example.com")) == []
    [failed] = events(world, "signin.failed")
    assert failed.details["reason"] == "directory_account_disabled"


def test_repeated_failures_lock_the_account_as_local_passwords_do(make_app, setup, directory):
    _, client = directory_browser(make_app, directory, AUTHSVC_LOCKOUT_THRESHOLD=3)
    for _ in range(3):
        assert signin(client, "ada@example.com", "wrong").status_code == 401
    locked = signin(client, "ada@example.com", "ada-password")
    assert locked.status_code == 429
    assert locked.get_json()["error"] == "too_many_attempts" and int(locked.headers["Retry-After"]) > 0


@pytest.mark.parametrize("password", ["x\u0001", "ada-password\u0000", "\u00ad"])
def test_a_password_that_cannot_be_sent_to_the_directory_is_a_wrong_password_for_anyone(
    make_app, world, setup, directory, password
):
    # SASLprep (RFC 4013) refuses these before a bind leaves: an outage only for addresses in the
    # directory would tell who is in it.
    _, client = directory_browser(make_app, directory, AUTHSVC_LOCKOUT_THRESHOLD=2)
    known = signin(client, "ada@example.com", password)
    unknown = signin(client, "nobody@example.com", password)
    assert known.status_code == unknown.status_code == 401
    assert known.get_json() == unknown.get_json()
    assert known.get_json()["error"] == "invalid_credentials"
    assert events(world, "ldap.unavailable") == []
    # Counted as a failure, as any wrong password is: the second locks the account.
    assert signin(client, "ada@example.com", password).status_code == 401
    assert signin(client, "ada@example.com", "ada-password").status_code == 429


# The directory's trouble


def test_a_directory_that_is_down_is_a_503_not_a_wrong_password(client, runner, world, directory, setup):
    # Bound, not listening: refused, and no other process can take the port meanwhile.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        create_directory(runner, directory, url=f"ldap://127.0.0.1:{held.getsockname()[1]}")
        response = signin(client, "ada@example.com", "ada-password")
    assert response.status_code == 503
    assert response.get_json()["error"] == "directory_unavailable"
    assert int(response.headers["Retry-After"]) > 0
    assert events(world, "ldap.unavailable")
    # Not a failed password: no lockout is counted, no failure recorded.
    assert events(world, "signin.failed") == []


def test_a_slow_directory_times_out_as_a_503(make_app, setup, directory):
    _, client = directory_browser(make_app, directory, AUTHSVC_LDAP_TIMEOUT=1)
    directory.slapd.pause()
    try:
        started = time.monotonic()
        response = signin(client, "ada@example.com", "ada-password")
        elapsed = time.monotonic() - started
    finally:
        directory.slapd.resume()
    assert response.status_code == 503
    assert elapsed < 5


def test_a_sign_in_asking_several_slow_directories_ends_at_one_deadline(make_app, setup, directory):
    # Each directory alone keeps within AUTHSVC_LDAP_TIMEOUT; the sign-in as a whole within the deadline.
    app, client = directory_browser(make_app, directory, AUTHSVC_LDAP_TIMEOUT=1, AUTHSVC_OUTBOUND_DEADLINE=1.5)
    for name in ("Second directory", "Third directory"):
        create_directory(app.test_cli_runner(), directory, "--name", name)
    directory.slapd.pause()
    try:
        started = time.monotonic()
        response = signin(client, "ada@example.com", "ada-password")
        elapsed = time.monotonic() - started
    finally:
        directory.slapd.resume()
    assert response.status_code == 503
    assert response.get_json()["error"] == "directory_unavailable"
    assert elapsed < 2.5


def test_an_untrusted_certificate_is_refused(client, runner, world, directory, setup):
    create_directory(runner, directory, ca=False)
    response = signin(client, "ada@example.com", "ada-password")
    assert response.status_code == 503
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_a_wrong_bind_password_is_the_directorys_trouble_not_the_users(client, runner, world, directory, setup, corp):
    world.update(LdapDirectory, corp, bind_password_encrypted=_encrypted(runner.app, "wrong"))
    response = signin(client, "ada@example.com", "ada-password")
    assert response.status_code == 503
    tested = json.loads(runner.invoke(args=["ldap", "test", corp]).stdout)
    assert tested["ok"] is False and "wrong" not in tested["error"] and SERVICE_PASSWORD not in tested["error"]


def _encrypted(app, value):
    with app.app_context():
        return security.encrypt(value)


# Accounts and linking


def test_an_account_with_a_local_password_is_not_checked_against_the_directory(client, world, setup, corp, directory):
    world.user(setup.domain, "bob@example.com")
    before = directory.binds_as(person_dn("bob"))
    assert signin(client, "bob@example.com", "bob-password").status_code == 401
    assert signin(client, "bob@example.com", PASSWORD).status_code == 202
    assert directory.binds_as(person_dn("bob")) == before
    assert world.query(select(LdapAccount)) == []


def test_a_privileged_account_is_never_linked_by_a_directory_sign_in(client, world, setup, corp):
    boss = world.save(User(domain_id=setup.domain.id, email="boss@example.com", name="Boss", admin=True))
    response = signin(client, "boss@example.com", "boss-password")
    assert response.status_code == 401
    assert world.query(select(LdapAccount)) == []
    [refused] = events(world, "ldap.link_refused")
    assert refused.target == f"user:{boss.id}" and refused.details["reason"] == "privileged_account"


def test_an_account_without_password_is_linked_by_email(client, world, setup, corp):
    plain = world.save(User(domain_id=setup.domain.id, email="ada@example.com", name="Ada"))
    assert signin(client, "ada@example.com", "ada-password").status_code == 202
    [account] = world.query(select(LdapAccount))
    assert (account.user_id, account.via) == (plain.id, "email")


def test_a_user_promoted_after_the_first_sign_in_must_be_linked_explicitly(client, world, setup, corp):
    assert signin(client, "ada@example.com", "ada-password").status_code == 202
    [ada] = world.query(select(User).where(User.email == "ada@example.com"))
    world.update(User, ada.id, support=True)
    assert signin(client, "ada@example.com", "ada-password").status_code == 401
    assert events(world, "ldap.link_refused")[0].details["reason"] == "automatic_link"


def test_a_first_sign_in_makes_an_account_only_for_an_address_by_the_e_mail_rule(client, world, directory, setup, corp):
    """One e-mail rule for every surface (docs/security.md, "E-mail addresses"): a typo in a directory's
    mail attribute makes no account, and an Active Directory UPN (corp.local) does."""
    directory.add_person("dots", "dot..dot@example.com", "dots-password", "Dot Dot")
    directory.add_person("upn", "upn@corp.local", "upn-password", "Upn Local")
    try:
        assert signin(client, "dot..dot@example.com", "dots-password").status_code == 401
        assert world.query(select(User).where(User.email == "dot..dot@example.com")) == []
        assert signin(client, "UPN@corp.local", "upn-password").status_code == 202
        assert len(world.query(select(User).where(User.email == "upn@corp.local"))) == 1
    finally:
        directory.delete("dots")
        directory.delete("upn")
