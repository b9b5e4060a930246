"""Resource indicators (RFC 8707): an application lists its resources, a request names some, the token is for them."""

from __future__ import annotations

import base64

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from authsvc.core.models import Token
from tests.helpers import HOST, REDIRECT_URI, authorize, get_code, headers, location_params, signin
from tests.helpers.device import answer, poll, start

ORDERS = "https://orders.example.com/api"
STOCK = "https://stock.example.com/"
ELSEWHERE = "https://elsewhere.example.com/"


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@pytest.fixture
def api_app(world, setup):
    """A confidential application whose tokens may be for the orders and stock APIs."""
    app, secret = world.application(
        setup.domain, confidential=True, resources=[ORDERS, STOCK], service_account_id=setup.service.id
    )
    return app, secret


def token_request(client, app, secret, **data):
    return client.post("/auth/oauth/token", data=data, headers=headers(Authorization=basic(app.client_id, secret)))


def exchange(client, app, secret, code, **data):
    return token_request(
        client, app, secret, grant_type="authorization_code", code=code, redirect_uri=REDIRECT_URI, **data
    )


def inspect_aud(client, token: str):
    response = client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}"))
    assert response.status_code == 200, response.get_json()
    return response.get_json()["aud"]


def introspected_aud(client, app, secret, token: str):
    body = client.post(
        "/auth/oauth/introspect", data={"token": token}, headers=headers(Authorization=basic(app.client_id, secret))
    ).get_json()
    assert body["active"] is True
    return body["aud"]


def refused(response, status: int = 400) -> None:
    assert response.status_code == status, response.get_json()
    assert response.get_json()["error"] == "invalid_target"


# The authorisation endpoint


def test_a_listed_resource_at_authorize_is_the_tokens_audience(client, api_app):
    app, secret = api_app
    signin(client)
    code = get_code(client, app.client_id, resource=ORDERS)
    token = exchange(client, app, secret, code).get_json()["access_token"]
    assert inspect_aud(client, token) == ORDERS
    assert introspected_aud(client, app, secret, token) == ORDERS


def test_several_resources_make_a_list_audience(client, api_app):
    app, secret = api_app
    signin(client)
    code = get_code(client, app.client_id, resource=[ORDERS, STOCK])
    token = exchange(client, app, secret, code).get_json()["access_token"]
    assert inspect_aud(client, token) == [ORDERS, STOCK]
    assert introspected_aud(client, app, secret, token) == [ORDERS, STOCK]


@pytest.mark.parametrize(
    "resource",
    [ELSEWHERE, "/orders", "orders.example.com", f"{ORDERS}#part", "https://orders.example.com/api extra"],
    ids=["not-listed", "relative", "no-scheme", "fragment", "space"],
)
def test_authorize_redirects_invalid_target_for_a_resource_it_may_not_ask_for(client, api_app, resource):
    app, _ = api_app
    signin(client)
    response = authorize(client, app.client_id, resource=resource, state="s1")
    assert response.status_code == 302, response.get_data(as_text=True)
    assert response.headers["Location"].startswith(REDIRECT_URI)
    params = location_params(response)
    assert params["error"] == "invalid_target"
    assert params["state"] == "s1"
    assert "code" not in params


def test_without_resource_tokens_are_for_the_domain_as_before(client, api_app, world):
    app, secret = api_app
    signin(client)
    token = exchange(client, app, secret, get_code(client, app.client_id)).get_json()["access_token"]
    assert inspect_aud(client, token) == HOST
    assert introspected_aud(client, app, secret, token) == HOST
    assert world.query(select(Token.audience).where(Token.application_id == app.id)) == [None]


# The code exchange


def test_the_exchange_may_narrow_the_codes_resources(client, api_app, world):
    app, secret = api_app
    signin(client)
    code = get_code(client, app.client_id, resource=[ORDERS, STOCK])
    token = exchange(client, app, secret, code, resource=STOCK).get_json()["access_token"]
    assert inspect_aud(client, token) == STOCK
    assert world.query(select(Token.audience).where(Token.application_id == app.id)) == [STOCK]


def test_the_exchange_may_not_widen_the_codes_resources(client, api_app):
    app, secret = api_app
    signin(client)
    code = get_code(client, app.client_id, resource=ORDERS)
    refused(exchange(client, app, secret, code, resource=STOCK))


def test_a_code_without_resources_may_be_exchanged_for_a_listed_one(client, api_app):
    app, secret = api_app
    signin(client)
    code = get_code(client, app.client_id)
    token = exchange(client, app, secret, code, resource=ORDERS).get_json()["access_token"]
    assert inspect_aud(client, token) == ORDERS


def test_an_unlisted_resource_at_the_exchange_is_invalid_target(client, api_app):
    app, secret = api_app
    signin(client)
    refused(exchange(client, app, secret, get_code(client, app.client_id), resource=ELSEWHERE))


# Refresh


