"""Signing in with a passkey alone: options naming no credential, whose challenge is bound to the
browser and good once; the answer finds its user by credential id and user handle within the request's
domain; every refusal (unknown passkey, bad signature, replay, another domain, a disabled account) gives
the one 401; the session's ``amr`` names the passkey and counts as multi-factor.

Answers come from a software authenticator (tests/helpers/passkeys.py); the browser's side, conditional
UI included, is tests/e2e/test_mfa_browser.py. Passkeys as a second factor: tests/api/auth/test_mfa.py.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, Domain, MfaFactor, User
from tests.helpers import HOST, OTHER_HOST, headers, stored_session
from tests.helpers.pages import csrf_token, login_page
from tests.helpers.passkeys import (
    Authenticator,
    b64url,
    register,
    signin_options,
    signin_with,
    unb64url,
)

PASSKEY_AMR = ["hwk", "user", "mfa"]
NOT_RECOGNISED = {
    "error": "invalid_credentials",
    "error_description": "The passkey was not recognised. Try again, or sign in with your password.",
}


@pytest.fixture
def passkey(client, setup):
    """The person's passkey, registered on the settings page; the client is signed out again."""
    authenticator = Authenticator()
    register(client, authenticator)
    return authenticator


def _person(world, setup) -> User:
    return world.query(select(User).where(User.id == setup.person.id))[0]


def _failures(world) -> list[str]:
    return [r.details.get("reason") for r in world.query(select(AuditRecord)) if r.event == "signin.failed"]


# Registration


def test_registration_asks_for_a_discoverable_credential_under_a_random_stored_handle(client, setup, world):
    """The handle is what a discoverable passkey gives back at sign-in: random, never the address or the row's id."""
    first = Authenticator()
    options = register(client, first)
    assert options["authenticatorSelection"]["residentKey"] in ("required", "preferred")
    handle = _person(world, setup).passkey_handle
    assert handle == options["user"]["id"]
    assert len(unb64url(handle)) == 32
    assert b"person" not in unb64url(handle) and str(setup.person.id).encode() != unb64url(handle)
    # The account has a second factor now: the next passkey is added in a session the first one started.
    assert signin_with(client, first.get(signin_options(client))).status_code == 202
    again = register(client, Authenticator(), signed_in=True)
    assert again["user"]["id"] == handle, "a user has one handle: an authenticator keeps one entry for the account"
    assert again["excludeCredentials"], "the first passkey is excluded"


# Signing in


def test_a_passkey_alone_signs_in_with_a_multi_factor_session(client, setup, world, passkey):
    options = signin_options(client)
    assert options["allowCredentials"] == []
    assert options["userVerification"] == "required"
    assert options["rpId"] == HOST
    assert client.get_cookie("passkey", domain=HOST, path="/auth") is not None
    answer = signin_with(client, passkey.get(options))
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["email"] == "person@example.com"
    assert answer.headers["Cache-Control"].startswith("no-store")
    session = client.get_cookie("user", domain=HOST)
    with client.application.app_context():
        assert stored_session(session.value)["amr"] == PASSKEY_AMR
    assert client.get_cookie("passkey", domain=HOST, path="/auth") is None, "the binding is spent"
    [success] = [r for r in world.query(select(AuditRecord)) if r.event == "signin.succeeded"][-1:]
    assert success.details["method"] == "passkey" and success.details["via"] == "passkey"
    assert world.query(select(MfaFactor.sign_count)) == [passkey.sign_count]


def test_continue_is_followed_when_it_stays_on_the_issuer(client, setup, passkey):
    inside = signin_with(client, passkey.get(signin_options(client)), **{"continue": "/auth/mfa"})
    assert inside.status_code == 303 and inside.headers["Location"] == "/auth/mfa"
    client.delete_cookie("user", domain=HOST)
    outside = signin_with(client, passkey.get(signin_options(client)), **{"continue": "https://evil.example/x"})
    assert outside.status_code == 202, "another origin is no continuation"


def test_a_passkey_satisfies_the_domains_mfa_policy_without_a_second_step(client, setup, world, passkey):
    world.update(Domain, setup.domain.id, mfa_require="all")
    answer = signin_with(client, passkey.get(signin_options(client)))
    assert answer.status_code == 202, answer.get_json()
    assert client.get_cookie("user", domain=HOST) is not None


