"""Which token_endpoint_auth_method and keys an application may register (RFC 7591 2, RFC 7523 2.2):
oauth/client_authentication.py's rules, without the app. Signing in with the keys is
tests/api/oauth/test_private_key_jwt.py."""

from __future__ import annotations

import pytest
from joserfc.jwk import ECKey, OctKey, RSAKey

from authsvc.core import validation
from authsvc.oauth import client_authentication

RSA_KEY = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
EC_KEY = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
JWKS = {"keys": [RSA_KEY.as_dict(private=False), EC_KEY.as_dict(private=False)]}


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({"keys": [RSA_KEY.as_dict(private=True)]}, "private"),
        ({"keys": [EC_KEY.as_dict(private=True)]}, "private"),
        ({"keys": [OctKey.generate_key(256).as_dict()]}, "private"),
        ({"keys": [{**EC_KEY.as_dict(private=False), "kty": "oct"}]}, "kty"),
        ({"keys": []}, "between"),
        ({"keys": [RSAKey.generate_key(1024).as_dict(private=False)]}, "2048"),
        (
            {"keys": [{**RSA_KEY.as_dict(private=False), "kid": "a"}, {**EC_KEY.as_dict(private=False), "kid": "a"}]},
            "kid",
        ),
        ({"keys": [{**RSA_KEY.as_dict(private=False), "alg": "HS256"}]}, "alg"),
        ({"keys": [{**RSA_KEY.as_dict(private=False), "use": "enc"}]}, "use"),
        ({"keys": [{"kty": "RSA", "n": "bad", "e": "AQAB"}]}, "cannot be read"),
        ([], "keys"),
    ],
)
def test_registered_jwks_must_be_public_signing_keys(document, fragment):
    with pytest.raises(validation.Invalid, match=fragment):
        client_authentication.fields(None, jwks=document)


@pytest.mark.parametrize(
    ("method", "jwks", "jwks_uri", "fragment"),
    [
        ("private_key_jwt", None, None, "needs"),
        ("client_secret_basic", JWKS, None, "only for"),
        (None, JWKS, "https://keys.example/jwks", "not both"),
        ("client_secret_jwt", None, None, "must be one of"),
        (None, None, "http://keys.example/jwks", "http"),
        (None, None, "https://10.0.0.1/jwks", "private"),
    ],
)
def test_auth_method_and_keys_are_checked_together(method, jwks, jwks_uri, fragment):
    with pytest.raises(validation.Invalid, match=fragment):
        client_authentication.fields(method, jwks=jwks, jwks_uri=jwks_uri)


def test_keys_alone_mean_private_key_jwt():
    fields = client_authentication.fields(None, jwks_uri="https://keys.example/jwks")
    assert fields == {
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks": None,
        "jwks_uri": "https://keys.example/jwks",
    }
