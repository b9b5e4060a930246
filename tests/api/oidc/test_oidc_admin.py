"""OpenID Connect settings of applications and the domain's signing keys, from the admin API, the console
and the CLI (the CLI contract of RP-initiated and back-channel logout)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, AuditRecord
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers
from tests.helpers.admin_api import call
from tests.helpers.console import CONSOLE, app_path, as_admin, get, new_application, submit, text

POST_LOGOUT = "https://app.example.com/signed-out"
BACKCHANNEL = "https://app.example.com/backchannel-logout"


# Admin API


def test_an_admin_sets_and_clears_the_oidc_fields_of_an_application(client, setup, keys, world):
    created = call(
        client,
        "post",
        "/oauth_apps",
        keys.admin_key,
        {
            "name": "Wiki",
            "redirect_uris": [REDIRECT_URI],
            "scopes": "public",
            "id_token_signed_response_alg": "ES256",
            "post_logout_redirect_uris": [POST_LOGOUT],
            "backchannel_logout_uri": BACKCHANNEL,
        },
    )
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    assert body["id_token_signed_response_alg"] == "ES256"
    assert body["post_logout_redirect_uris"] == [POST_LOGOUT]
    assert body["backchannel_logout_uri"] == BACKCHANNEL
    (stored,) = world.query(select(Application).where(Application.id == int(body["id"])))
    assert stored.post_logout_redirect_uris == [POST_LOGOUT]

    cleared = call(
        client,
        "patch",
        f"/oauth_apps/{body['id']}",
        keys.admin_key,
        {"id_token_signed_response_alg": None, "post_logout_redirect_uris": None, "backchannel_logout_uri": None},
    )
    assert cleared.status_code == 200
    assert cleared.get_json()["id_token_signed_response_alg"] is None
    assert cleared.get_json()["post_logout_redirect_uris"] == []
    assert cleared.get_json()["backchannel_logout_uri"] is None
    (record,) = world.query(
        select(AuditRecord).where(
            AuditRecord.event == "application.updated", AuditRecord.target == f"application:{body['id']}"
        )
    )
    assert record.details["before"]["backchannel_logout_uri"] == BACKCHANNEL
    assert record.details["after"]["backchannel_logout_uri"] is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id_token_signed_response_alg", "HS256"),
        ("id_token_signed_response_alg", "none"),
        ("post_logout_redirect_uris", ["http://app.example.com/out"]),
        ("post_logout_redirect_uris", ["https://app.example.com/out#x"]),
        ("post_logout_redirect_uris", ["javascript:alert(1)"]),
        ("backchannel_logout_uri", "http://app.example.com/bc"),
        ("backchannel_logout_uri", "https://app.example.com/bc#frag"),
        ("backchannel_logout_uri", "ftp://app.example.com/bc"),
        ("backchannel_logout_uri", "/relative"),
    ],
)
def test_invalid_oidc_fields_are_a_422_naming_the_field(client, setup, keys, field, value):
    response = call(client, "patch", f"/oauth_apps/{setup.public_app.id}", keys.admin_key, {field: value})
    assert response.status_code == 422
    assert field in response.get_json()["fields"]


def test_plain_http_on_loopback_is_allowed_for_development(app, client, setup, keys):
    # A back-channel receiver on loopback only where the operator allows private networks.
    app.config["AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS"] = True
    response = call(
        client,
        "patch",
        f"/oauth_apps/{setup.public_app.id}",
        keys.admin_key,
        {"backchannel_logout_uri": "http://127.0.0.1:8080/bc", "post_logout_redirect_uris": ["http://localhost/out"]},
    )
    assert response.status_code == 200, response.get_json()


def test_an_admin_lists_and_rotates_the_domains_signing_keys_with_an_audit_record(client, setup, keys, world):
    first = client.get("/auth/oauth/jwks", headers=headers()).get_json()["keys"][0]["kid"]
    listed = call(client, "get", f"/domains/{setup.domain.id}/signing_keys", keys.admin_key)
    assert listed.status_code == 200
    assert [(k["kid"], k["alg"], k["state"]) for k in listed.get_json()["keys"]] == [(first, "RS256", "current")]
    assert not {"d", "p", "q", "private_key_encrypted", "public_jwk"} & set(listed.get_json()["keys"][0])

    rotated = call(client, "post", f"/domains/{setup.domain.id}/signing_keys/rotate", keys.admin_key, {"alg": "RS256"})
    assert rotated.status_code == 201
    new = rotated.get_json()
    assert new["state"] == "current" and new["kid"] != first
    states = {
        k["kid"]: k["state"]
        for k in call(client, "get", f"/domains/{setup.domain.id}/signing_keys", keys.admin_key).get_json()["keys"]
    }
    assert states == {new["kid"]: "current", first: "previous"}
    assert [k["kid"] for k in client.get("/auth/oauth/jwks", headers=headers()).get_json()["keys"]] == [
        new["kid"],
        first,
    ]
    (record,) = world.query(select(AuditRecord).where(AuditRecord.event == "signing_key.rotated"))
    assert record.actor.startswith("api_key:")
    assert record.target == f"signing_key:{new['kid']}"


def test_rotation_without_a_body_makes_an_rs256_key_and_a_bad_alg_is_a_422(client, setup, keys):
    path = f"/api/engine/v2/domains/{setup.domain.id}/signing_keys/rotate"
    plain = client.post(path, headers=headers(**{"X-API-Key": keys.admin_key}))
    assert plain.status_code == 201
    assert plain.get_json()["alg"] == "RS256"
    bad = call(client, "post", f"/domains/{setup.domain.id}/signing_keys/rotate", keys.admin_key, {"alg": "HS256"})
    assert bad.status_code == 422
    assert "alg" in bad.get_json()["fields"]


def test_support_lists_keys_but_may_not_rotate_and_another_domain_is_404(client, setup, keys):
    assert call(client, "get", f"/domains/{setup.domain.id}/signing_keys", keys.support_key).status_code == 200
    refused = call(client, "post", f"/domains/{setup.domain.id}/signing_keys/rotate", keys.support_key, {})
    assert refused.status_code == 403
    other = call(client, "post", f"/domains/{keys.other_domain.id}/signing_keys/rotate", keys.admin_key, {})
    assert other.status_code == 404
    # A system admin reaches every domain.
    assert (
        call(
            client, "post", f"/domains/{setup.domain.id}/signing_keys/rotate", keys.system_key, {}, host=OTHER_HOST
        ).status_code
        == 201
    )


# Console


def test_the_console_creates_and_edits_an_applications_oidc_fields(client, setup, people, world):
    as_admin(client)
    created = new_application(
        client,
        setup,
        id_token_signed_response_alg="ES256",
        post_logout_redirect_uris=POST_LOGOUT,
        backchannel_logout_uri=BACKCHANNEL,
    )
    assert created.status_code == 303
    (application,) = world.query(select(Application).where(Application.name == "Room booking"))
    assert application.id_token_signed_response_alg == "ES256"
    assert application.post_logout_redirect_uris == [POST_LOGOUT]
    assert application.backchannel_logout_uri == BACKCHANNEL
    page = text(get(client, app_path(setup, application)))
    assert POST_LOGOUT in page and BACKCHANNEL in page and "ES256" in page

    refused = submit(
        client,
        app_path(setup, application),
        {
            "name": "Room booking",
            "redirect_uris": REDIRECT_URI,
            "scopes": "public",
            "backchannel_logout_uri": "http://x.example/bc",
        },
    )
    assert refused.status_code == 422
    assert "plain http is allowed only for localhost" in text(refused)

    saved = submit(
        client,
        app_path(setup, application),
        {
            # A browser sends every field, the emptied ones too.
            "name": "Room booking",
            "redirect_uris": REDIRECT_URI,
            "scopes": "public",
            "id_token_signed_response_alg": "",
            "post_logout_redirect_uris": "",
            "backchannel_logout_uri": "",
        },
    )
    assert saved.status_code == 303
    (application,) = world.query(select(Application).where(Application.name == "Room booking"))
    assert application.id_token_signed_response_alg is None
    assert application.post_logout_redirect_uris is None
    assert application.backchannel_logout_uri is None


def test_the_console_shows_the_keys_and_rotates_them_with_csrf(client, setup, people, world):
    kid = client.get("/auth/oauth/jwks", headers=headers()).get_json()["keys"][0]["kid"]
    as_admin(client)
    path = f"/domains/{setup.domain.id}/signing_keys"
    page = get(client, path)
    assert page.status_code == 200
    assert kid in text(page) and "current" in text(page)
    forged = submit(client, path, {"alg": "ES256"}, token="forged")
    assert forged.status_code == 400
    assert world.query(select(AuditRecord).where(AuditRecord.event == "signing_key.rotated")) == []
    rotated = submit(client, path, {"alg": "ES256"}, page=page)
    assert rotated.status_code == 303
    (record,) = world.query(select(AuditRecord).where(AuditRecord.event == "signing_key.rotated"))
    assert record.actor == f"user:{people.admin.id}"
    assert record.details["alg"] == "ES256"
    assert "ES256" in text(get(client, path))


def test_support_sees_the_keys_page_without_the_rotate_form(client, setup, people):
    as_admin(client, "support@example.com")
    page = get(client, f"/domains/{setup.domain.id}/signing_keys")
    assert page.status_code == 200
    assert "Rotate key" not in text(page)
    assert client.post(f"{CONSOLE}/domains/{setup.domain.id}/signing_keys", headers=headers()).status_code in (400, 403)


# CLI


def run(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_apps_create_and_update_take_the_logout_options(runner, setup, world):
    created = run(
        runner,
        *("apps", "create", "--domain", HOST, "--name", "CLI RP", "--redirect-uri", REDIRECT_URI),
        *("--post-logout-redirect-uri", POST_LOGOUT, "--post-logout-redirect-uri", POST_LOGOUT + "/2"),
        *("--backchannel-logout-uri", BACKCHANNEL),
    )
    assert set(created) == {"id", "client_id"}
    (application,) = world.query(select(Application).where(Application.client_id == created["client_id"]))
    assert application.post_logout_redirect_uris == [POST_LOGOUT, POST_LOGOUT + "/2"]
    assert application.backchannel_logout_uri == BACKCHANNEL
    updated = run(
        runner,
        *("apps", "update", "--client-id", created["client_id"], "--backchannel-logout-uri", ""),
        *("--no-post-logout-redirect-uris", "--id-token-alg", "ES256"),
    )
    assert updated["backchannel_logout_uri"] is None
    assert updated["post_logout_redirect_uris"] == []
    assert updated["id_token_signed_response_alg"] == "ES256"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--post-logout-redirect-uri", "http://app.example.com/out", "plain http"),
        ("--backchannel-logout-uri", "http://app.example.com/bc", "plain http"),
        ("--backchannel-logout-uri", "https://app.example.com/bc#f", "without a fragment"),
    ],
)
def test_apps_create_refuses_bad_logout_uris_clearly(runner, setup, option, value, message):
    result = runner.invoke(
        args=["apps", "create", "--domain", HOST, "--name", "X", "--redirect-uri", REDIRECT_URI, option, value]
    )
    assert result.exit_code != 0
    assert message in result.output
