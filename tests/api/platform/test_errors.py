"""Bad input gets a clear 4xx JSON error: never a 500, never a stack trace."""

import base64

import pytest

from tests.helpers import OTHER_HOST, PASSWORD, REDIRECT_URI, HttpsClient, authorize, headers, signin

TOKEN = "/auth/oauth/token"


def assert_json_error(response, status, error=None):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) >= {"error", "error_description"}
    assert "Traceback" not in response.get_data(as_text=True)
    if error:
        assert body["error"] == error


@pytest.mark.parametrize(
    "data,content_type",
    [
        (b"{not json", "application/json"),
        (b"[]", "application/json"),
        (b'"a string"', "application/json"),
        (b'{"grant_type": ["password"]}', "application/json"),
        (b'{"grant_type": "password", "username": 12, "password": "x", "client_id": "c"}', "application/json"),
        (b'{"grant_type": null}', "application/json"),
        (b'{"grant_type": "password", "username": "\xff\xfe"}', "application/json"),
        (b"grant_type=pass\xffword&username=a", "application/x-www-form-urlencoded"),
    ],
)
def test_malformed_token_requests_are_invalid_request(client, setup, data, content_type):
    assert_json_error(client.post(TOKEN, data=data, content_type=content_type, headers=headers()), 400)


@pytest.mark.parametrize(
    "grant_type",
    [
        "urn:ietf:params:oauth:grant-type:saml2-bearer",
        "implicit",
        'quo"te',
        "back\\slash",
        "\u00fcber",
        "urn:x",
        "",
        "a" * 300,
    ],
)
def test_unsupported_or_hostile_grant_types_are_400(client, setup, grant_type):
    response = client.post(
        TOKEN, data={"grant_type": grant_type, "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert_json_error(response, 400)


def test_an_unsupported_grant_type_is_told_every_grant_the_endpoint_takes(client, setup):
    """A client that sent the wrong grant learns the right names from the answer, the device grant's included."""
    response = client.post(
        TOKEN, data={"grant_type": "implicit", "client_id": setup.public_app.client_id}, headers=headers()
    )
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"] == "unsupported_grant_type"
    for grant_type in (
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "password",
        "urn:ietf:params:oauth:grant-type:device_code",
    ):
        assert grant_type in body["error_description"]


def test_missing_grant_type_is_400(client, setup):
    assert_json_error(client.post(TOKEN, data={}, headers=headers()), 400)


def test_a_parameter_sent_twice_is_invalid_request(client, setup):
    response = client.post(
        TOKEN + "?grant_type=password",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    )
    assert_json_error(response, 400, "invalid_request")


def test_unknown_parameters_are_ignored_as_rfc_6749_asks(client, setup):
    response = client.post(
        TOKEN,
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
            "colour": "blue",
        },
        headers=headers(),
    )
    assert response.status_code == 200


def test_oversize_bodies_are_413(client, setup):
    response = client.post(TOKEN, data=b"x" * (70 * 1024), content_type="application/json", headers=headers())
    assert_json_error(response, 413, "request_too_large")
    response = client.post("/auth/signin", data=b"x" * (70 * 1024), content_type="application/json", headers=headers())
    assert_json_error(response, 413)


def test_a_host_without_a_domain_is_404_unknown_domain(client, setup):
    assert_json_error(
        client.post(TOKEN, data={"grant_type": "password"}, headers=headers("wrong.example")), 404, "unknown_domain"
    )
    assert_json_error(client.get("/api/engine/v2/api_keys/inspect", headers=headers("wrong.example")), 404)


@pytest.mark.parametrize(
    "data",
    [
        {"grant_type": "password", "username": "service@example.com", "password": PASSWORD},  # a good request
        {"grant_type": "password", "username": "service@example.com", "password": "wrong"},
        {"grant_type": "refresh_token", "refresh_token": "unknown"},
        {"grant_type": "password", "client_id": "no-such-client"},
        {"grant_type": "made_up"},
        "grant_type=password&grant_type=password",  # refused before any client is looked up
    ],
)
def test_the_token_endpoint_answers_404_on_a_host_without_a_domain_whatever_the_request(client, setup, data):
    if isinstance(data, dict):
        data = {"client_id": setup.public_app.client_id, **data}
    response = client.post(
        TOKEN, data=data, content_type="application/x-www-form-urlencoded", headers=headers("wrong.example")
    )
    assert_json_error(response, 404, "unknown_domain")


@pytest.mark.parametrize(
    "params",
    [
        {},  # a good request
        {"client_id": "no-such-client"},
        {"response_type": "token"},
        {"redirect_uri": "https://evil.example/cb"},
        {"response_type": None},
    ],
)
def test_authorise_answers_404_on_a_host_without_a_domain_whatever_the_request(client, setup, params):
    params = {"client_id": setup.public_app.client_id, **params}
    response = authorize(client, params.pop("client_id"), host="wrong.example", **params)
    assert_json_error(response, 404, "unknown_domain")


def test_the_default_domain_serves_unknown_hosts_when_configured(make_app, setup):
    app = make_app(AUTHSVC_DEFAULT_DOMAIN="auth.example.com")
    response = app.test_client().post(
        "/auth/signin", json={"email": "person@example.com", "password": PASSWORD}, headers=headers("127.0.0.1:5000")
    )
    assert response.status_code == 202
    grant = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD}
    token = app.test_client().post(
        TOKEN, json={**grant, "client_id": setup.public_app.client_id}, headers=headers("127.0.0.1:5000")
    )
    assert token.status_code == 200, token.get_json()
    claims = app.test_client().get(
        "/api/engine/v2/api_keys/inspect",
        headers=headers("127.0.0.1:5000", Authorization=f"Bearer {token.get_json()['access_token']}"),
    )
    assert claims.get_json()["aud"] == "auth.example.com"


