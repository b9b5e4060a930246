"""What the consent page says, set through the admin API and the command line: a domain's descriptions of its
scopes (per locale), an application's logo (an admin's, through the domain logo's checks; a registered
``logo_uri`` kept as the client's claim). The page itself: tests/api/oauth/test_consent_page.py."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, ApplicationLogo, AuditRecord
from authsvc.core.scope_text import BUILT_IN
from authsvc.sso.providers import GRAPH_PERMISSIONS
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers
from tests.helpers.admin_api import call
from tests.helpers.images import SVG, image

DESCRIPTIONS = "/domains/1/scope_descriptions"


def put_app_logo(client, key, application_id, data: bytes):
    return client.put(
        f"/api/engine/v2/oauth_apps/{application_id}/logo",
        data=data,
        headers=headers(HOST, **{"X-API-Key": key, "Content-Type": "image/png"}),
    )


def test_every_standard_scope_and_graph_permission_has_a_built_in_description():
    for scope in ["openid", "profile", "email", "offline_access", *GRAPH_PERMISSIONS]:
        assert BUILT_IN.get(scope), scope


def test_an_admin_describes_a_scope_per_locale_support_reads_and_each_change_is_audited(app, client, keys):
    answer = call(client, "put", DESCRIPTIONS, keys.admin_key, json={"scope": "mqtt.read", "text": "Read sensors."})
    assert answer.status_code == 200, answer.json
    call(client, "put", DESCRIPTIONS, keys.admin_key, json={"scope": "mqtt.read", "locale": "de", "text": "Sensoren."})
    read = call(client, "get", DESCRIPTIONS, keys.support_key)
    assert read.status_code == 200
    assert [(d["scope"], d["locale"], d["text"]) for d in read.json["descriptions"]] == [
        ("mqtt.read", None, "Read sensors."),
        ("mqtt.read", "de", "Sensoren."),
    ]
    assert read.json["built_in"]["openid"] == BUILT_IN["openid"]
    assert call(client, "put", DESCRIPTIONS, keys.support_key, json={"scope": "public", "text": "x"}).status_code == 403
    removed = call(
        client, "put", DESCRIPTIONS, keys.admin_key, json={"scope": "mqtt.read", "locale": "de", "text": None}
    )
    assert [d["locale"] for d in removed.json["descriptions"]] == [None]
    with app.app_context():
        from authsvc.core.database import db

        records = db.session.scalars(select(AuditRecord).where(AuditRecord.event == "domain.scope_described")).all()
        assert [r.details["after"]["text"] for r in records] == ["Read sensors.", "Sensoren.", None]


def test_another_domains_admin_sees_nothing(client, keys, world):
    stranger = world.user(keys.other_domain, "admin@other.example", admin=True)
    other_key = world.api_key(stranger, scopes="public admin", permission="admin")
    assert call(client, "get", DESCRIPTIONS, other_key, host=OTHER_HOST).status_code == 404


@pytest.mark.parametrize(
    "body,field,reason",
    [
        ({"scope": "calendar.write", "text": "x"}, "scope", "not a scope of this domain"),
        ({"scope": "public", "text": "x" * 301}, "text", "at most 300"),
        ({"scope": "public", "text": "   "}, "text", "must not be empty"),
        ({"scope": "public", "text": "one\nline"}, "text", "one line"),
        ({"scope": "public", "text": "x", "locale": "english please"}, "locale", "language tag"),
        ({"scope": "public", "text": 12}, "text", "string"),
        ({"text": "x"}, "scope", "required"),
    ],
)
def test_a_refused_description_names_its_field_and_the_reason(client, keys, body, field, reason):
    answer = call(client, "put", DESCRIPTIONS, keys.admin_key, json=body)
    assert answer.status_code == 422, answer.json
    assert reason in answer.json["fields"][field], answer.json
    assert call(client, "get", DESCRIPTIONS, keys.admin_key).json["descriptions"] == []


def test_the_command_describes_a_scope_and_prints_the_descriptions(runner, setup):
    args = ["domains", "scopes", "describe", "--domain", HOST, "--scope", "mqtt.read"]
    result = runner.invoke(args=[*args, "--text", "Lire les capteurs.", "--locale", "fr"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["descriptions"] == [
        {
            "scope": "mqtt.read",
            "locale": "fr",
            "text": "Lire les capteurs.",
            "updated_at": shown["descriptions"][0]["updated_at"],
        }
    ]
    removed = runner.invoke(args=[*args, "--locale", "fr", "--remove"])
    assert removed.exit_code == 0 and json.loads(removed.output)["descriptions"] == []


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--scope", "nope", "--text", "x"], "--scope: 'nope' is not a scope of this domain"),
        (["--scope", "public", "--text", "x" * 301], "--text: is 301 characters long; at most 300"),
        (["--scope", "public", "--text", "x", "--locale", "??"], "--locale: '??' is not a language tag"),
        (["--scope", "public"], "give --text, or --remove"),
    ],
)
def test_the_command_names_the_refused_option_and_why(runner, setup, extra, message):
    result = runner.invoke(args=["domains", "scopes", "describe", "--domain", HOST, *extra])
    assert result.exit_code != 0
    assert message in result.output


def test_an_admins_application_logo_is_checked_reencoded_and_served_from_our_host(client, keys, setup, world):
    application, _ = world.application(setup.domain, consent=True)
    refused = put_app_logo(client, keys.admin_key, application.id, SVG)
    assert refused.status_code == 422 and "SVG" in refused.json["fields"]["logo"], (refused.data, application.id)
    answer = put_app_logo(client, keys.admin_key, application.id, image("PNG") + b"<script>")
    assert answer.status_code == 200, answer.json
    digest = answer.json["logo"]["digest"]
    served = client.get(f"/auth/branding/applications/{application.client_id}/logo?v={digest}", headers=headers())
    assert served.status_code == 200 and served.mimetype == "image/png" and b"<script>" not in served.data
    assert served.headers["ETag"] == f'"{digest}"'
    # Another domain's host does not serve it.
    assert (
        client.get(f"/auth/branding/applications/{application.client_id}/logo", headers=headers(OTHER_HOST)).status_code
        == 404
    )
    removed = call(client, "delete", f"/oauth_apps/{application.id}/logo", keys.admin_key)
    assert removed.status_code == 200 and removed.json["logo"] is None


def test_the_command_sets_an_applications_logo(runner, setup, world, tmp_path):
    application, _ = world.application(setup.domain)
    logo = tmp_path / "app.jpg"
    logo.write_bytes(image("JPEG"))
    result = runner.invoke(args=["apps", "update", "--client-id", application.client_id, "--logo", str(logo)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["logo"]["logo"]["content_type"] == "image/jpeg"
    svg = tmp_path / "app.svg"
    svg.write_bytes(SVG)
    refused = runner.invoke(args=["apps", "update", "--client-id", application.client_id, "--logo", str(svg)])
    assert refused.exit_code != 0 and "--logo: the logo must be a PNG, JPEG or WebP image" in refused.output


def test_registration_keeps_logo_uri_as_the_clients_claim(client, world, setup):
    from authsvc.core.models import RegistrationToken

    with world.app.app_context():
        token, value = RegistrationToken.issue(setup.domain.id, expires_in=600, max_uses=2, created_by="test")
    world.save(token)
    metadata = {"redirect_uris": [REDIRECT_URI], "client_name": "Partner", "logo_uri": "https://partner.example/l.png"}
    answer = client.post("/auth/oauth/register", json=metadata, headers=headers(Authorization=f"Bearer {value}"))
    assert answer.status_code == 201, answer.get_json()
    assert answer.get_json()["logo_uri"] == "https://partner.example/l.png"
    [row] = world.query(
        select(ApplicationLogo).join(Application).where(Application.client_id == answer.get_json()["client_id"])
    )
    assert row.declared_uri == "https://partner.example/l.png" and row.logo_digest is None
    bad = client.post(
        "/auth/oauth/register",
        json=metadata | {"logo_uri": "javascript:alert(1)"},
        headers=headers(Authorization=f"Bearer {value}"),
    )
    assert bad.status_code == 400 and "logo_uri" in bad.get_json()["error_description"]


def test_an_application_with_a_logo_and_a_domain_with_descriptions_can_be_deleted(client, keys, setup, world):
    application, _ = world.application(setup.domain)
    assert put_app_logo(client, keys.admin_key, application.id, image()).status_code == 200
    assert call(client, "delete", f"/oauth_apps/{application.id}", keys.admin_key).status_code == 200
    assert world.query(select(ApplicationLogo)) == []
    call(client, "put", DESCRIPTIONS, keys.admin_key, json={"scope": "public", "text": "Public things."})
    answer = call(client, "delete", "/domains/1?force=true", keys.system_key, host=OTHER_HOST)
    assert answer.status_code == 200, answer.json
