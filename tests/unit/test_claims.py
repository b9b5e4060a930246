"""The claims an ID token and userinfo state (OpenID Connect Core 5.4, 2), as plain functions: no app, no HTTP.

The same claims in signed ID tokens and userinfo answers are tests/api/oidc/test_id_tokens.py and
tests/api/oidc/test_oidc_discovery_userinfo.py.
"""

from __future__ import annotations

import pytest

from authsvc.core.models import User
from authsvc.oauth.oidc import SignIn, user_claims


def person(**fields) -> User:
    # A model instance that is never saved: user_claims reads its columns only.
    defaults = {"id": 7, "name": "Ada Lovelace", "email": "ada@example.com", "email_verified": True}
    return User(**{**defaults, **fields})


@pytest.mark.parametrize(
    ("scope", "claims"),
    [
        ("openid", {"sub": "7"}),
        ("openid profile", {"sub": "7", "name": "Ada Lovelace"}),
        ("openid email", {"sub": "7", "email": "ada@example.com", "email_verified": True}),
        ("openid groups", {"sub": "7", "groups": ["staff", "ops"]}),
        (
            "openid profile email groups public",
            {
                "sub": "7",
                "name": "Ada Lovelace",
                "email": "ada@example.com",
                "email_verified": True,
                "groups": ["staff", "ops"],
            },
        ),
    ],
)
def test_each_scope_adds_its_claims_and_sub_is_always_there(scope, claims):
    assert dict(user_claims(person(groups=["staff", "ops"]), scope)) == claims


def test_an_address_nobody_vouched_for_is_not_verified():
    assert user_claims(person(email_verified=None), "email")["email_verified"] is False
    assert user_claims(person(email_verified=False), "email")["email_verified"] is False


def test_a_user_without_groups_has_an_empty_list():
    assert user_claims(person(groups=None), "groups")["groups"] == []


def test_sub_is_the_id_as_a_string():
    assert user_claims(person(id=12345), "openid")["sub"] == "12345"


@pytest.mark.parametrize(
    ("amr", "acr"),
    [(["pwd"], None), (["fed"], None), (["pwd", "mfa"], "mfa"), (["pwd", "otp", "mfa"], "mfa"), (None, None)],
)
def test_acr_is_mfa_only_after_a_second_factor(amr, acr):
    sign_in = SignIn(auth_time=1_700_000_000, amr=amr, sid="sid-1")
    assert sign_in.get_acr() == acr
    assert sign_in.get_amr() == amr
    assert sign_in.get_auth_time() == 1_700_000_000
    assert sign_in.get_nonce() is None
