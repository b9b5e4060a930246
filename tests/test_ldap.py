"""LDAP / Active Directory sign-in (issue 17) against a real OpenLDAP slapd on loopback.

The directory (tests/ldap_directory.py) speaks StartTLS and LDAPS with a CA
the test made; the service verifies its certificate with that CA.
"""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.database import db
from authsvc.core.models import AuditRecord, LdapAccount, LdapDirectory, User
from devtools.services import free_port, slapd_binary
from tests.conftest import HOST, PASSWORD, REDIRECT_URI, HttpsClient, get_code, headers
from tests.conftest import signin as conftest_signin
from tests.ldap_directory import PEOPLE, SERVICE_DN, SERVICE_PASSWORD, Directory, person_dn
from tests.test_pages import csrf_token

pytestmark = pytest.mark.slow
INSPECT = "/api/engine/v2/api_keys/inspect"


@pytest.fixture(scope="session")
def directory(tmp_path_factory):
    if slapd_binary() is None:
        pytest.skip("slapd is not installed (Debian: apt-get install slapd; ./scripts/test installs it as root)")
    running = Directory(tmp_path_factory.mktemp("slapd"))
    yield running
    running.stop()


def create_directory(runner, directory, *extra: str, url: str | None = None, ca: bool = True) -> str:
    """``ldap create`` as an operator runs it; StartTLS to the test slapd unless ``url`` says otherwise."""
    url = url or directory.starttls_url
    args = ["ldap", "create", "--domain", HOST, "--name", "Corp directory", "--url", url]
    if url.startswith("ldap://"):
        args.append("--starttls")
    args += ["--bind-dn", SERVICE_DN, "--bind-password", SERVICE_PASSWORD, "--base", PEOPLE]
    if ca:
        args += ["--ca-file", str(directory.ca.ca_file)]
    result = runner.invoke(args=[*args, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["id"]


@pytest.fixture
def corp(runner, setup, directory):
    return create_directory(runner, directory)


def signin(client, email, password, host=HOST):
    return client.post("/auth/signin", json={"email": email, "password": password}, headers=headers(host))


def events(world, name):
    return world.query(select(AuditRecord).where(AuditRecord.event == name).order_by(AuditRecord.id))


# ------------------------------------------------------------------ configuration


def test_the_cli_stores_the_bind_password_encrypted_and_never_shows_it(app, runner, world, directory, corp):
    [stored] = world.query(select(LdapDirectory))
    assert SERVICE_PASSWORD not in stored.bind_password_encrypted
    listed = json.loads(runner.invoke(args=["ldap", "list", "--domain", HOST]).stdout)["ldap"]
    assert [d["id"] for d in listed] == [corp]
    assert "bind_password" not in json.dumps(listed) and SERVICE_PASSWORD not in json.dumps(listed)
    assert listed[0]["user_filter"] == "(mail={email})" and listed[0]["group_attribute"] == "memberOf"
    assert json.loads(runner.invoke(args=["ldap", "test", corp]).stdout) == {"id": corp, "ok": True}
    [created] = events(world, "ldap.created")
    assert created.actor == "cli" and SERVICE_PASSWORD not in json.dumps(created.as_json())


def test_the_cli_refuses_plain_ldap_over_the_network(runner, setup, directory):
    result = runner.invoke(
        args=["ldap", "create", "--domain", HOST, "--name", "x", "--url", "ldap://ldap.example.org:389"]
        + ["--bind-dn", SERVICE_DN, "--bind-password", "p", "--base", PEOPLE]
    )
    assert result.exit_code != 0 and "StartTLS" in result.output


# ------------------------------------------------------------------ signing in


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


def tokens(client, client_id):
    """The token answer for the signed-in user, by the authorisation code flow."""
    body = {"grant_type": "authorization_code", "code": get_code(client, client_id), "redirect_uri": REDIRECT_URI}
    answer = client.post("/auth/oauth/token", data={**body, "client_id": client_id}, headers=headers())
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def access_token(client, client_id):
    return tokens(client, client_id)["access_token"]


def https_client(app):
    app.test_client_class = HttpsClient
    return app.test_client()


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
    app = make_app(AUTHSVC_LOCKOUT_THRESHOLD=3)
    create_directory(app.test_cli_runner(), directory)
    client = https_client(app)
    for _ in range(3):
        assert signin(client, "ada@example.com", "wrong").status_code == 401
    locked = signin(client, "ada@example.com", "ada-password")
    assert locked.status_code == 429
    assert locked.get_json()["error"] == "too_many_attempts" and int(locked.headers["Retry-After"]) > 0


# ------------------------------------------------------------------ the directory's trouble


def test_a_directory_that_is_down_is_a_503_not_a_wrong_password(client, runner, world, directory, setup):
    create_directory(runner, directory, url=f"ldap://127.0.0.1:{free_port()}")
    response = signin(client, "ada@example.com", "ada-password")
    assert response.status_code == 503
    assert response.get_json()["error"] == "directory_unavailable"
    assert int(response.headers["Retry-After"]) > 0
    assert events(world, "ldap.unavailable")
    # Not a failed password: no lockout is counted, no failure recorded.
    assert events(world, "signin.failed") == []


def test_a_slow_directory_times_out_as_a_503(make_app, setup, directory):
    app = make_app(AUTHSVC_LDAP_TIMEOUT=1)
    create_directory(app.test_cli_runner(), directory)
    client = https_client(app)
    directory.slapd.pause()
    try:
        started = time.monotonic()
        response = signin(client, "ada@example.com", "ada-password")
        elapsed = time.monotonic() - started
    finally:
        directory.slapd.resume()
    assert response.status_code == 503
    assert elapsed < 5


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


# ------------------------------------------------------------------ accounts and linking


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


# ------------------------------------------------------------------ deprovisioning


def test_a_disabled_entry_ends_the_users_sessions_and_tokens_on_the_next_check(make_app, setup, directory):
    app = make_app(AUTHSVC_LDAP_RECHECK=0)
    create_directory(app.test_cli_runner(), directory)
    directory.add_person("dora", "dora@example.com", "dora-password", "Dora Leaving")
    try:
        client = https_client(app)
        assert signin(client, "dora@example.com", "dora-password").status_code == 202
        assert "Sign out" in client.get("/auth/login", headers=headers()).get_data(as_text=True)
        token = access_token(client, setup.public_app.client_id)
        assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 200
        directory.set_account_control("dora", 514)
        page = client.get("/auth/login", headers=headers()).get_data(as_text=True)
        assert "Sign out" not in page and 'name="password"' in page
        assert client.get(INSPECT, headers=headers(Authorization=f"Bearer {token}")).status_code == 401
        with app.app_context():
            [record] = db.session.scalars(select(AuditRecord).where(AuditRecord.event == "ldap.deprovisioned"))
            assert record.details["reason"] == "disabled"
        assert signin(client, "dora@example.com", "dora-password").status_code == 401
        # Enabled again, the entry signs in again: the directory decides, nothing was disabled here.
        directory.set_account_control("dora", 512)
        assert signin(client, "dora@example.com", "dora-password").status_code == 202
    finally:
        directory.delete("dora")


def test_an_entry_removed_from_the_directory_cannot_sign_in_and_its_session_ends(make_app, setup, directory):
    app = make_app(AUTHSVC_LDAP_RECHECK=0)
    create_directory(app.test_cli_runner(), directory)
    directory.add_person("erin", "erin@example.com", "erin-password", "Erin Removed")
    client = https_client(app)
    assert signin(client, "erin@example.com", "erin-password").status_code == 202
    directory.delete("erin")
    assert "Sign out" not in client.get("/auth/login", headers=headers()).get_data(as_text=True)
    assert signin(client, "erin@example.com", "erin-password").status_code == 401


def test_a_refresh_asks_the_directory_again(make_app, setup, directory):
    app = make_app(AUTHSVC_LDAP_RECHECK=0)
    create_directory(app.test_cli_runner(), directory)
    directory.add_person("gus", "gus@example.com", "gus-password", "Gus Refreshing")
    try:
        client = https_client(app)
        assert signin(client, "gus@example.com", "gus-password").status_code == 202
        refresh_token = tokens(client, setup.public_app.client_id)["refresh_token"]
        body = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": setup.public_app.client_id}
        directory.set_account_control("gus", 514)
        refused = client.post("/auth/oauth/token", data=body, headers=headers())
        assert refused.status_code == 400, refused.get_json()
        assert "access_token" not in refused.get_json()
    finally:
        directory.delete("gus")


def test_the_session_is_not_rechecked_before_the_interval(make_app, setup, directory):
    app = make_app(AUTHSVC_LDAP_RECHECK=3600)
    create_directory(app.test_cli_runner(), directory)
    directory.add_person("fred", "fred@example.com", "fred-password", "Fred Cached")
    try:
        client = https_client(app)
        assert signin(client, "fred@example.com", "fred-password").status_code == 202
        directory.set_account_control("fred", 514)
        assert "Sign out" in client.get("/auth/login", headers=headers()).get_data(as_text=True)
    finally:
        directory.delete("fred")


# ------------------------------------------------------------------ admin API


@pytest.fixture
def admin_token(world, setup):
    admin = world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    return world.api_key(admin, scopes="public admin", permission="admin")


def api(client, method, path, key, **kwargs):
    return client.open(f"/api/engine/v2{path}", method=method, headers=headers(**{"X-API-Key": key}), **kwargs)


def test_the_admin_api_manages_directories_with_a_write_only_bind_password(
    client, world, setup, directory, admin_token
):
    body = {
        "name": "Corp",
        "url": directory.starttls_url,
        "starttls": True,
        "bind_dn": SERVICE_DN,
        "bind_password": SERVICE_PASSWORD,
        "base_dn": PEOPLE,
        "ca_pem": directory.ca.ca_file.read_text(),
    }
    # A tenant admin may not point the service at loopback.
    refused = api(client, "POST", "/ldap", admin_token, json=body)
    assert refused.status_code == 422 and "url" in refused.get_json()["fields"]
    world.app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"] = True  # an operator's setting for on-premises peers
    created = api(client, "POST", "/ldap", admin_token, json=body)
    assert created.status_code == 201, created.get_json()
    directory_id = created.get_json()["id"]
    assert "bind_password" not in created.get_json()
    shown = api(client, "GET", f"/ldap/{directory_id}", admin_token).get_json()
    assert SERVICE_PASSWORD not in json.dumps(shown) and shown["base_dn"] == PEOPLE
    assert api(client, "POST", f"/ldap/{directory_id}/test", admin_token).get_json() == {"id": directory_id, "ok": True}
    changed = api(client, "PATCH", f"/ldap/{directory_id}", admin_token, json={"bind_password": "wrong"})
    assert changed.status_code == 200
    tested = api(client, "POST", f"/ldap/{directory_id}/test", admin_token).get_json()
    assert tested["ok"] is False and "wrong" not in tested["error"]
    [updated] = events(world, "ldap.updated")
    assert updated.details["after"]["bind_password_changed"] is True and "wrong" not in json.dumps(updated.details)
    bad = api(client, "PATCH", f"/ldap/{directory_id}", admin_token, json={"user_filter": "mail=*"})
    assert bad.status_code == 422 and "user_filter" in bad.get_json()["fields"]
    assert api(client, "DELETE", f"/ldap/{directory_id}", admin_token).get_json() == {"deleted": directory_id}
    assert [e.target for e in events(world, "ldap.deleted")] == [f"ldap:{directory_id}"]


# ------------------------------------------------------------------ console


def test_the_console_creates_tests_and_deletes_a_directory(app, client, world, setup, directory):
    admin_user = world.user(setup.domain, "admin@example.com", admin=True, name="Admin")
    app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"] = True  # an operator's setting for on-premises peers
    conftest_signin(client, admin_user.email)
    base = f"/auth/admin/domains/{setup.domain.id}/ldap"
    form = {
        "name": "Corp",
        "url": directory.starttls_url,
        "starttls": "y",
        "bind_dn": SERVICE_DN,
        "bind_password": SERVICE_PASSWORD,
        "base_dn": PEOPLE,
        "user_filter": "(mail={email})",
        "group_attribute": "memberOf",
        "ca_pem": directory.ca.ca_file.read_text(),
        "enabled": "y",
    }
    new = client.get(f"{base}/new", headers=headers())
    invalid = client.post(
        f"{base}/new", data={**form, "user_filter": "mail", "csrf_token": csrf_token(new)}, headers=headers()
    )
    assert invalid.status_code == 422 and "{email}" in invalid.get_data(as_text=True)
    created = client.post(f"{base}/new", data={**form, "csrf_token": csrf_token(new)}, headers=headers())
    assert created.status_code == 303
    [stored] = world.query(select(LdapDirectory))
    page = client.get(created.headers["Location"], headers=headers())
    assert SERVICE_PASSWORD not in page.get_data(as_text=True)
    tested = client.post(f"{base}/{stored.id}/test", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert tested.status_code == 303
    assert "succeeded" in client.get(tested.headers["Location"], headers=headers()).get_data(as_text=True)
    # An edit with the bind password left empty keeps it.
    edited = client.post(
        f"{base}/{stored.id}",
        data={**form, "bind_password": "", "name": "Corp AD", "csrf_token": csrf_token(page)},
        headers=headers(),
    )
    assert edited.status_code == 303
    page = client.get(edited.headers["Location"], headers=headers())
    assert "Corp AD" in page.get_data(as_text=True)
    tested = client.post(f"{base}/{stored.id}/test", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert "succeeded" in client.get(tested.headers["Location"], headers=headers()).get_data(as_text=True)
    confirm = client.get(f"{base}/{stored.id}/delete", headers=headers())
    assert (
        client.post(
            f"{base}/{stored.id}/delete", data={"csrf_token": csrf_token(confirm)}, headers=headers()
        ).status_code
        == 303
    )
    assert world.query(select(LdapDirectory)) == []
    assert [r.actor for r in events(world, "ldap.created")] == [f"user:{admin_user.id}"]
    assert events(world, "ldap.updated") and events(world, "ldap.deleted")
