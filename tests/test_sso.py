"""Single sign-on (SPEC 4.3, 5.4) against real providers on loopback."""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import Application, ExternalIdentity, SsoProvider, User
from tests.conftest import HOST, OTHER_HOST, PASSWORD, REDIRECT_URI, get_code, headers
from tests.providers import Provider

# The reserved scopes a credential needs for delegated tokens: its user's own, or (with admin) another user's.
DELEGATED = "public resource_token"
ADMIN_DELEGATED = "public admin resource_token"
PERSON = {"sub": "ext-42", "email": "ada@example.com", "email_verified": True, "name": "Ada Lovelace"}


@pytest.fixture
def oidc():
    with Provider("oidc") as provider:
        provider.sign_in_as(**PERSON)
        yield provider


@pytest.fixture
def oauth2():
    with Provider("oauth2") as provider:
        provider.sign_in_as(id="u-7", email="grace@example.com", name="Grace Hopper")
        yield provider


def create_provider(runner, *args, on_premises: bool = True) -> dict:
    """``sso create`` as an operator does; the loopback provider needs --allow-private-network."""
    private = ["--allow-private-network"] if on_premises else []
    result = runner.invoke(
        args=[
            "sso",
            "create",
            "--domain",
            HOST,
            "--name",
            "Corp",
            "--client-id",
            "authsvc",
            "--client-secret",
            "provider-secret",
            *private,
            *args,
        ]
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def oidc_id(runner, setup, oidc):
    return create_provider(runner, "--issuer", oidc.url)["id"]


@pytest.fixture
def oauth2_id(runner, setup, oauth2):
    return create_provider(
        runner,
        "--authorize-url",
        oauth2.url + "/authorize",
        "--token-url",
        oauth2.url + "/token",
        "--userinfo-url",
        oauth2.url + "/userinfo",
        "--map",
        "uid=id",
    )["id"]


def sign_in(client, provider_id, continue_url=None, host=HOST):
    """Follow the browser's path: us -> provider -> our callback. Returns (start, callback) responses."""
    query = {"id": provider_id}
    if continue_url:
        query["continue"] = continue_url
    start = client.get("/auth/oauth2", query_string=query, headers=headers(host))
    assert start.status_code == 302, start.get_data(as_text=True)
    at_provider = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(at_provider.headers["Location"])
    callback = client.get(back.path, query_string=back.query, headers=headers(host))
    return start, callback


def test_start_redirects_to_the_provider_with_state_pkce_and_nonce(client, app, oidc, oidc_id):
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 302
    location = urlsplit(response.headers["Location"])
    assert f"{location.scheme}://{location.netloc}" == oidc.url
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["client_id"] == "authsvc"
    assert query["redirect_uri"] == f"https://{HOST}/auth/oauth2/callback"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert query["state"] and query["nonce"]
    assert query["scope"] == "openid email profile"
    with app.app_context():
        [key] = store.client().keys("authsvc:sso:*")
        assert 0 < store.client().ttl(key) <= 600
        assert query["state"] not in key


def test_a_plain_oauth2_provider_gets_no_nonce(client, oauth2_id):
    response = client.get("/auth/oauth2", query_string={"id": oauth2_id}, headers=headers())
    assert "nonce" not in parse_qs(urlsplit(response.headers["Location"]).query)


@pytest.mark.parametrize("provider_id", ["no-such-id", "", "x" * 300])
def test_an_unknown_provider_is_a_404_page(client, setup, provider_id):
    response = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers())
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert "Unknown sign-in provider" in response.get_data(as_text=True)


@pytest.mark.parametrize("provider_id", ["\x00", "ab\x00cd", "\u00e9t\u00e9", "a b"])
def test_a_provider_id_no_provider_can_have_is_a_404_page_not_a_500(client, setup, provider_id):
    """NUL reached PostgreSQL (which refuses it) and was a 500; schemathesis found it."""
    response = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers())
    assert response.status_code == 404
    assert "Unknown sign-in provider" in response.get_data(as_text=True)


def test_a_provider_of_another_domain_is_a_404_page(client, world, oidc_id):
    world.domain(OTHER_HOST)
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers(OTHER_HOST))
    assert response.status_code == 404


def test_oidc_sign_in_creates_the_user_and_a_session(client, world, oidc, oidc_id):
    _, callback = sign_in(client, oidc_id, continue_url="/auth/oauth/authorize?x=1")
    assert callback.status_code == 303
    assert callback.headers["Location"] == "/auth/oauth/authorize?x=1"
    assert client.get_cookie("user", domain=HOST) is not None
    [user] = world.query(select(User).where(User.email == "ada@example.com"))
    assert user.name == "Ada Lovelace"
    assert user.password_hash is None
    [identity] = world.query(select(ExternalIdentity))
    assert (identity.subject, identity.user_id, identity.provider_id) == ("ext-42", user.id, oidc_id)
    access_token = next(iter(oidc.tokens))
    assert access_token not in identity.access_token_encrypted, "stored encrypted"
    assert identity.refresh_token_encrypted and identity.expires_at > time.time() + 3000
    page = client.get("/auth/login", headers=headers())
    assert "ada@example.com" in page.get_data(as_text=True)


def test_a_second_sign_in_uses_the_existing_link(client, world, oidc, oidc_id):
    sign_in(client, oidc_id)
    oidc.sign_in_as(**{**PERSON, "email": "changed@example.com"})
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 303
    assert len(world.query(select(User))) == 3  # setup's person and service, plus Ada
    assert len(world.query(select(ExternalIdentity))) == 1


def test_oauth2_provider_reads_the_userinfo_url(client, world, oauth2, oauth2_id):
    _, callback = sign_in(client, oauth2_id)
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert identity.subject == "u-7"
    [user] = world.query(select(User).where(User.id == identity.user_id))
    assert user.email == "grace@example.com"


@pytest.mark.parametrize("state", ["forged-state", ""])
def test_a_forged_state_is_a_400_page(client, oidc_id, state):
    response = client.get("/auth/oauth2/callback", query_string={"state": state, "code": "x"}, headers=headers())
    assert response.status_code == 400
    assert "Sign-in expired" in response.get_data(as_text=True)


def test_a_reused_state_is_a_400_page_and_creates_nothing_more(client, world, oidc, oidc_id):
    start = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    first = client.get(back.path, query_string=back.query, headers=headers())
    second = client.get(back.path, query_string=back.query, headers=headers())
    assert (first.status_code, second.status_code) == (303, 400)
    assert len(world.query(select(ExternalIdentity))) == 1


