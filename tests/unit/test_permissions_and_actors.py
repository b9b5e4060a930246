"""The permission bits and the audit names of actors, as pure rules."""

from __future__ import annotations

import json

import pytest

from authsvc.core import actors
from authsvc.core.models import capped_permissions
from authsvc.core.permissions import SUPPORT_OR_ADMIN, Permission


def test_the_bits_keep_their_placeos_values():
    # inspect's ``u.p`` and stored API keys rely on these integers.
    assert int(Permission.SUPPORT) == 1
    assert int(Permission.ADMIN) == 2
    assert int(SUPPORT_OR_ADMIN) == 3
    assert json.dumps({"p": Permission.SUPPORT | Permission.ADMIN}) == '{"p": 3}'


@pytest.mark.parametrize(
    ("support", "admin", "bits"),
    [(False, False, 0), (True, False, 1), (False, True, 2), (True, True, 3)],
)
def test_a_users_flags_give_the_bits(support, admin, bits):
    permission = Permission.of(support=support, admin=admin)
    assert permission == bits
    assert bool(permission & SUPPORT_OR_ADMIN) == (support or admin)
    assert bool(permission & Permission.ADMIN) == admin


@pytest.mark.parametrize(
    ("level", "bits", "capped"),
    [
        ("admin", 3, 3),
        ("admin", 2, 2),
        ("admin", 0, 0),
        ("support", 3, 1),
        ("support", 2, 1),
        ("support", 0, 0),
        ("user", 3, 0),
    ],
)
def test_an_api_key_level_caps_the_users_bits(level, bits, capped):
    result = capped_permissions(level, Permission(bits))
    assert isinstance(result, Permission)
    assert result == capped


def test_actor_names_have_one_spelling_per_kind():
    assert actors.of_user(12) == "user:12"
    assert actors.of_user("12") == "user:12"
    assert actors.of_client("my-app") == "client:my-app"
    assert actors.of_api_key("3f9c") == "api_key:3f9c"
