"""OpenID Connect authorisation requests for the tests: getting an ID token, going through the
sign-in page an answer sends the browser to, an error redirected to the client, and ID token hints.

Used by tests/api/oidc/test_oidc_authorize_prompt.py and tests/api/oidc/test_oidc_authorize_params.py, which import
the fixture they need from here.
"""

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.database import db
from authsvc.core.models import Domain
from authsvc.oauth import keys
from tests.helpers import HOST, PASSWORD, REDIRECT_URI, authorize, headers, location_params
from tests.helpers.id_tokens import exchange, verify
from tests.helpers.pages import csrf_token

ISS = f"https://{HOST}"


def id_token(client, oidc, **params):
    """Authorise (a session must be live), exchange the code, and return the ID token's claims."""
    response = authorize(client, oidc.app.client_id, scope="openid", **params)
    assert response.status_code == 302, response.headers.get("Location")
    return id_token_of(client, oidc, response)


def id_token_of(client, oidc, response):
    code = location_params(response)["code"]
    body = exchange(client, oidc.app, oidc.secret, code).get_json()
    return body["id_token"], verify(client, body["id_token"])[1]


def sign_in_page(client, response):
    """The sign-in page an authorisation answer (303) sends the browser to."""
    assert response.status_code == 303, response.headers.get("Location")
    location = urlsplit(response.headers["Location"])
    assert location.path == "/auth/login"
    page = client.get(response.headers["Location"], headers=headers())
    assert page.status_code == 200
    return page, {k: v[0] for k, v in parse_qs(location.query).items()}


def sign_in_through(client, response, email="person@example.com"):
    """Sign in on the page ``response`` sends the browser to, then follow it back to the authorisation."""
    page, params = sign_in_page(client, response)
    form = {"csrf_token": csrf_token(page), "email": email, "password": PASSWORD, "continue": params["continue"]}
    signed_in = client.post("/auth/login", data=form, headers=headers())
    assert signed_in.status_code == 303
    assert signed_in.headers["Location"] == params["continue"]
    return client.get(signed_in.headers["Location"], headers=headers())


def redirected_error(response, error, state="s"):
    assert response.status_code == 302, response.get_data(as_text=True)
    assert response.headers["Location"].startswith(REDIRECT_URI + "?")
    params = location_params(response)
    assert params["error"] == error, params
    assert params["state"] == state
    assert params["iss"] == ISS
    assert "code" not in params
    return params


@pytest.fixture
def other_person(world, oidc):
    return world.user(oidc.domain, "other@example.com", name="Other")


def hint_for(app, user_id, client_id, exp_offset=3600, domain=None):
    """An ID token signed with the domain's current key, as the service signs them."""
    with app.app_context():
        domain = domain or db.session.scalar(select(Domain).where(Domain.host == HOST))
        now = int(time.time())
        return keys.sign(
            domain, {"iss": ISS, "sub": str(user_id), "aud": client_id, "iat": now, "exp": now + exp_offset}
        )