def test_an_expired_state_is_a_400_page(make_app, setup, runner, oidc):
    app = make_app(AUTHSVC_SSO_FLOW_TTL=1)
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url)["id"]
    client = app.test_client()
    start = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers(), base_url=f"https://{HOST}")
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    time.sleep(2.1)
    late = client.get(back.path, query_string=back.query, headers=headers(), base_url=f"https://{HOST}")
    assert late.status_code == 400


@pytest.mark.parametrize("fault", ["bad_signature", "wrong_aud", "wrong_nonce", "wrong_iss", "expired"])
def test_an_id_token_that_fails_verification_signs_nobody_in(client, world, oidc, oidc_id, fault):
    oidc.fault = fault
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 502
    assert "did not answer properly" in callback.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_a_cancel_at_the_provider_goes_back_to_sign_in_with_a_message(client, oidc, oidc_id):
    oidc.fault = "deny"
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 303
    assert callback.headers["Location"] == "/auth/login?sso_error=access_denied"
    page = client.get(callback.headers["Location"], headers=headers())
    assert "Sign-in with your organisation was cancelled." in page.get_data(as_text=True)


@pytest.mark.parametrize("fault", ["garbage", "error500"])
def test_a_provider_answering_garbage_is_a_502_page(client, world, oidc, oidc_id, fault):
    oidc.fault = fault
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 502
    assert callback.mimetype == "text/html"
    assert world.query(select(ExternalIdentity)) == []


def test_a_slow_provider_times_out_as_a_502(make_app, setup, oidc):
    app = make_app(AUTHSVC_SSO_TIMEOUT=1)
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url)["id"]
    oidc.fault, oidc.slow_seconds = "slow", 2.5
    client = app.test_client()
    start = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers(), base_url=f"https://{HOST}")
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    callback = client.get(back.path, query_string=back.query, headers=headers(), base_url=f"https://{HOST}")
    assert callback.status_code == 502


def test_an_unreachable_provider_is_a_502_page(client, runner, setup):
    with Provider("oidc") as gone:
        url = gone.url
    provider_id = create_provider(runner, "--issuer", url)["id"]
    response = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers())
    assert response.status_code == 502
    assert "cannot be reached" in response.get_data(as_text=True)


def test_a_verified_email_links_the_existing_user(client, world, setup, oidc, oidc_id):
    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert identity.user_id == setup.person.id


def test_an_unverified_email_does_not_take_over_an_existing_user(client, world, setup, oidc, oidc_id):
    oidc.sign_in_as(sub="ext-1", email="person@example.com")
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=email_in_use"
    assert world.query(select(ExternalIdentity)) == []
    assert client.get_cookie("user", domain=HOST) is None


def test_trust_email_links_an_unverified_email(client, world, runner, setup, oauth2):
    oauth2.sign_in_as(id="u-1", email="person@example.com")
    provider_id = create_provider(
        runner,
        "--authorize-url",
        oauth2.url + "/authorize",
        "--token-url",
        oauth2.url + "/token",
        "--userinfo-url",
        oauth2.url + "/userinfo",
        "--trust-email",
    )["id"]
    _, callback = sign_in(client, provider_id)
    assert callback.status_code == 303
    assert world.query(select(ExternalIdentity))[0].user_id == setup.person.id


def test_match_rules_refuse_accounts_outside_them(client, world, runner, setup, oidc):
    provider_id = create_provider(runner, "--issuer", oidc.url, "--match", "email_domain=corp.example")["id"]
    _, callback = sign_in(client, provider_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=not_allowed"
    oidc.sign_in_as(**{**PERSON, "email": "ada@corp.example"})
    assert sign_in(client, provider_id)[1].status_code == 303


def test_concurrent_first_sign_ins_leave_one_user_and_one_identity(app, world, oidc, oidc_id):
    def run():
        client = app.test_client()
        sign_in(client, oidc_id)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(world.query(select(User).where(User.email == "ada@example.com"))) == 1
    assert len(world.query(select(ExternalIdentity))) == 1


def test_the_sign_in_page_has_a_button_per_provider(client, oidc_id, oauth2_id):
    html = client.get("/auth/login", query_string={"continue": "/x"}, headers=headers()).get_data(as_text=True)
    assert html.count("Sign in with Corp") == 2
    assert f'href="/auth/oauth2?id={oidc_id}&amp;continue=/x"' in html


# Delegated tokens


@pytest.fixture
def ada_token(client, world, setup, oidc, oidc_id):
    world.update(Application, setup.public_app.id, scopes=DELEGATED)
    sign_in(client, oidc_id)
    code = parse_qs(
        urlsplit(
            client.get(
                "/auth/oauth/authorize",
                query_string={
                    "response_type": "code",
                    "client_id": setup.public_app.client_id,
                    "redirect_uri": "https://app.example.com/callback",
                    "scope": DELEGATED,
                },
                headers=headers(),
            ).headers["Location"]
        ).query
    )["code"][0]
    token = client.post(
        "/auth/oauth/token",
        query_string={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": setup.public_app.client_id,
            "redirect_uri": "https://app.example.com/callback",
        },
        headers=headers(),
    ).get_json()
    return token["access_token"]


def resource_token(client, token, path="/api/engine/v2/users/resource_token", method="post"):
    return getattr(client, method)(path, headers=headers(Authorization=f"Bearer {token}"))


def test_resource_token_returns_the_providers_access_token(client, oidc, ada_token):
    response = resource_token(client, ada_token)
    assert response.status_code == 200
    body = response.get_json()
    assert body["token"] in oidc.tokens
    assert body["expires"] > time.time() + 3000
    assert oidc.refreshes == 0


def test_a_token_near_expiry_is_refreshed_and_the_new_pair_saved(client, world, oidc, oidc_id, setup):
    oidc.expires_in = 120
    sign_in(client, oidc_id)
    [identity] = world.query(select(ExternalIdentity))
    user = world.query(select(User).where(User.id == identity.user_id))[0]
    world.update(User, user.id, admin=False)
    key = world.api_key(user, scopes=DELEGATED)
    first = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key})).get_json()
    assert oidc.refreshes == 1
    oidc.expires_in = 3600
    assert first["token"] in oidc.tokens
    [after] = world.query(select(ExternalIdentity))
    assert after.refresh_token_encrypted != identity.refresh_token_encrypted
    oidc.expires_in = 3600
    second = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key})).get_json()
    assert oidc.refreshes == 2, "120 s is inside the 5-minute margin, so it refreshes again"
    assert second["token"] != first["token"]


