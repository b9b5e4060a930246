"""The second factor in OpenID Connect: ID tokens name it in ``amr``, and ``acr_values=mfa`` steps a
password-only session up (enrolling if need be), however the password-only session was started or the
authorise path spelt."""

from __future__ import annotations

import html
import re

from tests.helpers import HOST, PASSWORD, headers
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
from tests.helpers.pages import csrf_token


def test_id_tokens_name_the_second_factor_in_amr(client, oidc):
    from tests.helpers import get_code
    from tests.helpers.id_tokens import exchange, verify

    secret, _ = enrol(client)
    client.delete_cookie("user", domain=HOST)
    token = mfa_token(client)
    second_step(client, token, fresh_code(secret, set()))
    code = get_code(client, oidc.app.client_id, scope="openid")
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert claims["amr"] == ["pwd", "otp", "mfa"]


def test_without_acr_values_no_acr_claim_and_discovery_names_mfa(client, oidc):
    from tests.helpers import get_code
    from tests.helpers.id_tokens import exchange, verify

    assert signin_password(client).status_code == 202
    code = get_code(client, oidc.app.client_id, scope="openid")
    _, claims = verify(client, exchange(client, oidc.app, oidc.secret, code).get_json()["id_token"])
    assert "acr" not in claims
    discovery = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert discovery["acr_values_supported"] == ["mfa"]


def test_acr_values_mfa_steps_up_a_password_session_and_the_id_token_says_so(client, oidc):
    """acr_values=mfa: a session without a second factor signs in again, with one (enrolling if need be)."""
    from tests.helpers import authorize, location_params
    from tests.helpers.id_tokens import exchange, verify

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
    token = page_mfa_token(page)
    enrolled = client.post(
        "/auth/login/mfa/enrol",
        data={"csrf_token": csrf_token(page), "mfa_token": token, "code": totp_code(totp_secret(page))},
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


def test_a_fresh_password_only_sign_in_does_not_satisfy_step_up(client, oidc):
    """The sign-in note says when a sign-in was asked for, not how it happened: acr_values=mfa still
    needs the second factor, however the password-only session was started after the note."""
    from urllib.parse import parse_qs, urlsplit

    from tests.helpers import authorize

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
