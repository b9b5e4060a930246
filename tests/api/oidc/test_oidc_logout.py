"""RP-Initiated Logout 1.0: the end-session endpoint, its ID token hint and
post-logout redirect, and the confirmation asked without a hint.

Back-Channel Logout 1.0 is tests/api/oidc/test_oidc_logout_backchannel.py.
"""

from __future__ import annotations

import time

import pytest

from authsvc.core.models import Domain
from authsvc.oauth import keys
from tests.helpers import HOST, OTHER_HOST, headers, signin
from tests.helpers import oidc_logout as oidc_logout_helpers
from tests.helpers.oidc_logout import END_SESSION, POST_LOGOUT, browser, claims_of, id_token
from tests.helpers.pages import csrf_token

# Back-channel receivers on loopback need the operator's setting: this module's app allows it.
app = oidc_logout_helpers.app


def signed_in(client) -> bool:
    return client.get("/auth/login", headers=headers()).get_data(as_text=True).count('name="password"') == 0


def test_discovery_names_the_end_session_endpoint_and_back_channel_support(client, oidc):
    document = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert document["end_session_endpoint"] == f"https://{HOST}/auth/oauth/end_session"
    assert document["backchannel_logout_supported"] is True
    assert document["backchannel_logout_session_supported"] is True
    rfc8414 = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert rfc8414["end_session_endpoint"] == document["end_session_endpoint"]


def test_a_valid_hint_and_registered_uri_end_the_session_and_redirect_with_state(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    response = client.get(
        END_SESSION,
        query_string={"id_token_hint": hint, "post_logout_redirect_uri": POST_LOGOUT, "state": "xyz"},
        headers=headers(),
    )
    assert response.status_code == 303
    assert response.headers["Location"] == f"{POST_LOGOUT}?state=xyz"
    assert client.get_cookie("user", domain=HOST) is None
    assert not signed_in(client)


def test_the_relying_party_may_post_the_logout_request(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    response = client.post(
        END_SESSION,
        data={"id_token_hint": hint, "client_id": rp.app.client_id, "post_logout_redirect_uri": POST_LOGOUT},
        headers=headers(),
    )
    assert response.status_code == 303
    assert response.headers["Location"] == POST_LOGOUT
    assert not signed_in(client)


def test_an_expired_hint_is_still_accepted(make_app, rp, world):
    client = browser(make_app(AUTHSVC_ID_TOKEN_TTL=-10))
    hint = id_token(client, rp)["id_token"]
    assert claims_of(client, hint)["exp"] < time.time()
    response = client.get(
        END_SESSION, query_string={"id_token_hint": hint, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 303
    assert response.headers["Location"] == POST_LOGOUT


def test_a_hint_signed_by_another_domains_key_is_refused(client, rp, world):
    world.domain(OTHER_HOST, scopes="public openid")
    signin(client)
    # The same claims, signed with OTHER_HOST's key: not an ID token of this domain.
    ours = claims_of(client, id_token(client, rp)["id_token"])
    with client.application.test_request_context(base_url=f"https://{OTHER_HOST}"):
        forged = keys.sign(Domain.query.filter_by(host=OTHER_HOST).one(), ours)
    response = client.get(
        END_SESSION, query_string={"id_token_hint": forged, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"
    assert "Location" not in response.headers
    assert signed_in(client)


@pytest.mark.parametrize(
    "events,typ",
    [({"http://schemas.openid.net/event/backchannel-logout": {}}, "JWT"), ({}, "logout+jwt")],
    ids=["events claim", "logout+jwt header"],
)
def test_a_logout_token_is_no_id_token_hint(client, rp, events, typ):
    """A Logout Token is signed with the same key and names the same subject, yet it is no ID token."""
    signin(client)
    claims = claims_of(client, id_token(client, rp)["id_token"])
    with client.application.test_request_context(base_url=f"https://{HOST}"):
        logout = keys.sign(
            Domain.query.filter_by(host=HOST).one(), {**claims, **({"events": events} if events else {})}, typ=typ
        )
    response = client.get(
        END_SESSION, query_string={"id_token_hint": logout, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"
    assert "Location" not in response.headers
    assert signed_in(client)


@pytest.mark.parametrize("hint", ["garbage", "a.b.c", "x" * 9000])
def test_a_malformed_hint_is_a_clear_400(client, rp, hint):
    response = client.get(END_SESSION, query_string={"id_token_hint": hint}, headers=headers())
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


def test_a_client_id_that_is_not_the_hints_audience_is_refused(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    response = client.get(
        END_SESSION,
        query_string={
            "id_token_hint": hint,
            "client_id": rp.es256_app.client_id,
            "post_logout_redirect_uri": POST_LOGOUT,
        },
        headers=headers(),
    )
    assert response.status_code == 400
    assert signed_in(client)


def test_an_unregistered_post_logout_uri_never_redirects(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    for uri in ("https://evil.example/", POST_LOGOUT + "/", POST_LOGOUT + "?x=1"):
        response = client.get(
            END_SESSION, query_string={"id_token_hint": hint, "post_logout_redirect_uri": uri}, headers=headers()
        )
        assert response.status_code == 200
        assert "Location" not in response.headers
        assert "You are signed out" in response.get_data(as_text=True)
    assert not signed_in(client)


def test_without_a_hint_the_user_confirms_with_a_csrf_protected_form(client, rp):
    signin(client)
    query = {"client_id": rp.app.client_id, "post_logout_redirect_uri": POST_LOGOUT, "state": "s1"}
    page = client.get(END_SESSION, query_string=query, headers=headers())
    assert page.status_code == 200
    assert "Sign out?" in page.get_data(as_text=True)
    assert signed_in(client)  # asking ends nothing

    forged = client.post(END_SESSION, data={**query, "confirm": "1", "csrf_token": "forged"}, headers=headers())
    assert forged.status_code == 400
    assert signed_in(client)

    cancelled = client.post(
        END_SESSION, data={**query, "cancel": "1", "csrf_token": csrf_token(page)}, headers=headers()
    )
    assert cancelled.status_code == 200
    assert signed_in(client)

    confirmed = client.post(
        END_SESSION, data={**query, "confirm": "1", "csrf_token": csrf_token(page)}, headers=headers()
    )
    assert confirmed.status_code == 303
    assert confirmed.headers["Location"] == f"{POST_LOGOUT}?state=s1"
    assert not signed_in(client)


def test_a_hint_of_another_user_asks_before_ending_this_session(client, rp, world):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    world.user(rp.domain, "second@example.com")
    signin(client, "second@example.com")
    response = client.get(END_SESSION, query_string={"id_token_hint": hint}, headers=headers())
    assert response.status_code == 200
    assert "Sign out?" in response.get_data(as_text=True)
    assert signed_in(client)


def test_without_a_session_a_valid_request_just_redirects(client, rp):
    signin(client)
    hint = id_token(client, rp)["id_token"]
    client.get("/auth/logout", headers=headers())
    response = client.get(
        END_SESSION, query_string={"id_token_hint": hint, "post_logout_redirect_uri": POST_LOGOUT}, headers=headers()
    )
    assert response.status_code == 303
    assert response.headers["Location"] == POST_LOGOUT