def test_a_refused_refresh_is_a_409_and_marks_the_identity(client, world, oidc, oidc_id, setup):
    oidc.expires_in = 60
    sign_in(client, oidc_id)
    [identity] = world.query(select(ExternalIdentity))
    key = world.api_key(world.query(select(User).where(User.id == identity.user_id))[0], scopes=DELEGATED)
    oidc.fault = "refuse_refresh"
    response = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 409
    assert response.get_json()["error"] == "reauthentication_required"
    assert world.query(select(ExternalIdentity))[0].needs_reauth is True
    oidc.fault = None
    sign_in(client, oidc_id)
    assert world.query(select(ExternalIdentity))[0].needs_reauth is False


def test_an_admin_gets_and_clears_a_users_resource_token(client, world, setup, oidc, oidc_id, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    admin_key = world.api_key(setup.person, scopes=ADMIN_DELEGATED, permission="admin")
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    assert client.post(path, headers=headers(**{"X-API-Key": admin_key})).status_code == 403
    world.update(User, setup.person.id, admin=True)
    response = client.post(path, headers=headers(**{"X-API-Key": admin_key}))
    assert response.status_code == 200
    assert response.get_json()["token"] in oidc.tokens
    cleared = client.delete(path, headers=headers(**{"X-API-Key": admin_key}))
    assert cleared.get_json() == {"cleared": 1}
    again = client.post(path, headers=headers(**{"X-API-Key": admin_key}))
    assert again.status_code == 404
    assert again.get_json()["error"] == "no_resource_token"
    missing = client.post("/api/engine/v2/users/999999/resource_token", headers=headers(**{"X-API-Key": admin_key}))
    assert missing.status_code == 404


def signed_in_token(client, setup, scope):
    """An access token of the user signed in with ``client``, granted ``scope`` by the public application."""
    code = get_code(client, setup.public_app.client_id, scope=scope)
    form = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    response = client.post("/auth/oauth/token", data=form | {"redirect_uri": REDIRECT_URI}, headers=headers())
    assert response.get_json()["scope"] == scope
    return response.get_json()["access_token"]


def test_a_public_only_token_cannot_read_or_clear_the_users_provider_token(client, world, setup, oidc, oidc_id):
    world.update(Application, setup.public_app.id, scopes=DELEGATED)
    sign_in(client, oidc_id)
    token = signed_in_token(client, setup, "public")
    for method in ("post", "delete"):
        response = resource_token(client, token, method=method)
        assert response.status_code == 403
        assert response.get_json()["error"] == "insufficient_scope"
        assert all(stored not in response.get_data(as_text=True) for stored in oidc.tokens)
        challenge = response.headers["WWW-Authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="resource_token"' in challenge
    [identity] = world.query(select(ExternalIdentity))
    assert identity.access_token_encrypted is not None, "the refused DELETE cleared nothing"
    assert resource_token(client, signed_in_token(client, setup, DELEGATED)).get_json()["token"] in oidc.tokens


def test_an_admin_key_needs_both_reserved_scopes_for_another_users_provider_token(client, world, setup, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    world.update(User, setup.person.id, admin=True)
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    for scopes in ("public admin", "public resource_token"):
        key = world.api_key(setup.person, scopes=scopes, permission="admin")
        for method in ("post", "delete"):
            response = getattr(client, method)(path, headers=headers(**{"X-API-Key": key}))
            assert response.status_code == 403, (scopes, method)
            assert response.get_json()["error"] == "insufficient_scope"
            assert 'scope="admin resource_token"' in response.headers["WWW-Authenticate"]
    assert world.query(select(ExternalIdentity))[0].access_token_encrypted is not None


def test_a_domain_admin_cannot_read_or_clear_a_system_admins_provider_token(client, world, setup, oidc, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    world.update(User, identity.user_id, admin=True, system_admin=True)
    world.update(User, setup.person.id, admin=True)
    admin_key = world.api_key(setup.person, scopes=ADMIN_DELEGATED, permission="admin")
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    for method in ("post", "delete"):
        response = getattr(client, method)(path, headers=headers(**{"X-API-Key": admin_key}))
        assert response.status_code == 403, method
        assert response.get_json()["error"] == "forbidden"
    assert world.query(select(ExternalIdentity))[0].access_token_encrypted is not None
    other = world.domain(OTHER_HOST)
    root = world.user(other, "root@example.com", admin=True, system_admin=True)
    root_key = world.api_key(root, scopes=ADMIN_DELEGATED, permission="admin")
    by_root = client.post(path, headers=headers(OTHER_HOST, **{"X-API-Key": root_key}))
    assert by_root.status_code == 200
    assert by_root.get_json()["token"] in oidc.tokens


def test_a_domain_admin_cannot_reach_a_user_of_another_domain(client, world, setup, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    other = world.domain(OTHER_HOST)
    admin = world.user(other, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes=ADMIN_DELEGATED, permission="admin")
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    for method in ("post", "delete"):
        response = getattr(client, method)(path, headers=headers(OTHER_HOST, **{"X-API-Key": key}))
        assert response.status_code == 404, method
        assert response.get_json()["error"] == "not_found"
    assert world.query(select(ExternalIdentity))[0].access_token_encrypted is not None


def test_resource_token_picks_a_provider_and_an_odd_provider_id_has_none(client, oidc, oidc_id, ada_token):
    def ask(provider):
        return client.post(
            "/api/engine/v2/users/resource_token",
            query_string={"provider": provider},
            headers=headers(Authorization=f"Bearer {ada_token}"),
        )

    assert ask(oidc_id).get_json()["token"] in oidc.tokens
    for provider in ("\x00", "ab\x00cd", "no-such-id"):
        response = ask(provider)
        assert response.status_code == 404, "NUL reached PostgreSQL and was a 500"
        assert response.get_json()["error"] == "no_resource_token"


@pytest.mark.parametrize("method", ["post", "delete"])
def test_an_admin_names_a_user_by_ascii_digits_only(client, world, setup, method):
    """ "²" was a 500 (int() refuses it) and Arabic-Indic digits named the user with that number."""
    world.update(User, setup.person.id, admin=True)
    admin_key = world.api_key(setup.person, scopes=ADMIN_DELEGATED, permission="admin")
    arabic_indic = "".join(chr(0x660 + int(d)) for d in str(setup.service.id))
    # 2147483648 is past SQL's INTEGER, which PostgreSQL refused (a 500).
    for user_id in ("\u00b2", arabic_indic, f"{setup.service.id}\u00b2", "2147483648"):
        response = getattr(client, method)(
            f"/api/engine/v2/users/{user_id}/resource_token", headers=headers(**{"X-API-Key": admin_key})
        )
        assert response.status_code == 404, user_id
        assert response.get_json()["error"] == "not_found"


def test_resource_token_needs_a_credential(client, setup):
    assert client.post("/api/engine/v2/users/resource_token", headers=headers()).status_code == 401


def test_a_password_user_has_no_resource_token(client, world, setup):
    key = world.api_key(setup.person, scopes=DELEGATED)
    response = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 404


# Provider records and the Microsoft preset


def test_sso_create_list_and_show_keep_the_secret_encrypted(runner, world, setup, oidc):
    created = create_provider(runner, "--issuer", oidc.url, "--param", "prompt=login", "--map", "name=nickname,name")
    assert created["callback_url"] == f"https://{HOST}/auth/oauth2/callback"
    [stored] = world.query(select(SsoProvider))
    assert "provider-secret" not in stored.client_secret_encrypted
    listed = json.loads(runner.invoke(args=["sso", "list"]).stdout)["sso"]
    shown = json.loads(runner.invoke(args=["sso", "show", created["id"]]).stdout)
    assert listed[0]["id"] == shown["id"] == created["id"]
    assert "provider-secret" not in json.dumps(listed) + json.dumps(shown)
    assert shown["authorize_params"] == {"prompt": "login"}
    assert shown["profile_mappings"] == {"name": ["nickname", "name"]}
    assert shown["kind"] == "oidc"


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "give --issuer"),
        (["--issuer", "ftp://x.example"], "absolute http(s) URL"),
        (["--issuer", "http://idp.example.com"], "loopback"),
        (["--preset", "microsoft"], "needs --tenant"),
        (["--issuer", "https://idp.example.com", "--map", "novalue"], "NAME=VALUE"),
    ],
)
def test_sso_create_refuses_bad_input(runner, setup, args, message):
    result = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "X", "--client-id", "c", "--client-secret", "s", *args]
    )
    assert result.exit_code != 0
    assert message in result.stderr