def test_a_passkey_registered_before_random_handles_still_signs_in(client, setup, world):
    """Passkeys made when the handle was ``authsvc-user-<id>`` keep working, alone and as a second factor."""
    old = Authenticator(user_handle=f"authsvc-user-{setup.person.id}".encode())
    world.save(
        MfaFactor(
            user_id=setup.person.id,
            kind="webauthn",
            name="Old key",
            credential_id=b64url(old.credential_id),
            public_key=b64url(old.cose_key()),
            confirmed=True,
        )
    )
    assert signin_with(client, old.get(signin_options(client))).status_code == 202


# Refusals: one answer


def _refused(answer) -> None:
    assert answer.status_code == 401, answer.get_data(as_text=True)
    assert answer.get_json() == NOT_RECOGNISED


def test_an_unknown_passkey_and_a_bad_signature_get_the_same_answer(client, setup, world, passkey):
    stranger = Authenticator(user_handle=unb64url(_person(world, setup).passkey_handle))
    _refused(signin_with(client, stranger.get(signin_options(client))))
    forged = passkey.get(signin_options(client))
    forged["response"]["signature"] = b64url(b"\x30\x06\x02\x01\x01\x02\x01\x01")
    _refused(signin_with(client, forged))
    assert client.get_cookie("user", domain=HOST) is None
    assert _failures(world) == ["invalid_passkey", "invalid_passkey"]


def test_a_passkey_naming_another_user_handle_is_refused(client, setup, world, passkey):
    passkey.user_handle = b"x" * 32
    _refused(signin_with(client, passkey.get(signin_options(client))))


def test_a_replayed_answer_is_refused(client, setup, passkey):
    """The challenge is taken by the first answer: the same answer again has none left to match."""
    answer = passkey.get(signin_options(client))
    assert signin_with(client, answer).status_code == 202
    client.delete_cookie("user", domain=HOST)
    _refused(signin_with(client, answer))
    signin_options(client)  # a new challenge does not revive the old answer
    _refused(signin_with(client, answer))


def test_an_answer_from_another_browser_is_refused(app, client, setup, passkey):
    """The challenge is bound to the browser that asked for the options (the passkey cookie)."""
    answer = passkey.get(signin_options(client))
    other = app.test_client()
    _refused(
        other.post("/auth/signin/passkey", json={"credential": answer}, headers=headers(), base_url=f"https://{HOST}")
    )


def test_a_disabled_user_is_refused_with_the_same_answer(client, setup, world, passkey):
    world.update(User, setup.person.id, disabled=True)
    _refused(signin_with(client, passkey.get(signin_options(client))))
    assert _failures(world) == ["disabled"]


def test_an_answer_without_user_verification_is_refused(client, setup, passkey):
    """The passkey alone is the whole sign-in: the PIN or biometric is its second factor."""
    _refused(signin_with(client, passkey.get(signin_options(client), verified=False)))


def test_a_cloned_passkey_whose_counter_went_back_is_refused(client, setup, passkey):
    assert signin_with(client, passkey.get(signin_options(client))).status_code == 202
    client.delete_cookie("user", domain=HOST)
    passkey.sign_count = 0
    _refused(signin_with(client, passkey.get(signin_options(client))))


def test_a_passkey_of_one_domain_never_signs_into_another(client, setup, world, passkey):
    other = world.domain(OTHER_HOST)
    world.user(other, "person@example.com")
    for rp_id in (HOST, OTHER_HOST):
        options = signin_options(client, OTHER_HOST)
        answer = passkey.get(options, rp_id=rp_id, origin=f"https://{OTHER_HOST}")
        _refused(signin_with(client, answer, OTHER_HOST))
    assert client.get_cookie("user", domain=OTHER_HOST) is None


def test_an_answer_for_another_domains_options_is_refused(client, setup, world, passkey):
    """Options (and their challenge) of domain B do not serve a sign-in at domain A."""
    world.domain(OTHER_HOST)
    options = signin_options(client, OTHER_HOST)
    cookie = client.get_cookie("passkey", domain=OTHER_HOST, path="/auth")
    client.set_cookie("passkey", cookie.value, domain=HOST, path="/auth")
    _refused(signin_with(client, passkey.get({**options, "rpId": HOST})))


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"credential": "x"},
        {"credential": {"id": "AAAA"}, "continue": 5},
    ],
)
def test_malformed_requests_are_a_400(client, setup, body):
    signin_options(client)
    answer = client.post("/auth/signin/passkey", json=body, headers=headers())
    assert answer.status_code == 400
    assert answer.get_json()["error"] == "invalid_request"


