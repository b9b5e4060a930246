"""Multi-factor sign-in: enrolling an authenticator app, and the second step of /auth/signin and of the
sign-in page, with its codes (computed by pyotp, as a phone would), recovery codes and passkey answers: each
code good once, the step's token bound to its browser, wrong codes locked out and rate limited.

The domain's policy and resets are in tests/api/auth/test_mfa_policy.py, the second factor in OpenID Connect
(amr, acr_values=mfa) in tests/api/auth/test_mfa_oidc.py; helpers in tests/helpers/mfa.py.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord, MfaFactor, RecoveryCode
from tests.helpers import HOST, PASSWORD, headers, stored_session
from tests.helpers.mfa import (
    enrol,
    fresh_code,
    mfa_token,
    page_mfa_token,
    second_step,
    signin_password,
    totp_code,
    totp_secret,
)

# Enrolment
from tests.helpers.pages import csrf_token, submit_login

# Enrolment


def test_enrolment_stores_the_secret_encrypted_and_ten_recovery_codes_as_digests(app, client, setup, world):
    secret, codes = enrol(client)
    assert len(codes) == 10 and len(set(codes)) == 10
    factors = world.query(select(MfaFactor))
    assert [f.confirmed for f in factors] == [True]
    assert secret not in factors[0].secret, "the TOTP secret is encrypted at rest"
    digests = world.query(select(RecoveryCode.digest))
    assert len(digests) == 10
    assert not {c.replace("-", "") for c in codes} & set(digests)


def test_a_wrong_first_code_does_not_confirm_the_app(client, setup, world):
    assert signin_password(client).status_code == 202
    page = client.get("/auth/mfa/totp", headers=headers())
    wrong = str((int(totp_code(totp_secret(page))) + 1) % 1_000_000).zfill(6)
    answer = client.post("/auth/mfa/totp", data={"csrf_token": csrf_token(page), "code": wrong}, headers=headers())
    assert answer.status_code == 401
    assert world.query(select(MfaFactor.confirmed)) == [False]


def test_removing_a_factor_ends_the_users_other_sessions(app, client, setup, enrolled):
    secret, _ = enrolled
    used: set[str] = set()
    other = app.test_client()
    for browser in (client, other):
        token = browser.post(
            "/auth/signin",
            json={"email": "person@example.com", "password": PASSWORD},
            headers=headers(),
            base_url=f"https://{HOST}",
        ).get_json()["mfa_token"]
        assert (
            browser.post(
                "/auth/signin/mfa",
                json={"mfa_token": token, "code": fresh_code(secret, used)},
                headers=headers(),
                base_url=f"https://{HOST}",
            ).status_code
            == 202
        )
    settings = client.get("/auth/mfa", headers=headers())
    factor_id = re.search(r"/auth/mfa/(\d+)/remove", settings.get_data(as_text=True)).group(1)
    removed = client.post(f"/auth/mfa/{factor_id}/remove", data={"csrf_token": csrf_token(settings)}, headers=headers())
    assert removed.status_code == 303
    assert client.get("/auth/mfa", headers=headers()).status_code == 200, "this browser keeps a new session"
    assert other.get("/auth/mfa", headers=headers(), base_url=f"https://{HOST}").status_code == 303
    assert signin_password(client).status_code == 202, "no factor left: the password alone signs in again"


# The second step of /auth/signin


def test_an_enrolled_user_gets_no_session_until_the_code_passes(client, setup, enrolled):
    secret, _ = enrolled
    first = signin_password(client)
    assert first.status_code == 401
    body = first.get_json()
    assert body["error"] == "mfa_required"
    assert body["methods"] == ["totp", "recovery_code"]
    assert client.get_cookie("user", domain=HOST) is None
    second = second_step(client, body["mfa_token"], fresh_code(secret, set()))
    assert second.status_code == 202, second.get_json()
    assert second.get_json()["email"] == "person@example.com"
    assert client.get_cookie("user", domain=HOST) is not None


def test_the_session_records_the_second_factor(app, client, setup, enrolled):
    secret, _ = enrolled
    token = mfa_token(client)
    second_step(client, token, fresh_code(secret, set()))
    with app.app_context():
        session = stored_session(client.get_cookie("user", domain=HOST).value)
    assert session["amr"] == ["pwd", "otp", "mfa"]


def test_a_code_is_good_once(client, setup, enrolled):
    secret, _ = enrolled
    used: set[str] = set()
    code = fresh_code(secret, used)
    token = mfa_token(client)
    assert second_step(client, token, code).status_code == 202
    token = mfa_token(client)
    again = second_step(client, token, code)
    assert again.status_code == 401
    assert again.get_json()["error"] == "invalid_mfa_code"


def test_the_mfa_token_is_single_use_and_bound_to_the_browser(app, client, setup, enrolled):
    secret, _ = enrolled
    used: set[str] = set()
    token = mfa_token(client)
    other_browser = app.test_client()
    stolen = second_step(other_browser, token, fresh_code(secret, used), base_url=f"https://{HOST}")
    assert stolen.status_code == 401
    assert stolen.get_json()["error"] == "invalid_mfa_token"
    code = fresh_code(secret, used)
    assert second_step(client, token, code).status_code == 202
    replay = client.post("/auth/signin/mfa", data={"mfa_token": token, "code": code}, headers=headers())
    assert replay.status_code == 401
    assert replay.get_json()["error"] == "invalid_mfa_token"


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"mfa_token": null, "code": "123456"}', b'{"mfa_token": 1, "code": []}', b"[]"]
)
def test_bad_input_at_the_second_step_is_a_400(client, setup, body):
    answer = client.post("/auth/signin/mfa", data=body, content_type="application/json", headers=headers())
    assert answer.status_code == 400
    assert answer.get_json()["error"] == "invalid_request"


def test_a_recovery_code_signs_in_once_and_is_audited(client, setup, world, enrolled):
    _, codes = enrolled
    token = mfa_token(client)
    used = second_step(client, token, codes[0].lower())
    assert used.status_code == 202
    assert used.get_json()["notice"] == "recovery_code_used"
    token = mfa_token(client)
    again = second_step(client, token, codes[0])
    assert again.status_code == 401
    events = world.query(select(AuditRecord.event))
    assert events.count("mfa.recovery_code_used") == 1


def test_a_forged_passkey_answer_is_refused_and_counted(client, setup, world, enrolled):
    token = mfa_token(client)
    forged = {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": "e30"}}
    answer = client.post("/auth/signin/mfa", json={"mfa_token": token, "webauthn": forged}, headers=headers())
    assert answer.status_code == 401
    assert answer.get_json()["error"] == "invalid_mfa_code"
    assert client.get_cookie("user", domain=HOST) is None
    reasons = [r.details.get("reason") for r in world.query(select(AuditRecord)) if r.event == "signin.failed"]
    assert reasons == ["invalid_mfa_code"]


@pytest.mark.parametrize(
    "answer",
    [
        {"id": "Y3JlZA"},
        {"id": "Y3JlZA", "rawId": "Y3JlZA", "type": "public-key", "response": {"clientDataJSON": "e30"}},
        {"id": "Y3JlZA", "rawId": "Y3JlZA", "type": "public-key", "response": "x"},
    ],
)
def test_a_malformed_answer_for_a_real_passkey_is_a_401_not_a_500(client, setup, world, answer):
    """The credential ids are in the public options: a malformed answer naming one is refused cleanly."""
    world.save(
        MfaFactor(
            user_id=setup.person.id,
            kind="webauthn",
            name="Key",
            credential_id="Y3JlZA",
            public_key="pQECAyYgASFYIA",
            confirmed=True,
        )
    )
    token = mfa_token(client)
    options = client.post("/auth/signin/mfa/webauthn", json={"mfa_token": token}, headers=headers())
    assert options.status_code == 200
    assert options.get_json()["allowCredentials"][0]["id"] == "Y3JlZA"
    refused = client.post("/auth/signin/mfa", json={"mfa_token": token, "webauthn": answer}, headers=headers())
    assert refused.status_code == 401
    assert refused.get_json()["error"] == "invalid_mfa_code"


def test_wrong_codes_count_towards_the_lockout(make_app, setup):
    # The setup's records live in the shared database; this app only changes the lockout threshold.
    app = make_app(AUTHSVC_LOCKOUT_THRESHOLD=3, AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD=100)
    from tests.helpers import HttpsClient

    app.test_client_class = HttpsClient
    client = app.test_client()
    secret, _ = enrol(client)
    client.delete_cookie("user", domain=HOST)
    token = mfa_token(client)
    for _ in range(3):
        wrong = second_step(client, token, "000000")
        assert wrong.status_code == 401
    locked = second_step(client, token, totp_code(secret))
    assert locked.status_code == 429
    assert signin_password(client).status_code == 429, "the account's password sign-in is locked too"


def test_second_step_attempts_are_rate_limited_per_address(make_app, setup):
    from tests.helpers import HttpsClient

    app = make_app(AUTHSVC_SIGNIN_RATE_LIMIT="3/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    secret, _ = enrol(client)
    client.delete_cookie("user", domain=HOST)
    token = mfa_token(client)
    answers = [second_step(client, token, "000000").status_code for _ in range(4)]
    assert answers == [401, 401, 401, 429]


# The sign-in page


def test_the_sign_in_page_asks_for_the_code_then_signs_in(client, setup, enrolled):
    secret, _ = enrolled
    page = submit_login(client, next_url="/auth/login")
    assert page.status_code == 200
    assert 'name="mfa_token"' in page.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None
    token = page_mfa_token(page)
    done = client.post(
        "/auth/login/mfa",
        data={"csrf_token": csrf_token(page), "mfa_token": token, "code": fresh_code(secret, set())},
        headers=headers(),
    )
    assert done.status_code == 303
    assert done.headers["Location"].endswith("/auth/login")
    assert client.get_cookie("user", domain=HOST) is not None


def test_the_code_page_refuses_a_missing_csrf_token(client, setup, enrolled):
    secret, _ = enrolled
    page = submit_login(client)
    token = page_mfa_token(page)
    refused = client.post("/auth/login/mfa", data={"mfa_token": token, "code": totp_code(secret)}, headers=headers())
    assert refused.status_code == 400
    assert client.get_cookie("user", domain=HOST) is None