def test_microsoft_preset_asks_for_every_delegated_permission(runner, world, setup):
    created = create_provider(runner, "--preset", "microsoft", "--tenant", "contoso.onmicrosoft.com")
    assert created["admin_consent_url"].startswith(
        "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/adminconsent?client_id=authsvc"
    )
    assert "redirect_uri=https%3A%2F%2Fauth.example.com%2Fauth%2Foauth2%2Fcallback" in created["admin_consent_url"]
    shown = json.loads(runner.invoke(args=["sso", "show", created["id"]]).stdout)
    assert shown["scopes"].split() == [
        "openid",
        "profile",
        "email",
        "offline_access",
        "Place.Read.All",
        "Calendars.ReadWrite",
        "Calendars.ReadWrite.Shared",
        "Contacts.Read",
        "Group.Read.All",
        "User.Read.All",
    ]
    assert shown["authorize_url"] == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize"
    assert shown["token_url"] == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"
    assert shown["userinfo_url"] == "https://graph.microsoft.com/v1.0/me"
    assert shown["profile_mappings"]["email"] == ["mail", "userPrincipalName"]
    assert shown["profile_mappings"]["first_name"] == ["givenName"]
    assert shown["profile_mappings"]["last_name"] == ["surname"]
    assert shown["profile_mappings"]["uid"] == ["id", "oid"]
    check = json.loads(runner.invoke(args=["sso", "check", created["id"]]).stdout)
    assert check["missing"] is None and "nobody has signed in" in check["note"]


def test_sso_check_lists_the_permissions_admin_consent_did_not_grant(client, runner, world, setup, oidc):
    # The Microsoft preset, pointed at the loopback provider standing in for Entra and Graph.
    created = create_provider(
        runner,
        "--preset",
        "microsoft",
        "--tenant",
        "contoso",
        "--issuer",
        oidc.url,
        "--authorize-url",
        oidc.url + "/authorize",
        "--token-url",
        oidc.url + "/token",
        "--userinfo-url",
        oidc.url + "/userinfo",
        "--jwks-url",
        oidc.url + "/jwks",
    )
    oidc.sign_in_as(sub="pairwise-sub", tid="contoso")
    oidc.userinfo = {
        "id": "graph-id-1",
        "mail": "Megan@Contoso.example",
        "givenName": "Megan",
        "surname": "Bowen",
        "displayName": "Megan Bowen",
        "sub": "pairwise-sub",
    }
    oidc.granted_scope = "openid profile email https://graph.microsoft.com/Calendars.ReadWrite User.Read.All"
    _, callback = sign_in(client, created["id"])
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert identity.subject == "graph-id-1"
    [user] = world.query(select(User).where(User.id == identity.user_id))
    assert (user.email, user.name) == ("megan@contoso.example", "Megan Bowen")
    check = json.loads(runner.invoke(args=["sso", "check", created["id"]]).stdout)
    assert check["missing"] == ["Place.Read.All", "Calendars.ReadWrite.Shared", "Contacts.Read", "Group.Read.All"]
    assert "offline_access" in check["granted"]
    oidc.granted_scope = None
    sign_in(client, created["id"])
    assert json.loads(runner.invoke(args=["sso", "check", created["id"]]).stdout)["missing"] == []


def test_a_disabled_user_cannot_sign_in_through_sso(client, world, oidc, oidc_id):
    sign_in(client, oidc_id)
    [identity] = world.query(select(ExternalIdentity))
    world.update(User, identity.user_id, disabled=True)
    client.delete_cookie("user", domain=HOST)
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=account_disabled"


def test_password_sign_in_still_works_beside_sso(client, setup, oidc_id):
    response = client.post(
        "/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=headers()
    )
    assert response.status_code == 202


def test_an_sso_sign_in_is_audited(client, world, oidc, oidc_id):
    from authsvc.core.models import AuditRecord

    sign_in(client, oidc_id)
    [user] = world.query(select(User).where(User.email == "ada@example.com"))
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.signin"))
    assert (record.actor, record.target, record.details) == (
        f"user:{user.id}",
        f"user:{user.id}",
        {"provider": oidc_id},
    )


