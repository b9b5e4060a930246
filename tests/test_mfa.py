"""Multi-factor sign-in: authenticator apps (codes computed by pyotp, as a phone would), recovery
codes, the second step of /auth/signin and of the sign-in page, the domain's policy and resets."""

from __future__ import annotations

import html
import json
import re
import time

import pyotp
import pytest
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import AuditRecord, Domain, MfaFactor, RecoveryCode, User
from tests.conftest import HOST, PASSWORD, headers
from tests.test_pages import csrf_token, submit_login


def _secret(page) -> str:
    match = re.search(r'<code class="secret">([A-Z2-7]+)</code>', page.get_data(as_text=True))
    assert match, page.get_data(as_text=True)
    return match.group(1)


def _recovery_codes(page) -> list[str]:
    return re.findall(r"<li><code>([0-9A-Z]{5}-[0-9A-Z]{5})</code></li>", page.get_data(as_text=True))


def _code(secret: str, offset: int = 0) -> str:
    return pyotp.TOTP(secret).at(time.time() + offset)


def signin_password(client, email="person@example.com", password=PASSWORD):
    return client.post("/auth/signin", json={"email": email, "password": password}, headers=headers())


def enrol(client, email="person@example.com") -> tuple[str, list[str]]:
    """Sign in with the password, add an authenticator on the settings page; return its secret and codes."""
    assert signin_password(client, email).status_code == 202
    page = client.get("/auth/mfa/totp", headers=headers())
    assert page.status_code == 200
    assert "<svg" in page.get_data(as_text=True), "the QR code is rendered here"
    secret = _secret(page)
    # The previous step's code (still accepted, RFC 6238's window): the current and next stay fresh for the test.
    done = client.post(
        "/auth/mfa/totp", data={"csrf_token": csrf_token(page), "code": _code(secret, -30)}, headers=headers()
    )
    assert done.status_code == 200, done.get_data(as_text=True)
    codes = _recovery_codes(done)
    return secret, codes


@pytest.fixture
def enrolled(client, setup):
    secret, codes = enrol(client)
    client.delete_cookie("user", domain=HOST)
    return secret, codes


def fresh_code(secret: str, used: set[str]) -> str:
    """A current code not used yet (a code is good once): the next step's if the current one is spent."""
    for offset in (0, 30):
        code = _code(secret, offset)
        if code not in used:
            used.add(code)
            return code
    raise AssertionError("no fresh code")


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
    wrong = str((int(_code(_secret(page))) + 1) % 1_000_000).zfill(6)
    answer = client.post("/auth/mfa/totp", data={"csrf_token": csrf_token(page), "code": wrong}, headers=headers())
    assert answer.status_code == 401
    assert world.query(select(MfaFactor.confirmed)) == [False]


def test_an_enrolled_user_gets_no_session_until_the_code_passes(client, setup, enrolled):
    secret, _ = enrolled
    first = signin_password(client)
    assert first.status_code == 401
    body = first.get_json()
    assert body["error"] == "mfa_required"
    assert body["methods"] == ["totp", "recovery_code"]
    assert client.get_cookie("user", domain=HOST) is None
    second = client.post(
        "/auth/signin/mfa", json={"mfa_token": body["mfa_token"], "code": fresh_code(secret, set())}, headers=headers()
    )
    assert second.status_code == 202, second.get_json()
    assert second.get_json()["email"] == "person@example.com"
    assert client.get_cookie("user", domain=HOST) is not None


def test_the_session_records_the_second_factor(app, client, setup, enrolled):
    secret, _ = enrolled
    token = signin_password(client).get_json()["mfa_token"]
    client.post("/auth/signin/mfa", json={"mfa_token": token, "code": fresh_code(secret, set())}, headers=headers())
    with app.app_context():
        session = store.get_session(client.get_cookie("user", domain=HOST).value)
    assert session["amr"] == ["pwd", "otp", "mfa"]


def test_a_code_is_good_once(client, setup, enrolled):
    secret, _ = enrolled
    used: set[str] = set()
    code = fresh_code(secret, used)
    token = signin_password(client).get_json()["mfa_token"]
    assert (
        client.post("/auth/signin/mfa", json={"mfa_token": token, "code": code}, headers=headers()).status_code == 202
    )
    token = signin_password(client).get_json()["mfa_token"]
    again = client.post("/auth/signin/mfa", json={"mfa_token": token, "code": code}, headers=headers())
    assert again.status_code == 401
    assert again.get_json()["error"] == "invalid_mfa_code"


