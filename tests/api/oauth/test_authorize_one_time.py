"""What the authorisation endpoint hands out for one request is good for that request, once.

The sign-in page's note (``sign_in_asked``) lets the request that sent the user to sign in go on
after a fresh sign-in (``prompt=login``, ``max_age=0``): it stands for that request only and is
spent by its answer. A pushed request's ``request_uri`` (RFC 9126 4) is spent by any answer to the
client, an error redirect as much as a code.
"""

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

from tests.helpers import OIDC_SCOPES, REDIRECT_URI, authorize, headers, location_params, signin
from tests.helpers.oidc_authorize import redirected_error, sign_in_page, sign_in_through
from tests.helpers.pages import csrf_token
from tests.helpers.pushed_requests import assert_refused, authorize_pushed, basic, push, pushed_uri


def way_back(client, response) -> str:
    """The sign-in page's way back to the request (its ``continue``), which carries the note."""
    return sign_in_page(client, response)[1]["continue"]


def asks_to_sign_in(response) -> bool:
    return response.status_code == 303 and urlsplit(response.headers["Location"]).path == "/auth/login"


def press(client, page, button: str):
    """Press ``button`` (approve or deny) on the consent page ``page``."""
    action = unescape(re.search(r'<form method="post" action="([^"]+)"', page.get_data(as_text=True)).group(1))
    return client.post(action, data={"csrf_token": csrf_token(page), button: "1"}, headers=headers())


def test_the_sign_in_note_does_not_stand_for_another_clients_request(client, oidc):
    signin(client)
    asked = authorize(client, oidc.app.client_id, scope="openid", prompt="login", state="s")
    note = parse_qs(urlsplit(way_back(client, asked)).query)["sign_in_asked"][0]
    back = sign_in_through(client, asked)
    assert "code" in location_params(back)
    # The note on another application's request for a fresh sign-in, within its 600 s: asked again.
    other = authorize(client, oidc.es256_app.client_id, scope="openid", prompt="login", state="t", sign_in_asked=note)
    assert asks_to_sign_in(other), other.headers.get("Location")


def test_the_sign_in_note_is_spent_by_the_answer(client, oidc):
    signin(client)
    asked = authorize(client, oidc.app.client_id, scope="openid", prompt="login", state="s")
    back = way_back(client, asked)
    assert "code" in location_params(sign_in_through(client, asked))
    again = client.get(back, headers=headers())
    assert asks_to_sign_in(again), again.headers.get("Location")


def test_the_sign_in_note_lasts_through_the_consent_page(client, world, oidc):
    """The consent page posts back to the same request: the note stands until the request is answered."""
    consent_app, _ = world.application(oidc.domain, confidential=True, scopes=OIDC_SCOPES, consent=True)
    signin(client)
    asked = authorize(client, consent_app.client_id, scope="openid", prompt="login", state="s")
    page = sign_in_through(client, asked)
    assert page.status_code == 200, page.headers.get("Location")
    assert "code" in location_params(press(client, page, "approve"))


def test_a_pushed_request_answered_with_an_error_is_spent(client, setup, world):
    application, secret = world.application(setup.domain, confidential=True)
    uri = pushed_uri(push(client, basic(application.client_id, secret), prompt="none"))
    # No session and prompt=none: the answer is an error, redirected to the client.
    redirected = authorize_pushed(client, application.client_id, uri)
    assert redirected.status_code == 302
    assert redirected.headers["Location"].startswith(REDIRECT_URI)
    assert location_params(redirected)["error"] == "login_required"
    signin(client)
    assert_refused(authorize_pushed(client, application.client_id, uri), "invalid_request_uri")


def test_a_pushed_request_the_user_denies_is_spent(client, setup, world):
    application, secret = world.application(setup.domain, confidential=True, consent=True)
    uri = pushed_uri(push(client, basic(application.client_id, secret)))
    signin(client)
    page = authorize_pushed(client, application.client_id, uri)
    assert page.status_code == 200, page.headers.get("Location")
    redirected_error(press(client, page, "deny"), "access_denied")
    assert_refused(authorize_pushed(client, application.client_id, uri), "invalid_request_uri")