def test_a_callback_in_another_browser_is_refused(app, client, world, oidc, oidc_id):
    # Login CSRF: an attacker starts a flow, signs in at the provider, and hands
    # the callback URL to a victim; the victim's browser lacks the flow cookie.
    start = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    victim = app.test_client()
    response = victim.get(back.path, query_string=back.query, headers=headers(), base_url=f"https://{HOST}")
    assert response.status_code == 400
    assert victim.get_cookie("user", domain=HOST) is None
    assert world.query(select(ExternalIdentity)) == []


def test_an_answer_without_expires_in_signs_in_and_keeps_the_tokens(client, world, oidc, oidc_id):
    oidc.expires_in = None
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert identity.access_token_encrypted is not None
    assert identity.expires_at is None


def test_a_garbled_expires_in_is_a_502_and_creates_nothing(client, world, oidc, oidc_id):
    oidc.expires_in = "soon"
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 502
    assert world.query(select(ExternalIdentity)) == []
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_trusting_email_from_any_entra_tenant_needs_a_tenant_rule(runner, setup):
    args = ["--preset", "microsoft", "--tenant", "organizations", "--trust-email"]
    refused = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "X", "--client-id", "c", "--client-secret", "s", *args]
    )
    assert refused.exit_code != 0
    assert "tid match rule" in refused.stderr
    pinned = runner.invoke(
        args=[
            "sso",
            "create",
            "--domain",
            HOST,
            "--name",
            "X",
            "--client-id",
            "c",
            "--client-secret",
            "s",
            *args,
            "--match",
            "tid=contoso-tenant-id",
        ]
    )
    assert pinned.exit_code == 0, pinned.stderr


# Linking (issue 13.1): a provider's e-mail claim is never a way into a privileged account.

API = "/api/engine/v2"


def api(client, method, path, key, body=None, host=HOST):
    kwargs = {"json": body} if body is not None else {}
    return getattr(client, method)(API + path, headers=headers(host, **{"X-API-Key": key}), **kwargs)


@pytest.fixture
def on_premises_app(make_app, setup):
    """An app whose operator allows every provider on private networks: the loopback provider stands in for a
    public one registered by a domain admin."""
    from tests.conftest import HttpsClient

    app = make_app(AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS=True)
    app.test_client_class = HttpsClient
    return app


def test_a_domain_admins_provider_cannot_sign_in_as_a_system_admin(on_premises_app, world, setup, oidc):
    from authsvc.core.models import AuditRecord

    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    client = on_premises_app.test_client()
    body = {"name": "Mine", "client_id": "authsvc", "client_secret": "provider-secret", "issuer": oidc.url}
    created = api(client, "post", "/sso", world.api_key(domain_admin, scopes="public admin", permission="admin"), body)
    assert created.status_code == 201, created.get_json()
    oidc.sign_in_as(sub="attacker", email="root@example.com", email_verified=True)
    _, callback = sign_in(client, created.get_json()["id"])
    assert callback.status_code == 303
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert client.get_cookie("user", domain=HOST) is None
    assert world.query(select(ExternalIdentity)) == []
    [refused] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    assert refused.target == f"user:{root.id}"
    assert refused.details["reason"] == "privileged_account"
    page = client.get(callback.headers["Location"], headers=headers()).get_data(as_text=True)
    assert "cannot be linked by signing in" in page