def test_the_mfa_token_is_single_use_and_bound_to_the_browser(app, client, setup, enrolled):
    secret, _ = enrolled
    used: set[str] = set()
    token = signin_password(client).get_json()["mfa_token"]
    other_browser = app.test_client()
    stolen = other_browser.post(
        "/auth/signin/mfa",
        json={"mfa_token": token, "code": fresh_code(secret, used)},
        headers=headers(),
        base_url=f"https://{HOST}",
    )
    assert stolen.status_code == 401
    assert stolen.get_json()["error"] == "invalid_mfa_token"
    code = fresh_code(secret, used)
    assert (
        client.post("/auth/signin/mfa", json={"mfa_token": token, "code": code}, headers=headers()).status_code == 202
    )
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


def test_wrong_codes_count_towards_the_lockout(make_app, setup):
    # The setup's records live in the shared database; this app only changes the lockout threshold.
    app = make_app(AUTHSVC_LOCKOUT_THRESHOLD=3, AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD=100)
    from tests.conftest import HttpsClient

    app.test_client_class = HttpsClient
    client = app.test_client()
    secret, _ = enrol(client)
    client.delete_cookie("user", domain=HOST)
    token = signin_password(client).get_json()["mfa_token"]
    for _ in range(3):
        wrong = client.post("/auth/signin/mfa", json={"mfa_token": token, "code": "000000"}, headers=headers())
        assert wrong.status_code == 401
    locked = client.post("/auth/signin/mfa", json={"mfa_token": token, "code": _code(secret)}, headers=headers())
    assert locked.status_code == 429
    assert signin_password(client).status_code == 429, "the account's password sign-in is locked too"


def test_a_recovery_code_signs_in_once_and_is_audited(client, setup, world, enrolled):
    _, codes = enrolled
    token = signin_password(client).get_json()["mfa_token"]
    used = client.post("/auth/signin/mfa", json={"mfa_token": token, "code": codes[0].lower()}, headers=headers())
    assert used.status_code == 202
    assert used.get_json()["notice"] == "recovery_code_used"
    token = signin_password(client).get_json()["mfa_token"]
    again = client.post("/auth/signin/mfa", json={"mfa_token": token, "code": codes[0]}, headers=headers())
    assert again.status_code == 401
    events = world.query(select(AuditRecord.event))
    assert events.count("mfa.recovery_code_used") == 1


def test_the_sign_in_page_asks_for_the_code_then_signs_in(client, setup, enrolled):
    secret, _ = enrolled
    page = submit_login(client, next_url="/auth/login")
    assert page.status_code == 200
    assert 'name="mfa_token"' in page.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None
    token = re.search(r'name="mfa_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True)).group(1)
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
    token = re.search(r'name="mfa_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    refused = client.post("/auth/login/mfa", data={"mfa_token": token, "code": _code(secret)}, headers=headers())
    assert refused.status_code == 400
    assert client.get_cookie("user", domain=HOST) is None


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


def test_policy_admins_sends_an_admin_to_enrolment_before_any_session(client, setup, world, runner):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    result = runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "admins"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"domain": HOST, "require": "admins"}
    api = signin_password(client, "admin@example.com")
    assert api.status_code == 401
    assert api.get_json()["error"] == "mfa_enrolment_required"
    assert signin_password(client, "person@example.com").status_code == 202, "the policy covers admins only"
    client.delete_cookie("user", domain=HOST)
    page = submit_login(client, email="admin@example.com", next_url="/auth/admin/")
    assert page.status_code == 200
    assert "Set up an authenticator app" in page.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None
    token = re.search(r'name="mfa_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    done = client.post(
        "/auth/login/mfa/enrol",
        data={"csrf_token": csrf_token(page), "mfa_token": token, "code": _code(_secret(page))},
        headers=headers(),
    )
    assert done.status_code == 200
    assert len(_recovery_codes(done)) == 10
    assert client.get("/auth/admin/", headers=headers()).status_code == 200, "enrolled: the console opens"
    assert [r.mfa_require for r in world.query(select(Domain))] == ["admins"]
    assert admin.id in [u.id for u in world.query(select(User).where(User.admin.is_(True)))]


def test_under_the_policy_a_console_session_without_the_factor_is_refused(client, setup, world, runner):
    world.user(setup.domain, "admin@example.com", admin=True)
    assert signin_password(client, "admin@example.com").status_code == 202
    assert client.get("/auth/admin/", headers=headers()).status_code == 200
    runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "admins"])
    answer = client.get("/auth/admin/", headers=headers())
    assert answer.status_code == 303
    assert answer.headers["Location"].endswith("/auth/mfa/totp"), "an admin without a factor enrols first"


