"""OpenID Connect Discovery per domain and UserInfo."""

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from authlib.oidc.discovery import OpenIDProviderMetadata
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.helpers import HOST, OIDC_SCOPES, OTHER_HOST, get_code, headers, signin
from tests.helpers.id_tokens import exchange

DISCOVERY = "/.well-known/openid-configuration"


def tokens(client, oidc, scope):
    signin(client)
    code = get_code(client, oidc.app.client_id, scope=scope)
    response = exchange(client, oidc.app, oidc.secret, code)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_the_discovery_document_has_every_required_and_recommended_field(client, oidc):
    response = client.get(DISCOVERY, headers=headers())
    assert response.status_code == 200
    assert response.headers["Vary"] == "Host"
    metadata = OpenIDProviderMetadata(response.get_json())
    metadata.validate()
    base = f"https://{HOST}"
    assert metadata["issuer"] == base
    assert metadata["authorization_endpoint"] == f"{base}/auth/oauth/authorize"
    assert metadata["token_endpoint"] == f"{base}/auth/oauth/token"
    assert metadata["userinfo_endpoint"] == f"{base}/auth/oauth/userinfo"
    assert metadata["jwks_uri"] == f"{base}/auth/oauth/jwks"
    assert metadata["scopes_supported"] == OIDC_SCOPES.split()
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["subject_types_supported"] == ["public"]
    assert metadata["id_token_signing_alg_values_supported"] == ["RS256", "ES256"]
    assert {"sub", "iss", "aud", "nonce", "sid", "auth_time", "email", "name", "groups"} <= set(
        metadata["claims_supported"]
    )
    assert metadata["code_challenge_methods_supported"] == ["S256", "plain"]
    assert metadata["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "password",
        "urn:ietf:params:oauth:grant-type:device_code",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ]
    assert metadata["request_parameter_supported"] is True
    assert metadata["request_uri_parameter_supported"] is False


def test_the_rfc8414_document_gains_the_same_endpoints(client, oidc):
    metadata = AuthorizationServerMetadata(
        client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    )
    metadata.validate()
    discovery = client.get(DISCOVERY, headers=headers()).get_json()
    for field in ("issuer", "authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
        assert metadata[field] == discovery[field], field


def test_each_domain_has_its_own_discovery_document(client, oidc, world):
    world.domain(OTHER_HOST, scopes="public booking.read")
    document = client.get(DISCOVERY, headers=headers(OTHER_HOST)).get_json()
    assert document["issuer"] == f"https://{OTHER_HOST}"
    assert document["jwks_uri"] == f"https://{OTHER_HOST}/auth/oauth/jwks"
    assert document["scopes_supported"] == ["public", "booking.read"]
    assert client.get(DISCOVERY, headers=headers("nowhere.example")).status_code == 404


def test_userinfo_answers_get_and_post_with_the_claims_of_the_tokens_scopes(client, oidc):
    body = tokens(client, oidc, "openid profile email groups")
    id_claims = jwt.decode(
        body["id_token"], KeySet.import_key_set(client.get("/auth/oauth/jwks", headers=headers()).get_json())
    ).claims
    auth = headers(Authorization=f"Bearer {body['access_token']}")
    for response in (
        client.get("/auth/oauth/userinfo", headers=auth),
        client.post("/auth/oauth/userinfo", headers=auth),
    ):
        assert response.status_code == 200, response.get_json()
        assert response.headers["Cache-Control"] == "no-store"
        assert response.get_json() == {
            "sub": id_claims["sub"],
            "name": "Person",
            "email": "person@example.com",
            "email_verified": True,
            "groups": ["staff", "ops"],
        }


def test_userinfo_with_openid_alone_gives_only_sub(client, oidc):
    body = tokens(client, oidc, "openid")
    response = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {body['access_token']}"))
    assert response.get_json() == {"sub": str(oidc.person.id)}


def test_a_token_without_openid_gets_403_insufficient_scope(client, oidc):
    body = tokens(client, oidc, "public email")
    response = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {body['access_token']}"))
    assert response.status_code == 403
    assert response.get_json()["error"] == "insufficient_scope"
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]


def test_a_bad_or_missing_token_gets_401_with_www_authenticate(client, oidc):
    response = client.get("/auth/oauth/userinfo", headers=headers(Authorization="Bearer not-a-token"))
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
    assert response.headers["WWW-Authenticate"].startswith('Bearer realm="authsvc"')
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    response = client.post("/auth/oauth/userinfo", headers=headers())
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="authsvc"'


def test_an_api_key_is_not_a_userinfo_credential(client, oidc, world):
    key = world.api_key(oidc.person, scopes="public openid")
    response = client.get("/auth/oauth/userinfo", headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 401
    assert response.get_json()["error"] == "invalid_token"