@pytest.mark.parametrize("flag", ["admin", "support", "service_account"])
def test_a_first_sign_in_never_links_itself_to_a_privileged_account(client, world, setup, oidc, oidc_id, flag):
    world.user(setup.domain, "holder@example.com", **{flag: True})
    oidc.sign_in_as(sub="ext-9", email="holder@example.com", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert world.query(select(ExternalIdentity)) == []


def test_a_first_sign_in_never_takes_an_account_that_trusts_another_provider(
    client, world, runner, setup, oidc, oidc_id
):
    from authsvc.core.models import AuditRecord

    sign_in(client, oidc_id)
    client.delete_cookie("user", domain=HOST)
    with Provider("oidc") as second:
        second.sign_in_as(sub="other-1", **{k: v for k, v in PERSON.items() if k != "sub"})
        other_id = create_provider(runner, "--issuer", second.url)["id"]
        _, callback = sign_in(client, other_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert [i.provider_id for i in world.query(select(ExternalIdentity))] == [oidc_id]
    refused = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    reasons = [r.details["reason"] for r in refused]
    assert reasons == ["linked_to_another_provider"]


def test_every_automatic_link_is_audited(client, world, setup, oidc, oidc_id):
    from authsvc.core.models import AuditRecord

    sign_in(client, oidc_id)
    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    client.delete_cookie("user", domain=HOST)
    sign_in(client, oidc_id)
    linked = world.query(select(AuditRecord).where(AuditRecord.event == "sso.linked").order_by(AuditRecord.id))
    assert [(r.actor, r.details) for r in linked] == [
        (f"sso:{oidc_id}", {"provider": oidc_id, "via": "new_user"}),
        (f"sso:{oidc_id}", {"provider": oidc_id, "via": "email"}),
    ]
    assert linked[1].target == f"user:{setup.person.id}"


def link(client, provider_id, *, confirm=True):
    """A signed-in user asks to link: the confirmation page, its form, the provider, our callback."""
    from tests.test_pages import csrf_token

    page = client.get("/auth/oauth2/link", query_string={"id": provider_id}, headers=headers())
    assert page.status_code == 200, page.get_data(as_text=True)
    start = client.post(
        "/auth/oauth2/link", data={"csrf_token": csrf_token(page), "id": provider_id}, headers=headers()
    )
    assert start.status_code == 303, start.get_data(as_text=True)
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    return client.get(back.path, query_string=back.query, headers=headers())


def test_a_signed_in_system_admin_links_their_own_identity(client, world, setup, oidc, oidc_id, app):
    from authsvc.core.models import AuditRecord
    from tests.conftest import signin

    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    oidc.sign_in_as(sub="root-at-idp", email="someone-else@example.com")
    signin(client, "root@example.com")
    callback = link(client, oidc_id)
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert (identity.user_id, identity.subject) == (root.id, "root-at-idp")
    [linked] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.linked"))
    assert (linked.actor, linked.target, linked.details["via"]) == (f"user:{root.id}", f"user:{root.id}", "user")
    # From now on the provider signs them in.
    fresh = app.test_client()
    assert sign_in(fresh, oidc_id)[1].status_code == 303
    assert fresh.get_cookie("user", domain=HOST) is not None


def test_a_link_is_never_started_by_a_plain_get(client, app, world, setup, oidc, oidc_id):
    from tests.conftest import signin

    signin(client)
    page = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    assert page.status_code == 200 and "Link sign-in with Corp" in page.get_data(as_text=True)
    with app.app_context():
        assert store.client().keys("authsvc:sso:*") == []
    forged = client.post("/auth/oauth2/link", data={"id": oidc_id}, headers=headers())
    assert forged.status_code in (400, 403)
    with app.app_context():
        assert store.client().keys("authsvc:sso:*") == []


def test_a_link_without_a_session_goes_to_sign_in(client, oidc_id):
    response = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 303
    assert response.headers["Location"].startswith("/auth/login?continue=")


def test_a_link_finished_by_another_session_links_nobody(client, world, setup, oidc, oidc_id):
    from tests.conftest import signin
    from tests.test_pages import csrf_token

    signin(client)
    page = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    start = client.post("/auth/oauth2/link", data={"csrf_token": csrf_token(page), "id": oidc_id}, headers=headers())
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    client.delete_cookie("user", domain=HOST)
    callback = client.get(back.path, query_string=back.query, headers=headers())
    assert callback.status_code == 400
    assert world.query(select(ExternalIdentity)) == []


def test_an_identity_linked_to_someone_else_is_not_moved_by_a_link(client, app, world, setup, oidc, oidc_id):
    from tests.conftest import signin

    sign_in(app.test_client(), oidc_id)  # Ada's account at the provider is Ada's here
    signin(client)
    callback = link(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=identity_in_use"
    [identity] = world.query(select(ExternalIdentity))
    assert identity.user_id != setup.person.id


def test_only_a_system_admin_links_an_identity_through_the_admin_api(client, world, setup, oidc_id):
    from authsvc.core.models import AuditRecord
    from tests.conftest import OTHER_HOST

    root_here = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    body = {"provider": oidc_id, "subject": "root-at-idp"}
    path = f"/users/{root_here.id}/identities"
    domain_admin_key = world.api_key(domain_admin, scopes="public admin", permission="admin")
    refused = api(client, "post", path, domain_admin_key, body)
    assert refused.status_code == 403 and refused.get_json()["error"] == "forbidden"
    system = world.user(world.domain(OTHER_HOST), "system@example.com", admin=True, system_admin=True)
    system_key = world.api_key(system, scopes="public admin", permission="admin")
    linked = api(client, "post", path, system_key, body, host=OTHER_HOST)
    assert linked.status_code == 201, linked.get_json()
    assert linked.get_json() == {"user": str(root_here.id), "provider": oidc_id, "subject": "root-at-idp"}
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.linked"))
    assert record.details["via"] == "system_admin" and record.target == f"user:{root_here.id}"
    taken = api(client, "post", f"/users/{setup.person.id}/identities", system_key, body, host=OTHER_HOST)
    assert taken.status_code == 409


@pytest.mark.parametrize("flag", ["admin", "support", "system_admin"])
def test_a_user_promoted_after_an_automatic_link_must_link_again_before_sso_signs_them_in(
    client, app, world, setup, oidc, oidc_id, flag
):
    from authsvc.core.models import AuditRecord
    from tests.conftest import signin

    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    assert sign_in(client, oidc_id)[1].status_code == 303  # linked by e-mail while an ordinary user
    client.delete_cookie("user", domain=HOST)
    world.update(User, setup.person.id, **{flag: True})
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert client.get_cookie("user", domain=HOST) is None
    [refused] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    assert (refused.target, refused.details["reason"]) == (f"user:{setup.person.id}", "automatic_link")
    # The account holder's own step makes the link theirs; then the provider signs them in again.
    signin(client)
    assert link(client, oidc_id).status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert (identity.user_id, identity.via) == (setup.person.id, "user")
    fresh = app.test_client()
    assert sign_in(fresh, oidc_id)[1].status_code == 303
    assert fresh.get_cookie("user", domain=HOST) is not None


def test_each_identity_records_how_it_was_linked(client, world, setup, oidc, oidc_id):
    sign_in(client, oidc_id)
    client.delete_cookie("user", domain=HOST)
    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    sign_in(client, oidc_id)
    rows = world.query(select(ExternalIdentity).order_by(ExternalIdentity.id))
    assert [(i.subject, i.via) for i in rows] == [("ext-42", "new_user"), ("ext-1", "email")]


def test_a_domain_admin_cannot_repoint_a_provider_a_privileged_user_signs_in_through(
    on_premises_app, world, setup, oidc
):
    from tests.conftest import OTHER_HOST

    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    admin_key = world.api_key(domain_admin, scopes="public admin", permission="admin")
    system = world.user(world.domain(OTHER_HOST), "system@example.com", admin=True, system_admin=True)
    system_key = world.api_key(system, scopes="public admin", permission="admin")
    client = on_premises_app.test_client()
    provider_id = create_provider(on_premises_app.test_cli_runner(), "--issuer", oidc.url)["id"]
    path = f"/sso/{provider_id}"
    body = {"provider": provider_id, "subject": "root-at-idp"}
    assert api(client, "post", f"/users/{root.id}/identities", system_key, body, host=OTHER_HOST).status_code == 201
    with Provider("oidc") as own:
        # The domain admin's own IdP, which would assert the system admin's subject.
        own.sign_in_as(sub="root-at-idp", email="anyone@example.com")
        for change in (
            {"issuer": own.url},
            {"token_url": own.url + "/token"},
            {"client_id": "someone-else"},
            {"profile_mappings": {"uid": ["email"]}},
        ):
            refused = api(client, "patch", path, admin_key, change)
            assert refused.status_code == 422, (change, refused.get_json())
            [name] = change
            assert "only a system admin" in refused.get_json()["fields"][name]
        [stored] = world.query(select(SsoProvider))
        assert (stored.issuer, stored.token_url, stored.client_id) == (oidc.url, None, "authsvc")
        # Other settings, and the same values again, stay the domain admin's to change.
        assert api(client, "patch", path, admin_key, {"name": "Renamed", "issuer": oidc.url}).status_code == 200
        moved = api(client, "patch", path, system_key, {"issuer": own.url}, host=OTHER_HOST)
        assert moved.status_code == 200, moved.get_json()


def test_a_domain_admin_repoints_a_provider_only_ordinary_users_sign_in_through(on_premises_app, world, setup, oidc):
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    admin_key = world.api_key(domain_admin, scopes="public admin", permission="admin")
    client = on_premises_app.test_client()
    provider_id = create_provider(on_premises_app.test_cli_runner(), "--issuer", oidc.url)["id"]
    oidc.sign_in_as(**PERSON)
    assert sign_in(client, provider_id)[1].status_code == 303
    changed = api(client, "patch", f"/sso/{provider_id}", admin_key, {"client_id": "new-client"})
    assert changed.status_code == 200, changed.get_json()


def test_a_second_account_at_the_same_provider_is_not_linked_by_email(client, world, setup, oidc, oidc_id):
    from authsvc.core.models import AuditRecord

    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    sign_in(client, oidc_id)
    client.delete_cookie("user", domain=HOST)
    oidc.sign_in_as(sub="ext-2", email="person@example.com", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert client.get_cookie("user", domain=HOST) is None
    assert [i.subject for i in world.query(select(ExternalIdentity))] == ["ext-1"]
    [refused] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    assert refused.details["reason"] == "already_linked"


# Provider records: the rules hold on every change (issue 13.4, 13.5).


@pytest.fixture
def admin_key(world, setup):
    tenant_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    return world.api_key(tenant_admin, scopes="public admin", permission="admin")


def test_a_patch_cannot_trust_email_from_any_entra_tenant(client, setup, admin_key):
    created = api(
        client,
        "post",
        "/sso",
        admin_key,
        {"name": "E", "client_id": "c", "client_secret": "s", "preset": "microsoft", "tenant": "organizations"},
    )
    assert created.status_code == 201
    path = f"/sso/{created.get_json()['id']}"
    turned_on = api(client, "patch", path, admin_key, {"trust_email": True})
    assert turned_on.status_code == 422
    assert "tid match rule" in turned_on.get_json()["fields"]["trust_email"]
    pinned = api(client, "patch", path, admin_key, {"trust_email": True, "match_rules": {"tid": ["t-1"]}})
    assert pinned.status_code == 200
    dropped = api(client, "patch", path, admin_key, {"match_rules": {}})
    assert dropped.status_code == 422
    assert api(client, "get", path, admin_key).get_json()["match_rules"] == {"tid": ["t-1"]}


@pytest.mark.parametrize(
    "name",
    [
        "state",
        "nonce",
        "redirect_uri",
        "client_id",
        "response_type",
        "code_challenge",
        "code_challenge_method",
        "scope",
        "State",
        "request",
        "request_uri",
        "response_mode",
    ],
)
def test_reserved_authorize_params_are_refused_on_create_and_update(client, runner, setup, admin_key, name):
    body = {"name": "IdP", "client_id": "c", "client_secret": "s", "issuer": "https://idp.example.com"}
    refused = api(client, "post", "/sso", admin_key, body | {"authorize_params": {name: "x"}})
    assert refused.status_code == 422
    assert name in refused.get_json()["fields"]["authorize_params"]
    created = api(client, "post", "/sso", admin_key, body | {"authorize_params": {"prompt": "login"}})
    changed = api(client, "patch", f"/sso/{created.get_json()['id']}", admin_key, {"authorize_params": {name: "x"}})
    assert changed.status_code == 422
    cli = runner.invoke(
        args=[
            "sso",
            "create",
            "--domain",
            HOST,
            "--name",
            "X",
            "--client-id",
            "c",
            "--client-secret",
            "s",
            "--issuer",
            "https://idp.example.com",
            "--param",
            f"{name}=x",
        ]
    )
    assert cli.exit_code != 0 and name in cli.stderr


def test_a_stored_reserved_param_does_not_replace_ours(client, world, oidc, oidc_id):
    world.update(SsoProvider, oidc_id, authorize_params={"state": "fixed", "redirect_uri": "https://evil.example/cb"})
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query["state"] != ["fixed"] and len(query["state"]) == 1
    assert query["redirect_uri"] == [f"https://{HOST}/auth/oauth2/callback"]


def test_a_stored_reserved_param_is_left_out_however_it_is_spaced_or_cased(client, world, oidc, oidc_id):
    world.update(SsoProvider, oidc_id, authorize_params={" State ": "fixed", "Response_Mode": "form_post", "x": "1"})
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert " State " not in query and "Response_Mode" not in query
    assert query["x"] == ["1"]


@pytest.mark.parametrize(
    "fields",
    [
        {"preset": "microsoft", "tenant": "Organizations"},
        {"preset": "microsoft", "tenant": "COMMON"},
        {"issuer": "https://login.microsoftonline.com/{tenantid}/v2.0"},
        {"issuer": "https://login.microsoftonline.com/organizations/v2.0"},
        {
            "authorize_url": "https://login.microsoftonline.com/Common/oauth2/v2.0/authorize",
            "token_url": "https://login.microsoftonline.com/Common/oauth2/v2.0/token",
            "userinfo_url": "https://graph.microsoft.com/v1.0/me",
        },
    ],
)
def test_trust_email_is_refused_for_any_multi_tenant_microsoft_provider(client, setup, admin_key, fields):
    body = {"name": "E", "client_id": "c", "client_secret": "s", "trust_email": True, **fields}
    refused = api(client, "post", "/sso", admin_key, body)
    assert refused.status_code == 422, refused.get_json()
    assert "tid match rule" in refused.get_json()["fields"]["trust_email"]
    pinned = api(client, "post", "/sso", admin_key, body | {"match_rules": {"tid": ["t-1"]}})
    assert pinned.status_code == 201, pinned.get_json()


def test_trust_email_is_allowed_for_a_single_microsoft_tenant(client, setup, admin_key):
    body = {"name": "E", "client_id": "c", "client_secret": "s", "trust_email": True}
    preset = api(client, "post", "/sso", admin_key, body | {"preset": "microsoft", "tenant": "contoso.example"})
    assert preset.status_code == 201, preset.get_json()
    issuer = "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"
    assert api(client, "post", "/sso", admin_key, body | {"issuer": issuer}).status_code == 201


def test_the_cli_refuses_trust_email_for_a_multi_tenant_issuer(runner, setup):
    args = ["--issuer", "https://login.microsoftonline.com/organizations/v2.0", "--trust-email"]
    refused = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "X", "--client-id", "c", "--client-secret", "s", *args]
    )
    assert refused.exit_code != 0
    assert "tid match rule" in refused.stderr


# Where the service goes for a tenant (issue 13.6).


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "https://127.0.0.1",
        "https://10.0.0.5",
        "https://localhost",
        "https://169.254.169.254",
        "https://[::1]",
        "https://[::ffff:192.168.1.1]",
        "http://idp.example.com",
        "https://100.64.0.1",
    ],
)
def test_a_domain_admin_cannot_register_a_provider_on_a_private_address(client, setup, admin_key, url):
    body = {"name": "IdP", "client_id": "c", "client_secret": "s", "issuer": url}
    response = api(client, "post", "/sso", admin_key, body)
    assert response.status_code == 422
    assert "issuer" in response.get_json()["fields"]