def test_a_refresh_narrows_and_the_next_one_gets_the_whole_grant_back(client, api_app):
    app, secret = api_app
    signin(client)
    code = get_code(client, app.client_id, resource=[ORDERS, STOCK])
    first = exchange(client, app, secret, code).get_json()
    narrowed = token_request(
        client, app, secret, grant_type="refresh_token", refresh_token=first["refresh_token"], resource=ORDERS
    )
    assert narrowed.status_code == 200, narrowed.get_json()
    assert inspect_aud(client, narrowed.get_json()["access_token"]) == ORDERS
    whole = token_request(
        client, app, secret, grant_type="refresh_token", refresh_token=narrowed.get_json()["refresh_token"]
    )
    assert whole.status_code == 200, whole.get_json()
    assert inspect_aud(client, whole.get_json()["access_token"]) == [ORDERS, STOCK]


def test_a_refused_refresh_leaves_the_refresh_token_usable(client, api_app, world):
    app, secret = api_app
    world.update(type(app), app.id, resources=[ORDERS, STOCK, ELSEWHERE])
    signin(client)
    first = exchange(client, app, secret, get_code(client, app.client_id, resource=ORDERS)).get_json()
    # Listed on the application, but not in this grant.
    refused(
        token_request(
            client, app, secret, grant_type="refresh_token", refresh_token=first["refresh_token"], resource=STOCK
        )
    )
    again = token_request(client, app, secret, grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert again.status_code == 200, again.get_json()
    assert inspect_aud(client, again.get_json()["access_token"]) == ORDERS


# Grants without an authorisation request


def test_client_credentials_with_a_listed_resource(client, api_app):
    app, secret = api_app
    response = token_request(client, app, secret, grant_type="client_credentials", resource=STOCK)
    assert response.status_code == 200, response.get_json()
    assert inspect_aud(client, response.get_json()["access_token"]) == STOCK


@pytest.mark.parametrize("resource", [ELSEWHERE, "urn-without-colon", f"{STOCK}#x"])
def test_client_credentials_refuses_a_resource_it_may_not_ask_for(client, api_app, resource):
    app, secret = api_app
    refused(token_request(client, app, secret, grant_type="client_credentials", resource=resource))


def test_the_password_grant_with_resources(client, api_app):
    app, secret = api_app
    ok = token_request(
        client,
        app,
        secret,
        grant_type="password",
        username="service@example.com",
        password="correct horse battery staple",
        resource=[ORDERS, STOCK],
    )
    assert ok.status_code == 200, ok.get_json()
    assert inspect_aud(client, ok.get_json()["access_token"]) == [ORDERS, STOCK]
    refused(
        token_request(
            client,
            app,
            secret,
            grant_type="password",
            username="service@example.com",
            password="correct horse battery staple",
            resource=ELSEWHERE,
        )
    )


def test_resources_in_a_json_body_may_be_a_list(client, api_app):
    app, secret = api_app
    response = client.post(
        "/auth/oauth/token",
        json={"grant_type": "client_credentials", "resource": [ORDERS, STOCK]},
        headers=headers(Authorization=basic(app.client_id, secret)),
    )
    assert response.status_code == 200, response.get_json()
    assert inspect_aud(client, response.get_json()["access_token"]) == [ORDERS, STOCK]


def test_an_application_without_resources_may_ask_for_none(client, setup):
    response = token_request(
        client,
        setup.confidential_app,
        setup.client_secret,
        grant_type="password",
        username="service@example.com",
        password="correct horse battery staple",
        resource=ORDERS,
    )
    refused(response)


# The device grant


def test_the_device_grant_carries_the_resources_of_its_request(client, world, setup):
    device_app, _ = world.application(setup.domain, device=True, resources=[ORDERS, STOCK])
    refused(start(client, device_app.client_id, resource=ELSEWHERE))
    body = start(client, device_app.client_id, resource=ORDERS).get_json()
    signin(client)
    assert answer(client, body["user_code"], "approve").status_code == 200
    tokens = poll(client, device_app.client_id, body["device_code"])
    assert tokens.status_code == 200, tokens.get_json()
    assert inspect_aud(client, tokens.get_json()["access_token"]) == ORDERS


def test_a_device_poll_may_not_widen_its_resources(client, world, setup):
    device_app, _ = world.application(setup.domain, device=True, resources=[ORDERS, STOCK])
    body = start(client, device_app.client_id, resource=ORDERS).get_json()
    signin(client)
    answer(client, body["user_code"], "approve")
    response = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": body["device_code"],
            "client_id": device_app.client_id,
            "resource": STOCK,
        },
        headers=headers(),
    )
    refused(response)


# JWT access tokens


def test_a_jwt_access_tokens_aud_is_the_resource(client, world, setup):
    app, secret = world.application(
        setup.domain, confidential=True, resources=[ORDERS, STOCK], access_token_format="jwt"
    )
    signin(client)
    token = exchange(client, app, secret, get_code(client, app.client_id, resource=ORDERS)).get_json()["access_token"]
    jwks = client.get("/auth/oauth/jwks", headers=headers()).get_json()
    claims = jwt.decode(token, KeySet.import_key_set(jwks), algorithms=["RS256"]).claims
    assert claims["aud"] == ORDERS
    assert inspect_aud(client, token) == ORDERS
