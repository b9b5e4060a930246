"""PKCE (RFC 7636, as RFC 9700 2.1.1 has it) as a plain rule: which challenge an application accepts.

The same through the authorisation endpoint and the code exchange is tests/api/oauth/test_authorize.py and
tests/api/oauth/test_code_exchange.py.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from authlib.oauth2.rfc7636 import CodeChallenge, create_s256_code_challenge

from authsvc.oauth.grants import pkce_problem
from tests.helpers import pkce_pair

CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGEzrIz2YQ"


@pytest.mark.parametrize(
    ("challenge", "method", "require", "plain", "problem"),
    [
        # An application that requires PKCE: S256, named.
        (CHALLENGE, "S256", True, False, None),
        (None, None, True, False, "requires PKCE: send 'code_challenge' with S256"),
        ("", "S256", True, False, "requires PKCE"),
        (CHALLENGE, None, True, False, "requires 'code_challenge_method'"),
        (CHALLENGE, "plain", True, False, "must be S256"),
        (CHALLENGE, "plain", True, True, None),
        # A legacy application: PKCE is optional, and an omitted method means plain (RFC 7636 4.3).
        (None, None, False, False, None),
        (CHALLENGE, "S256", False, False, None),
        (CHALLENGE, None, False, False, "must be S256"),
        (CHALLENGE, None, False, True, None),
        (CHALLENGE, "plain", False, True, None),
    ],
)
def test_which_challenge_an_application_accepts(challenge, method, require, plain, problem):
    found = pkce_problem(challenge, method, require_pkce=require, allow_plain=plain)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_the_tests_pairs_are_s256_as_the_server_checks_them():
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128  # RFC 7636 4.1
    assert challenge == create_s256_code_challenge(verifier)
    compare = CodeChallenge.CODE_CHALLENGE_METHODS["S256"]  # what the code exchange checks with
    assert compare(verifier, challenge)
    assert not compare(verifier + "x", challenge)


def test_s256_is_the_unpadded_base64url_sha256_of_the_verifier():
    verifier = "a" * 43
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    assert create_s256_code_challenge(verifier) == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