def test_only_a_system_admin_allows_a_provider_on_private_networks(client, world, setup, admin_key, oidc):
    body = {
        "name": "On-prem",
        "client_id": "authsvc",
        "client_secret": "s",
        "issuer": oidc.url,
        "allow_private_network": True,
    }
    refused = api(client, "post", "/sso", admin_key, body)
    assert refused.status_code == 422 and "allow_private_network" in refused.get_json()["fields"]
    from tests.conftest import OTHER_HOST

    system = world.user(world.domain(OTHER_HOST), "system@example.com", admin=True, system_admin=True)
    system_key = world.api_key(system, scopes="public admin", permission="admin")
    allowed = api(client, "post", "/sso", system_key, body | {"domain": str(setup.domain.id)}, host=OTHER_HOST)
    assert allowed.status_code == 201, allowed.get_json()
    assert allowed.get_json()["allow_private_network"] is True
    path = f"/sso/{allowed.get_json()['id']}"
    # A domain admin may rename it, but new URLs would be theirs: refused while they point inside.
    assert api(client, "patch", path, admin_key, {"name": "Renamed"}).status_code == 200
    moved = api(client, "patch", path, admin_key, {"token_url": oidc.url + "/token"})
    assert moved.status_code == 422 and "issuer" in moved.get_json()["fields"]
    assert world.query(select(SsoProvider.allow_private_network)) == [True]


