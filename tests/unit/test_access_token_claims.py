"""The claims of JWT access tokens (RFC 9068 2.2), as the builder makes them."""

from __future__ import annotations

from authsvc.core.models import Application, User
from authsvc.oauth import access_tokens

BASE = {
    "issuer": "https://auth.example.com",
    "audience": "auth.example.com",
    "subject": "7",
    "client_id": "client-1",
    "scope": "public openid",
    "issued_at": 1_800_000_000,
    "expires_at": 1_800_003_600,
    "jti": "an-id",
}


def test_the_required_claims_are_all_there():
    claims = access_tokens.claims(**BASE)
    assert claims == {
        "iss": "https://auth.example.com",
        "exp": 1_800_003_600,
        "aud": "auth.example.com",
        "sub": "7",
        "client_id": "client-1",
        "iat": 1_800_000_000,
        "jti": "an-id",
        "scope": "public openid",
    }


def test_unknown_sign_in_details_and_an_unbound_token_add_no_claims():
    claims = access_tokens.claims(**BASE, auth_time=None, acr=None, jkt=None)
    assert not {"auth_time", "acr", "cnf"} & set(claims)


def test_the_sign_in_and_a_key_binding_are_stated_when_known():
    claims = access_tokens.claims(
        **BASE, auth_time=1_799_999_000, acr="mfa", jkt="0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
    )
    assert claims["auth_time"] == 1_799_999_000
    assert claims["acr"] == "mfa"
    assert claims["cnf"] == {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}


def test_several_resources_are_a_list_audience():
    claims = access_tokens.claims(**{**BASE, "audience": ["https://a.example.com/", "https://b.example.com/"]})
    assert claims["aud"] == ["https://a.example.com/", "https://b.example.com/"]


def test_the_subject_is_the_user_or_for_client_credentials_the_client():
    client = Application(client_id="client-1")
    user = User(id=42)
    assert access_tokens.subject(client, user, "authorization_code") == "42"
    assert access_tokens.subject(client, user, "password") == "42"
    # RFC 9068 2.2: no resource owner in the grant, though the token acts as the service account.
    assert access_tokens.subject(client, user, "client_credentials") == "client-1"
    assert access_tokens.subject(client, None, "refresh_token") == "client-1"


def test_acr_is_mfa_only_after_a_second_factor():
    assert access_tokens.acr_of(["pwd", "mfa", "otp"]) == "mfa"
    assert access_tokens.acr_of(["pwd"]) is None
    assert access_tokens.acr_of(None) is None


def test_each_token_gets_its_own_jti():
    assert len({access_tokens.new_jti() for _ in range(100)}) == 100
