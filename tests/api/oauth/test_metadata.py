"""RFC 8414: GET /.well-known/oauth-authorization-server, per domain."""

import pytest
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata, get_well_known_url

from tests.helpers import HOST, OTHER_HOST, headers

METADATA = "/.well-known/oauth-authorization-server"


def test_the_document_passes_authlibs_validation(client, setup):
    response = client.get(METADATA, headers=headers())
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    metadata = AuthorizationServerMetadata(response.get_json())
    metadata.validate()
    assert metadata["issuer"] == f"https://{HOST}"
    assert metadata["authorization_endpoint"] == f"https://{HOST}/auth/oauth/authorize"
    assert metadata["token_endpoint"] == f"https://{HOST}/auth/oauth/token"
    assert metadata["revocation_endpoint"] == f"https://{HOST}/auth/oauth/revoke"
    assert metadata["introspection_endpoint"] == f"https://{HOST}/auth/oauth/introspect"
    assert metadata["device_authorization_endpoint"] == f"https://{HOST}/auth/oauth/device_authorization"
    assert metadata["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "password",
        "urn:ietf:params:oauth:grant-type:device_code",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ]
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["code_challenge_methods_supported"] == ["S256", "plain"]
    assert metadata["token_endpoint_auth_methods_supported"] == [
        "client_secret_basic",
        "client_secret_post",
        "private_key_jwt",
        "none",
    ]
    assert metadata["scopes_supported"] == ["public", "mqtt.read", "mqtt.write"]


@pytest.mark.parametrize("base_url", ["http://localhost:5000", "http://127.0.0.1:8080", "https://auth.example.com"])
def test_the_issuer_is_the_origin_the_document_was_fetched_from(make_app, setup, base_url):
    app = make_app(AUTHSVC_DEFAULT_DOMAIN=HOST)
    response = app.test_client().get(METADATA, base_url=base_url)
    metadata = AuthorizationServerMetadata(response.get_json())
    metadata.validate()
    # RFC 8414 3.3: the issuer must be the one whose well-known URL was fetched.
    assert get_well_known_url(metadata["issuer"], external=True) == base_url + METADATA
    assert metadata["token_endpoint"] == base_url + "/auth/oauth/token"


def test_each_domain_lists_its_own_scopes(client, setup, world):
    world.domain(OTHER_HOST, scopes="public booking.read")
    response = client.get(METADATA, headers=headers(OTHER_HOST))
    assert response.get_json()["scopes_supported"] == ["public", "booking.read"]
    assert response.get_json()["issuer"] == f"https://{OTHER_HOST}"
    assert response.headers["Vary"] == "Host"


def test_an_unknown_host_has_no_document(client, setup):
    response = client.get(METADATA, headers=headers("nowhere.example"))
    assert response.status_code == 404
    assert response.get_json()["error"] == "unknown_domain"


def test_the_document_says_authorization_responses_carry_iss(client, setup):
    metadata = client.get(METADATA, headers=headers()).get_json()
    assert metadata["authorization_response_iss_parameter_supported"] is True