def test_a_form_body_is_refused_only_json_signs_in(client, setup, passkey):
    """A cross-site form cannot post JSON: the programmatic sign-in reads nothing else."""
    answer = passkey.get(signin_options(client))
    posted = client.post("/auth/signin/passkey", data={"credential": json.dumps(answer)}, headers=headers())
    assert posted.status_code == 415
    assert client.get_cookie("user", domain=HOST) is None


@pytest.mark.parametrize(
    "credential",
    [
        {"id": "AAAA"},
        {"id": "AAAA", "response": {"userHandle": "!!"}},
        {
            "id": "AAAA",
            "rawId": "AAAA",
            "type": "public-key",
            "response": {"clientDataJSON": "e30", "userHandle": "eA"},
        },
    ],
)
def test_malformed_answers_are_refused_not_a_500(client, setup, passkey, credential):
    signin_options(client)
    _refused(signin_with(client, credential))


def test_a_locked_out_account_is_refused_even_with_its_passkey(make_app, setup):
    from tests.helpers import HttpsClient

    app = make_app(AUTHSVC_LOCKOUT_THRESHOLD=2, AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD=100)
    app.test_client_class = HttpsClient
    client = app.test_client()
    authenticator = Authenticator()
    register(client, authenticator)
    for _ in range(2):
        wrong = client.post("/auth/signin", json={"email": "person@example.com", "password": "no"}, headers=headers())
        assert wrong.status_code == 401
    locked = signin_with(client, authenticator.get(signin_options(client)))
    assert locked.status_code == 429
    assert locked.get_json()["error"] == "too_many_attempts"


# OpenID Connect


def test_the_id_token_names_the_passkey_in_amr_and_it_satisfies_acr_values_mfa(client, oidc):
    from tests.helpers import authorize, location_params
    from tests.helpers.id_tokens import exchange, verify

    authenticator = Authenticator()
    register(client, authenticator)
    assert signin_with(client, authenticator.get(signin_options(client))).status_code == 202
    answer = authorize(client, oidc.app.client_id, scope="openid", acr_values="mfa", state="s")
    assert answer.status_code == 302, "no second prompt: the passkey was the second factor"
    code = location_params(answer)["code"]
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert claims["amr"] == PASSKEY_AMR
    assert claims["acr"] == "mfa"


# The sign-in page


def test_the_sign_in_page_offers_passkeys_in_the_email_autofill_and_a_button(client, setup):
    page = login_page(client, "/auth/mfa")
    body = page.get_data(as_text=True)
    assert 'autocomplete="username webauthn"' in body
    assert 'id="passkey-start"' in body and "Sign in with a passkey" in body
    assert '<script src="/auth/static/passkey-signin.js' in body or 'src="/static/passkey-signin.js' in body
    assert "<script>" not in body, "no inline script"
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert client.get_cookie("passkey", domain=HOST, path="/auth") is None, "the page itself starts no ceremony"


def _page_signin(client, authenticator, next_url: str):
    page = login_page(client, next_url)
    answer = authenticator.get(signin_options(client))
    form = {"csrf_token": csrf_token(page), "continue": next_url, "webauthn": json.dumps(answer)}
    return client.post("/auth/login/passkey", data=form, headers=headers())


def test_the_sign_in_page_signs_in_with_a_passkey_and_goes_on(client, setup, passkey):
    done = _page_signin(client, passkey, "/auth/mfa")
    assert done.status_code == 303 and done.headers["Location"] == "/auth/mfa"
    assert client.get_cookie("user", domain=HOST) is not None


def test_the_sign_in_page_never_goes_on_to_another_origin(client, setup, passkey):
    done = _page_signin(client, passkey, "https://evil.example/")
    assert done.status_code == 303 and done.headers["Location"] == "/auth/login"


def test_the_sign_in_pages_refusal_is_the_page_with_the_message(client, setup, passkey):
    refused = _page_signin(client, Authenticator(user_handle=b"z" * 32), "/auth/mfa")
    assert refused.status_code == 401
    assert "The passkey was not recognised" in refused.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None


def test_the_sign_in_pages_passkey_form_needs_its_csrf_token(client, setup, passkey):
    answer = passkey.get(signin_options(client))
    posted = client.post("/auth/login/passkey", data={"webauthn": json.dumps(answer)}, headers=headers())
    assert posted.status_code == 400
    assert client.get_cookie("user", domain=HOST) is None