def test_the_default_domain_does_not_serve_a_host_of_another_domain(make_app, setup, world):
    world.domain(OTHER_HOST)
    app = make_app(AUTHSVC_DEFAULT_DOMAIN="auth.example.com")
    app.test_client_class = HttpsClient
    grant = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD}
    # The client is the default domain's; the host is another domain's own.
    response = app.test_client().post(
        TOKEN, json={**grant, "client_id": setup.public_app.client_id}, headers=headers(OTHER_HOST)
    )
    assert_json_error(response, 400, "invalid_client")


def test_unknown_paths_and_methods_are_json(client, setup):
    assert_json_error(client.get("/no/such/path", headers=headers()), 404, "not_found")
    response = client.get(TOKEN, headers=headers())
    assert_json_error(response, 405, "method_not_allowed")
    assert "POST" in response.headers["Allow"]


@pytest.mark.parametrize(
    "params",
    [
        {"response_type": 'co"de'},
        {"response_type": "\u00e9"},
        {"client_id": "\x00"},
        {"redirect_uri": "https://app.example.com/\u00e9"},
        {"state": "\x01"},
        {"scope": "\u00fc"},
    ],
)
def test_hostile_authorise_parameters_are_4xx(client, setup, params):
    signin(client)
    query = {"response_type": "code", "client_id": setup.public_app.client_id, "redirect_uri": REDIRECT_URI, **params}
    response = client.get("/auth/oauth/authorize", query_string=query, headers=headers())
    assert response.status_code in (302, 400)
    if response.status_code == 400:
        assert_json_error(response, 400)


def test_bad_utf8_in_the_query_string_is_4xx(client, setup):
    response = client.get(
        "/api/engine/v2/api_keys/inspect",
        environ_overrides={"QUERY_STRING": "bearer_token=%ff%fe"},
        headers=headers(),
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    "data",
    [
        b"\xc3\xbd=1&\xc3\xbd=2&grant_type=password",  # a repeated parameter whose name is not ASCII
        b"%C2%8A2=x&token=%C3%8F",  # a value with characters a description may not quote
        b"na%22me=%01",
    ],
)
@pytest.mark.parametrize("path", [TOKEN, "/auth/oauth/revoke", "/auth/oauth/introspect"])
def test_odd_parameter_names_are_a_400_not_a_500(client, setup, path, data):
    response = client.post(path, data=data, content_type="application/x-www-form-urlencoded", headers=headers())
    assert response.status_code in (400, 401)
    assert_json_error(response, response.status_code)


@pytest.mark.parametrize("path", [TOKEN, "/auth/oauth/revoke", "/auth/oauth/introspect"])
def test_basic_credentials_that_are_not_utf8_are_invalid_client(client, setup, path):
    auth = "Basic " + base64.b64encode(b"\xbc\xff:secret").decode()
    response = client.post(path, data={"grant_type": "password", "token": "x"}, headers=headers(Authorization=auth))
    assert_json_error(response, 401, "invalid_client")


@pytest.mark.parametrize("email", ["a\x00b@example.com", "person@example.com\x00", "x\x1f@example.com"])
def test_control_characters_in_a_sign_in_email_are_a_400(client, setup, email):
    response = client.post("/auth/signin", data={"email": email, "password": PASSWORD}, headers=headers())
    assert_json_error(response, 400, "invalid_request")


@pytest.mark.parametrize("key", ["\x00abc.secret", "ab\x00.secret", "\u00e9t\u00e9.secret"])
def test_an_api_key_id_with_odd_characters_is_a_401(client, setup, key):
    response = client.get("/api/engine/v2/api_keys/inspect", query_string={"api-key": key}, headers=headers())
    assert_json_error(response, 401, "invalid_token")


@pytest.mark.parametrize("path", [TOKEN, "/auth/oauth/revoke", "/auth/oauth/introspect"])
def test_a_basic_client_id_with_control_characters_is_invalid_client(client, setup, path):
    auth = "Basic " + base64.b64encode(b"a\x00b:secret").decode()
    response = client.post(path, data={"grant_type": "password", "token": "x"}, headers=headers(Authorization=auth))
    assert_json_error(response, 401, "invalid_client")


@pytest.mark.parametrize(
    "path", ["/auth/signin", "/auth/oauth/token", "/api/engine/v2/api_keys/inspect", "/auth/login"]
)
def test_raw_bytes_in_the_query_string_are_a_400(client, setup, path):
    method = "GET" if "inspect" in path or "login" in path else "POST"
    response = client.open(path, method=method, environ_overrides={"QUERY_STRING": "code=\x80\xff"}, headers=headers())
    assert_json_error(response, 400, "invalid_request")


@pytest.mark.parametrize("value", ["Basic ", "Basic    ", "Basic \u00e9\u00e9\u00e9\u00e9"])
@pytest.mark.parametrize("path", [TOKEN, "/auth/oauth/revoke", "/auth/oauth/introspect"])
def test_malformed_basic_credentials_are_invalid_client(client, setup, path, value):
    auth = value.encode("utf-8").decode("latin-1")
    response = client.post(path, data={"grant_type": "password", "token": "x"}, headers=headers(Authorization=auth))
    assert_json_error(response, 401, "invalid_client")


@pytest.mark.parametrize("body", [b"false", b"[1, 2]", b'"text"', b"{}"])
def test_a_json_body_to_the_sign_in_page_is_a_400_page(client, setup, body):
    response = client.post("/auth/login", data=body, content_type="application/json", headers=headers())
    assert response.status_code == 400
    assert response.mimetype == "text/html"