def test_service_accounts_keep_the_password_grant_but_not_the_console(client, setup, world, runner):
    world.update(User, setup.service.id, admin=True)
    runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "all"])
    token = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    )
    assert token.status_code == 200, token.get_json()
    assert signin_password(client, "service@example.com").status_code == 202
    assert client.get("/auth/admin/", headers=headers()).status_code == 403


def test_an_admin_resets_a_users_factors_and_their_sessions_end(client, setup, world, enrolled):
    secret, _ = enrolled
    token = signin_password(client).get_json()["mfa_token"]
    client.post("/auth/signin/mfa", json={"mfa_token": token, "code": fresh_code(secret, set())}, headers=headers())
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="admin", permission="admin")
    reset = client.post(f"/api/engine/v2/users/{setup.person.id}/mfa/reset", headers=headers(**{"X-API-Key": key}))
    assert reset.status_code == 200, reset.get_json()
    assert reset.get_json() == {"factors_removed": 1}
    assert client.get("/auth/mfa", headers=headers()).status_code == 303, "the user's session ended"
    assert world.query(select(MfaFactor)) == [] and world.query(select(RecoveryCode)) == []
    assert "mfa.reset" in world.query(select(AuditRecord.event))
    assert signin_password(client).status_code == 202


def test_the_cli_resets_a_users_factors(runner, client, setup, world, enrolled):
    result = runner.invoke(args=["mfa", "reset", "--domain", HOST, "--email", "person@example.com"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"id": str(setup.person.id), "factors_removed": 1}
    assert world.query(select(MfaFactor)) == []
    assert [(r.event, r.actor) for r in world.query(select(AuditRecord)) if r.event == "mfa.reset"] == [
        ("mfa.reset", "cli")
    ]


def test_the_policy_command_refuses_an_unknown_value(runner, setup):
    result = runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "sometimes"])
    assert result.exit_code != 0
    assert "sometimes" in result.output


def test_second_step_attempts_are_rate_limited_per_address(make_app, setup):
    from tests.conftest import HttpsClient

    app = make_app(AUTHSVC_SIGNIN_RATE_LIMIT="3/minute")
    app.test_client_class = HttpsClient
    client = app.test_client()
    secret, _ = enrol(client)
    client.delete_cookie("user", domain=HOST)
    token = signin_password(client).get_json()["mfa_token"]
    answers = [
        client.post("/auth/signin/mfa", json={"mfa_token": token, "code": "000000"}, headers=headers()).status_code
        for _ in range(4)
    ]
    assert answers == [401, 401, 401, 429]


