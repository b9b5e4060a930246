"""Delegated tokens (docs/platform.md): ``/users/resource_token`` hands out the access token the provider gave a user
who signed in through it, refreshed when near expiry, to that user's own credentials or to an admin's, and
only with the reserved scopes for it."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, ExternalIdentity, User
from tests.helpers import OTHER_HOST, REDIRECT_URI, get_code, headers
from tests.helpers.sso import sign_in

# The reserved scopes a credential needs for delegated tokens: its user's own, or (with admin) another user's.
DELEGATED = "public resource_token"
ADMIN_DELEGATED = "public admin resource_token"


@pytest.fixture
def ada_token(client, world, setup, oidc, oidc_id):
    world.update(Application, setup.public_app.id, scopes=DELEGATED)
    sign_in(client, oidc_id)
    code = parse_qs(
        urlsplit(
            client.get(
                "/auth/oauth/authorize",
                query_string={
                    "response_type": "code",
                    "client_id": setup.public_app.client_id,
                    "redirect_uri": "https://app.example.com/callback",
                    "scope": DELEGATED,
                },
                headers=headers(),
            ).headers["Location"]
        ).query
    )["code"][0]
    token = client.post(
        "/auth/oauth/token",
        query_string={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": setup.public_app.client_id,
            "redirect_uri": "https://app.example.com/callback",
        },
        headers=headers(),
    ).get_json()
    return token["access_token"]


def resource_token(client, token, path="/api/engine/v2/users/resource_token", method="post"):
    return getattr(client, method)(path, headers=headers(Authorization=f"Bearer {token}"))


def signed_in_token(client, setup, scope):
    """An access token of the user signed in with ``client``, granted ``scope`` by the public application."""
    code = get_code(client, setup.public_app.client_id, scope=scope)
    form = {"grant_type": "authorization_code", "code": code, "client_id": setup.public_app.client_id}
    response = client.post("/auth/oauth/token", data=form | {"redirect_uri": REDIRECT_URI}, headers=headers())
    assert response.get_json()["scope"] == scope
    return response.get_json()["access_token"]


def test_resource_token_returns_the_providers_access_token(client, oidc, ada_token):
    response = resource_token(client, ada_token)
    assert response.status_code == 200
    body = response.get_json()
    assert body["token"] in oidc.tokens
    assert body["expires"] > time.time() + 3000
    assert oidc.refreshes == 0


def test_a_token_near_expiry_is_refreshed_and_the_new_pair_saved(client, world, oidc, oidc_id, setup):
    oidc.expires_in = 120
    sign_in(client, oidc_id)
    [identity] = world.query(select(ExternalIdentity))
    user = world.query(select(User).where(User.id == identity.user_id))[0]
    world.update(User, user.id, admin=False)
    key = world.api_key(user, scopes=DELEGATED)
    first = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key})).get_json()
    assert oidc.refreshes == 1
    oidc.expires_in = 3600
    assert first["token"] in oidc.tokens
    [after] = world.query(select(ExternalIdentity))
    assert after.refresh_token_encrypted != identity.refresh_token_encrypted
    oidc.expires_in = 3600
    second = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key})).get_json()
    assert oidc.refreshes == 2, "120 s is inside the 5-minute margin, so it refreshes again"
    assert second["token"] != first["token"]


def test_a_refused_refresh_is_a_409_and_marks_the_identity(client, world, oidc, oidc_id, setup):
    oidc.expires_in = 60
    sign_in(client, oidc_id)
    [identity] = world.query(select(ExternalIdentity))
    key = world.api_key(world.query(select(User).where(User.id == identity.user_id))[0], scopes=DELEGATED)
    oidc.fault = "refuse_refresh"
    response = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 409
    assert response.get_json()["error"] == "reauthentication_required"
    assert world.query(select(ExternalIdentity))[0].needs_reauth is True
    oidc.fault = None
    sign_in(client, oidc_id)
    assert world.query(select(ExternalIdentity))[0].needs_reauth is False


def test_resource_token_picks_a_provider_and_an_odd_provider_id_has_none(client, oidc, oidc_id, ada_token):
    def ask(provider):
        return client.post(
            "/api/engine/v2/users/resource_token",
            query_string={"provider": provider},
            headers=headers(Authorization=f"Bearer {ada_token}"),
        )

    assert ask(oidc_id).get_json()["token"] in oidc.tokens
    for provider in ("\x00", "ab\x00cd", "no-such-id"):
        response = ask(provider)
        assert response.status_code == 404, "NUL reached PostgreSQL and was a 500"
        assert response.get_json()["error"] == "no_resource_token"


def test_a_public_only_token_cannot_read_or_clear_the_users_provider_token(client, world, setup, oidc, oidc_id):
    world.update(Application, setup.public_app.id, scopes=DELEGATED)
    sign_in(client, oidc_id)
    token = signed_in_token(client, setup, "public")
    for method in ("post", "delete"):
        response = resource_token(client, token, method=method)
        assert response.status_code == 403
        assert response.get_json()["error"] == "insufficient_scope"
        assert all(stored not in response.get_data(as_text=True) for stored in oidc.tokens)
        challenge = response.headers["WWW-Authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="resource_token"' in challenge
    [identity] = world.query(select(ExternalIdentity))
    assert identity.access_token_encrypted is not None, "the refused DELETE cleared nothing"
    assert resource_token(client, signed_in_token(client, setup, DELEGATED)).get_json()["token"] in oidc.tokens


def test_resource_token_needs_a_credential(client, setup):
    assert client.post("/api/engine/v2/users/resource_token", headers=headers()).status_code == 401


def test_a_password_user_has_no_resource_token(client, world, setup):
    key = world.api_key(setup.person, scopes=DELEGATED)
    response = client.post("/api/engine/v2/users/resource_token", headers=headers(**{"X-API-Key": key}))
    assert response.status_code == 404


# Another user's token, for an admin


def test_an_admin_gets_and_clears_a_users_resource_token(client, world, setup, oidc, oidc_id, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    admin_key = world.api_key(setup.person, scopes=ADMIN_DELEGATED, permission="admin")
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    assert client.post(path, headers=headers(**{"X-API-Key": admin_key})).status_code == 403
    world.update(User, setup.person.id, admin=True)
    response = client.post(path, headers=headers(**{"X-API-Key": admin_key}))
    assert response.status_code == 200
    assert response.get_json()["token"] in oidc.tokens
    cleared = client.delete(path, headers=headers(**{"X-API-Key": admin_key}))
    assert cleared.get_json() == {"cleared": 1}
    again = client.post(path, headers=headers(**{"X-API-Key": admin_key}))
    assert again.status_code == 404
    assert again.get_json()["error"] == "no_resource_token"
    missing = client.post("/api/engine/v2/users/999999/resource_token", headers=headers(**{"X-API-Key": admin_key}))
    assert missing.status_code == 404


def test_an_admin_key_needs_both_reserved_scopes_for_another_users_provider_token(client, world, setup, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    world.update(User, setup.person.id, admin=True)
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    for scopes in ("public admin", "public resource_token"):
        key = world.api_key(setup.person, scopes=scopes, permission="admin")
        for method in ("post", "delete"):
            response = getattr(client, method)(path, headers=headers(**{"X-API-Key": key}))
            assert response.status_code == 403, (scopes, method)
            assert response.get_json()["error"] == "insufficient_scope"
            assert 'scope="admin resource_token"' in response.headers["WWW-Authenticate"]
    assert world.query(select(ExternalIdentity))[0].access_token_encrypted is not None


def test_a_domain_admin_cannot_read_or_clear_a_system_admins_provider_token(client, world, setup, oidc, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    world.update(User, identity.user_id, admin=True, system_admin=True)
    world.update(User, setup.person.id, admin=True)
    admin_key = world.api_key(setup.person, scopes=ADMIN_DELEGATED, permission="admin")
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    for method in ("post", "delete"):
        response = getattr(client, method)(path, headers=headers(**{"X-API-Key": admin_key}))
        assert response.status_code == 403, method
        assert response.get_json()["error"] == "forbidden"
    assert world.query(select(ExternalIdentity))[0].access_token_encrypted is not None
    other = world.domain(OTHER_HOST)
    root = world.user(other, "root@example.com", admin=True, system_admin=True)
    root_key = world.api_key(root, scopes=ADMIN_DELEGATED, permission="admin")
    by_root = client.post(path, headers=headers(OTHER_HOST, **{"X-API-Key": root_key}))
    assert by_root.status_code == 200
    assert by_root.get_json()["token"] in oidc.tokens


def test_a_domain_admin_cannot_reach_a_user_of_another_domain(client, world, setup, ada_token):
    [identity] = world.query(select(ExternalIdentity))
    other = world.domain(OTHER_HOST)
    admin = world.user(other, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes=ADMIN_DELEGATED, permission="admin")
    path = f"/api/engine/v2/users/{identity.user_id}/resource_token"
    for method in ("post", "delete"):
        response = getattr(client, method)(path, headers=headers(OTHER_HOST, **{"X-API-Key": key}))
        assert response.status_code == 404, method
        assert response.get_json()["error"] == "not_found"
    assert world.query(select(ExternalIdentity))[0].access_token_encrypted is not None


@pytest.mark.parametrize("method", ["post", "delete"])
def test_an_admin_names_a_user_by_ascii_digits_only(client, world, setup, method):
    """ "²" was a 500 (int() refuses it) and Arabic-Indic digits named the user with that number."""
    world.update(User, setup.person.id, admin=True)
    admin_key = world.api_key(setup.person, scopes=ADMIN_DELEGATED, permission="admin")
    arabic_indic = "".join(chr(0x660 + int(d)) for d in str(setup.service.id))
    # 2147483648 is past SQL's INTEGER, which PostgreSQL refused (a 500).
    for user_id in ("\u00b2", arabic_indic, f"{setup.service.id}\u00b2", "2147483648"):
        response = getattr(client, method)(
            f"/api/engine/v2/users/{user_id}/resource_token", headers=headers(**{"X-API-Key": admin_key})
        )
        assert response.status_code == 404, user_id
        assert response.get_json()["error"] == "not_found"
