"""Single sign-on (docs/platform.md, docs/sso.md) against real providers on loopback: the sign-in itself.

The start and the callback, the flow's state, what the provider answers or fails to, and the checks of
its ID token. Fixtures and helpers are in tests/helpers/sso.py. Which local account
a sign-in reaches is in tests/api/sso/test_sso_linking.py; the provider's tokens handed to applications in
tests/api/sso/test_sso_resource_tokens.py; provider records in tests/api/sso/test_sso_providers.py and
tests/api/sso/test_sso_microsoft.py.
"""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import ExternalIdentity, User
from tests.helpers import HOST, OTHER_HOST, PASSWORD, headers
from tests.helpers.sso import PERSON, create_provider, sign_in

# The start and the callback


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


def test_the_sign_in_page_has_a_button_per_provider(client, oidc_id, oauth2_id):
    html = client.get("/auth/login", query_string={"continue": "/x"}, headers=headers()).get_data(as_text=True)
    assert html.count("Sign in with Corp") == 2
    assert f'href="/auth/oauth2?id={oidc_id}&amp;continue=/x"' in html


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


# The flow's state


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


# The provider's answers and failures


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
    # The timeout also bounds the start's discovery fetch from the provider in this process:
    # 2 s leaves a loaded machine room for that one (1 s did not, once, in CI).
    app = make_app(AUTHSVC_SSO_TIMEOUT=2)
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url)["id"]
    oidc.fault, oidc.slow_seconds = "slow", 4.5
    client = app.test_client()
    start = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers(), base_url=f"https://{HOST}")
    assert start.status_code == 302, start.get_data(as_text=True)
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    callback = client.get(back.path, query_string=back.query, headers=headers(), base_url=f"https://{HOST}")
    assert callback.status_code == 502


def test_a_provider_that_trickles_its_token_answer_is_cut_off_at_the_deadline(make_app, setup, oidc):
    # A byte every 0.2 s never trips the 10 s read timeout: only the outbound deadline (1 s) ends it.
    app = make_app(AUTHSVC_OUTBOUND_DEADLINE=1)
    provider_id = create_provider(app.test_cli_runner(), "--issuer", oidc.url)["id"]
    oidc.fault = "trickle"
    client = app.test_client()
    start = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers(), base_url=f"https://{HOST}")
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    started = time.monotonic()
    callback = client.get(back.path, query_string=back.query, headers=headers(), base_url=f"https://{HOST}")
    assert callback.status_code == 502
    assert time.monotonic() - started < 3


def test_a_provider_answer_larger_than_a_megabyte_is_a_502_and_signs_nobody_in(client, world, oauth2, oauth2_id):
    oauth2.sign_in_as(id="big", email="ada@example.com", name="Ada", padding="x" * (1024 * 1024))
    _, callback = sign_in(client, oauth2_id)
    assert callback.status_code == 502
    assert "did not answer properly" in callback.get_data(as_text=True)
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_an_unreachable_provider_is_a_502_page(client, runner, setup):
    # A port bound but not listening refuses every connection, and no other process can take it
    # meanwhile (a closed server's port could be, and answer in its place).
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
        provider_id = create_provider(runner, "--issuer", url)["id"]
        response = client.get("/auth/oauth2", query_string={"id": provider_id}, headers=headers())
    assert response.status_code == 502
    assert "cannot be reached" in response.get_data(as_text=True)


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


# ID token checks


@pytest.mark.parametrize("fault", ["bad_signature", "wrong_aud", "wrong_nonce", "wrong_iss", "expired"])
def test_an_id_token_that_fails_verification_signs_nobody_in(client, world, oidc, oidc_id, fault):
    oidc.fault = fault
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 502
    assert "did not answer properly" in callback.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_an_id_token_for_several_audiences_needs_our_azp(client, world, oidc, oidc_id):
    oidc.id_token_overrides = {"aud": ["authsvc", "another-client"]}
    assert sign_in(client, oidc_id)[1].status_code == 502
    oidc.id_token_overrides = {"aud": ["authsvc", "another-client"], "azp": "another-client"}
    assert sign_in(client, oidc_id)[1].status_code == 502
    assert world.query(select(ExternalIdentity)) == []
    oidc.id_token_overrides = {"aud": ["authsvc", "another-client"], "azp": "authsvc"}
    assert sign_in(client, oidc_id)[1].status_code == 303


def test_a_rotated_provider_key_is_refetched_once_on_an_unknown_kid(make_app, setup, oidc):
    from tests.helpers import HttpsClient

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
    from tests.helpers import HttpsClient

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