def test_a_provider_kept_off_private_networks_is_refused_at_request_time(client, world, oidc, oidc_id):
    # Registered as on-premises, then the exception withdrawn (or a name that now resolves inside).
    world.update(SsoProvider, oidc_id, allow_private_network=False)
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 502
    assert "may not call" in response.get_data(as_text=True)
    assert oidc.discovery_requests == 0


def test_a_name_resolving_to_loopback_is_refused_on_the_resolved_address(client, world, oidc, oidc_id):
    port = urlsplit(oidc.url).port
    world.update(SsoProvider, oidc_id, allow_private_network=False, issuer=f"https://localhost:{port}")
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 502
    assert "may not call" in response.get_data(as_text=True)
    assert oidc.discovery_requests == 0


def test_a_provider_redirect_is_not_followed(client, oidc, oidc_id):
    oidc.fault = "redirect"
    response = client.get("/auth/oauth2", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 502
    assert oidc.discovery_requests == 1


def test_the_operator_setting_allows_every_provider_on_private_networks(make_app, setup, oidc):
    app = make_app(AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS=True)
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url, on_premises=False)["id"]
    response = app.test_client().get(
        "/auth/oauth2", query_string={"id": provider_id}, headers=headers(), base_url=f"https://{HOST}"
    )
    assert response.status_code == 302


def test_the_cli_needs_allow_private_network_for_a_loopback_provider(runner, setup, oidc):
    args = [
        "sso",
        "create",
        "--domain",
        HOST,
        "--name",
        "X",
        "--client-id",
        "c",
        "--client-secret",
        "s",
        "--issuer",
        oidc.url,
    ]
    refused = runner.invoke(args=args)
    assert refused.exit_code != 0 and "--allow-private-network" in refused.stderr
    assert runner.invoke(args=[*args, "--allow-private-network"]).exit_code == 0


# ID token checks (issue 13.12, 13.13).


def test_an_id_token_for_several_audiences_needs_our_azp(client, world, oidc, oidc_id):
    oidc.id_token_overrides = {"aud": ["authsvc", "another-client"]}
    assert sign_in(client, oidc_id)[1].status_code == 502
    oidc.id_token_overrides = {"aud": ["authsvc", "another-client"], "azp": "another-client"}
    assert sign_in(client, oidc_id)[1].status_code == 502
    assert world.query(select(ExternalIdentity)) == []
    oidc.id_token_overrides = {"aud": ["authsvc", "another-client"], "azp": "authsvc"}
    assert sign_in(client, oidc_id)[1].status_code == 303


def test_a_rotated_provider_key_is_refetched_once_on_an_unknown_kid(make_app, setup, oidc):
    from tests.conftest import HttpsClient

    app = make_app(AUTHSVC_SSO_JWKS_REFETCH_INTERVAL=2)
    app.test_client_class = HttpsClient
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url)["id"]
    client = app.test_client()
    assert sign_in(client, provider_id)[1].status_code == 303
    assert oidc.jwks_requests == 1
    oidc.rotate_key()
    assert sign_in(client, provider_id)[1].status_code == 303, "the new key is fetched"
    assert oidc.jwks_requests == 2
    oidc.rotate_key()
    assert sign_in(client, provider_id)[1].status_code == 502, "at most one refetch per interval"
    assert oidc.jwks_requests == 2
    time.sleep(2.1)
    assert sign_in(client, provider_id)[1].status_code == 303
    assert oidc.jwks_requests == 3


def test_a_rotated_key_is_refetched_once_for_an_id_token_without_kid(make_app, setup, oidc):
    from tests.conftest import HttpsClient

    app = make_app(AUTHSVC_SSO_JWKS_REFETCH_INTERVAL=60)
    app.test_client_class = HttpsClient
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url)["id"]
    client = app.test_client()
    oidc.omit_kid = True
    assert sign_in(client, provider_id)[1].status_code == 303
    assert oidc.jwks_requests == 1
    oidc.rotate_key()
    assert sign_in(client, provider_id)[1].status_code == 303, "the new key is fetched"
    assert oidc.jwks_requests == 2
    oidc.rotate_key()
    assert sign_in(client, provider_id)[1].status_code == 502, "at most one refetch per interval"
    assert oidc.jwks_requests == 2