def test_a_forged_passkey_answer_is_refused_and_counted(client, setup, world, enrolled):
    token = signin_password(client).get_json()["mfa_token"]
    forged = {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": "e30"}}
    answer = client.post("/auth/signin/mfa", json={"mfa_token": token, "webauthn": forged}, headers=headers())
    assert answer.status_code == 401
    assert answer.get_json()["error"] == "invalid_mfa_code"
    assert client.get_cookie("user", domain=HOST) is None
    reasons = [r.details.get("reason") for r in world.query(select(AuditRecord)) if r.event == "signin.failed"]
    assert reasons == ["invalid_mfa_code"]


def test_the_console_sets_the_policy_and_resets_a_users_factors(client, setup, world, enrolled):
    world.user(setup.domain, "admin@example.com", admin=True)
    assert signin_password(client, "admin@example.com").status_code == 202
    page = client.get(f"/auth/admin/domains/{setup.domain.id}/mfa", headers=headers())
    assert page.status_code == 200
    saved = client.post(
        f"/auth/admin/domains/{setup.domain.id}/mfa",
        data={"csrf_token": csrf_token(page), "require": "all", "submit": "1"},
        headers=headers(),
    )
    assert saved.status_code == 303
    assert [d.mfa_require for d in world.query(select(Domain))] == ["all"]
    # The admin's own session predates the policy: the console asks for a factor now.
    assert client.get(f"/auth/admin/domains/{setup.domain.id}/mfa", headers=headers()).status_code == 303
    world.update(Domain, setup.domain.id, mfa_require="off")
    confirm = client.get(f"/auth/admin/domains/{setup.domain.id}/users/{setup.person.id}/mfa/reset", headers=headers())
    assert confirm.status_code == 200
    done = client.post(
        f"/auth/admin/domains/{setup.domain.id}/users/{setup.person.id}/mfa/reset",
        data={"csrf_token": csrf_token(confirm), "submit": "1"},
        headers=headers(),
    )
    assert done.status_code == 303
    assert world.query(select(MfaFactor)) == []
    events = world.query(select(AuditRecord.event))
    assert "domain.mfa_policy_changed" in events and "mfa.reset" in events


def test_id_tokens_name_the_second_factor_in_amr(client, oidc):
    from tests.conftest import get_code
    from tests.test_id_tokens import exchange, verify

    secret, _ = enrol(client)
    client.delete_cookie("user", domain=HOST)
    token = signin_password(client).get_json()["mfa_token"]
    client.post("/auth/signin/mfa", json={"mfa_token": token, "code": fresh_code(secret, set())}, headers=headers())
    code = get_code(client, oidc.app.client_id, scope="openid")
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert claims["amr"] == ["pwd", "otp", "mfa"]


def test_acr_values_mfa_steps_up_a_password_session_and_the_id_token_says_so(client, oidc):
    """acr_values=mfa: a session without a second factor signs in again, with one (enrolling if need be)."""
    from tests.conftest import authorize, location_params
    from tests.test_id_tokens import exchange, verify

    assert signin_password(client).status_code == 202
    asked = authorize(client, oidc.app.client_id, scope="openid", acr_values="mfa", state="s1")
    assert asked.status_code == 303
    assert asked.headers["Location"].startswith("/auth/login?")
    sign_in_page = client.get(asked.headers["Location"], headers=headers())
    continue_to = re.search(r'name="continue" type="hidden" value="([^"]+)"', sign_in_page.get_data(as_text=True))
    target = html.unescape(continue_to.group(1))
    # No policy and no factor: the request's acr_values make this sign-in set one up.
    form = {"csrf_token": csrf_token(sign_in_page), "email": "person@example.com", "password": PASSWORD}
    page = client.post("/auth/login", data=form | {"continue": target}, headers=headers())
    assert page.status_code == 200
    assert "Set up an authenticator app" in page.get_data(as_text=True)
    token = re.search(r'name="mfa_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    enrolled = client.post(
        "/auth/login/mfa/enrol",
        data={"csrf_token": csrf_token(page), "mfa_token": token, "code": _code(_secret(page))},
        headers=headers(),
    )
    assert enrolled.status_code == 200
    back = re.search(r'class="button" href="([^"]+)"', enrolled.get_data(as_text=True)).group(1)
    answer = client.get(html.unescape(back), headers=headers())
    assert answer.status_code == 302, answer.get_data(as_text=True)
    params = location_params(answer)
    assert params["state"] == "s1"
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, params["code"]).get_json()["id_token"])
    assert claims["acr"] == "mfa"
    assert claims["amr"] == ["pwd", "otp", "mfa"]


def test_without_acr_values_no_acr_claim_and_discovery_names_mfa(client, oidc):
    from tests.conftest import get_code
    from tests.test_id_tokens import exchange, verify

    assert signin_password(client).status_code == 202
    code = get_code(client, oidc.app.client_id, scope="openid")
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert "acr" not in claims
    discovery = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert discovery["acr_values_supported"] == ["mfa"]


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
    token = signin_password(client).get_json()["mfa_token"]
    options = client.post("/auth/signin/mfa/webauthn", json={"mfa_token": token}, headers=headers())
    assert options.status_code == 200
    assert options.get_json()["allowCredentials"][0]["id"] == "Y3JlZA"
    refused = client.post("/auth/signin/mfa", json={"mfa_token": token, "webauthn": answer}, headers=headers())
    assert refused.status_code == 401
    assert refused.get_json()["error"] == "invalid_mfa_code"


def test_a_fresh_password_only_sign_in_does_not_satisfy_step_up(client, oidc):
    """The sign-in note says when a sign-in was asked for, not how it happened: acr_values=mfa still
    needs the second factor, however the password-only session was started after the note."""
    from urllib.parse import parse_qs, urlsplit

    from tests.conftest import authorize

    assert signin_password(client).status_code == 202
    asked = authorize(client, oidc.app.client_id, scope="openid", acr_values="mfa", state="s1")
    back_to_authorize = parse_qs(urlsplit(asked.headers["Location"]).query)["continue"][0]
    # A new password-only session, begun after the note, without the authorise request as `continue`.
    assert signin_password(client).status_code == 202
    again = client.get(back_to_authorize, headers=headers())
    assert again.status_code == 303
    assert again.headers["Location"].startswith("/auth/login?")


def test_another_spelling_of_the_authorise_path_still_forces_the_second_factor(client, oidc):
    assert signin_password(client, "person@example.com").status_code == 202
    client.delete_cookie("user", domain=HOST)
    disguised = "/auth/oauth/%61uthorize?client_id=x&acr_values=mfa"
    answer = client.post(
        "/auth/signin",
        json={"email": "person@example.com", "password": PASSWORD, "continue": disguised},
        headers=headers(),
    )
    assert answer.status_code == 401
    assert answer.get_json()["error"] == "mfa_enrolment_required"
