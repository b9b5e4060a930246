"""A domain's security profile (``standard`` or ``fapi2``) through the admin API, the
command line, the console and dynamic registration; an application that would break the FAPI 2.0
profile is refused when it is saved, and a domain switches only once every application complies."""

from __future__ import annotations

import json

from joserfc.jwk import RSAKey
from sqlalchemy import select

from authsvc.core.database import db
from authsvc.core.models import Application, AuditRecord, Domain
from tests.helpers import OTHER_HOST, REDIRECT_URI
from tests.helpers.admin_api import call
from tests.helpers.client_registration import register
from tests.helpers.console import as_admin, get, submit, text

JWKS = {"keys": [RSAKey.generate_key(2048).as_dict(private=False)]}
KEYED = {"name": "Bank app", "redirect_uris": [REDIRECT_URI], "jwks": JWKS}


def _profile(world, domain_id) -> str:
    return world.query(select(Domain.profile).where(Domain.id == domain_id))[0]


def _fields(response) -> dict[str, str]:
    assert response.status_code == 422, response.get_json()
    return response.get_json()["fields"]


# The admin API


def test_a_domain_is_standard_unless_created_with_the_fapi2_profile(client, setup, keys):
    plain = call(client, "post", "/domains", keys.system_key, {"name": "A", "host": "a.example"}, host=OTHER_HOST)
    assert plain.get_json()["profile"] == "standard"
    strict = call(
        client,
        "post",
        "/domains",
        keys.system_key,
        {"name": "B", "host": "b.example", "profile": "fapi2"},
        host=OTHER_HOST,
    )
    assert strict.status_code == 201, strict.get_json()
    assert strict.get_json()["profile"] == "fapi2"
    unknown = call(
        client,
        "post",
        "/domains",
        keys.system_key,
        {"name": "C", "host": "c.example", "profile": "fapi1"},
        host=OTHER_HOST,
    )
    assert "profile" in _fields(unknown)


def test_a_domain_switches_to_fapi2_only_when_every_application_complies(client, setup, keys, world):
    path = f"/domains/{setup.domain.id}"
    refused = call(client, "patch", path, keys.admin_key, {"profile": "fapi2"})
    assert refused.status_code == 409
    description = refused.get_json()["error_description"]
    assert description.startswith("FAPI 2.0 profile: ")
    assert setup.public_app.client_id in description and setup.confidential_app.client_id in description
    assert _profile(world, setup.domain.id) == "standard"
    for application in (setup.public_app, setup.confidential_app):
        assert call(client, "delete", f"/oauth_apps/{application.id}", keys.admin_key).status_code == 200
    created = call(client, "post", "/oauth_apps", keys.admin_key, KEYED)
    assert created.status_code == 201, created.get_json()
    # A confidential application of a standard domain need not use PKCE; under the profile it must say so.
    refused = call(client, "patch", path, keys.admin_key, {"profile": "fapi2"})
    assert f"application {created.get_json()['client_id']} (require_pkce)" in refused.get_json()["error_description"]
    call(client, "patch", f"/oauth_apps/{created.get_json()['id']}", keys.admin_key, {"require_pkce": True})
    switched = call(client, "patch", path, keys.admin_key, {"profile": "fapi2"})
    assert switched.status_code == 200, switched.get_json()
    assert switched.get_json()["profile"] == "fapi2"
    audited = world.query(select(AuditRecord).where(AuditRecord.event == "domain.updated"))
    assert audited[-1].details["after"]["profile"] == "fapi2"
    # And back: the standard rules need nothing of the applications.
    assert call(client, "patch", path, keys.admin_key, {"profile": "standard"}).get_json()["profile"] == "standard"


def _fapi2_domain(world, setup) -> None:
    world.update(Domain, setup.domain.id, profile="fapi2")


def test_an_application_of_a_fapi2_domain_must_use_private_key_jwt(client, setup, keys, world):
    _fapi2_domain(world, setup)
    base = {"name": "Web", "redirect_uris": [REDIRECT_URI]}
    for body in (base, {**base, "confidential": True}):
        fields = _fields(call(client, "post", "/oauth_apps", keys.admin_key, body))
        assert "private_key_jwt" in fields["jwks"]
        assert "docs/fapi.md#client-authentication" in fields["jwks"]
    created = call(client, "post", "/oauth_apps", keys.admin_key, KEYED)
    assert created.status_code == 201, created.get_json()
    # PKCE is the profile's in any case; the setting says so.
    assert created.get_json()["require_pkce"] is True
    assert created.get_json()["token_endpoint_auth_method"] == "private_key_jwt"


def test_settings_the_profile_forbids_are_refused_on_create_and_update(client, setup, keys, world):
    _fapi2_domain(world, setup)
    refusals = (
        ("allow_plain_pkce", True),
        ("require_pkce", False),
        ("device", True),
        ("id_token_signed_response_alg", "RS256"),
    )
    for field, value in refusals:
        fields = _fields(call(client, "post", "/oauth_apps", keys.admin_key, {**KEYED, field: value}))
        assert fields[field].startswith("FAPI 2.0 profile: ")
    created = call(client, "post", "/oauth_apps", keys.admin_key, KEYED).get_json()
    fields = _fields(call(client, "patch", f"/oauth_apps/{created['id']}", keys.admin_key, {"allow_plain_pkce": True}))
    assert "plain" in fields["allow_plain_pkce"]
    renamed = call(client, "patch", f"/oauth_apps/{created['id']}", keys.admin_key, {"name": "Renamed"})
    assert renamed.status_code == 200, renamed.get_json()


def test_a_standard_domain_keeps_its_application_rules(client, setup, keys):
    body = {"name": "Web", "redirect_uris": [REDIRECT_URI], "allow_plain_pkce": True, "device": True}
    assert call(client, "post", "/oauth_apps", keys.admin_key, body).status_code == 201


# The command line


def _run(runner, *args):
    result = runner.invoke(args=list(args))
    return result, (json.loads(result.stdout) if result.exit_code == 0 else None)


def test_the_cli_creates_lists_and_updates_a_domains_profile(runner, tmp_path):
    _, created = _run(runner, "domains", "create", "--name", "Bank", "--host", "bank.example", "--profile", "fapi2")
    assert set(created) == {"id", "name", "host"}
    _run(runner, "domains", "create", "--name", "Shop", "--host", "shop.example")
    _, listed = _run(runner, "domains", "list")
    assert {d["host"]: d["profile"] for d in listed["domains"]} == {"bank.example": "fapi2", "shop.example": "standard"}
    result, _ = _run(
        runner, "apps", "create", "--domain", "bank.example", "--name", "Web", "--redirect-uri", REDIRECT_URI
    )
    assert result.exit_code != 0
    assert "--jwks-file: FAPI 2.0 profile: an application must be confidential" in result.output
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(JWKS))
    result, app = _run(
        runner,
        "apps",
        "create",
        "--domain",
        "bank.example",
        "--name",
        "Web",
        "--redirect-uri",
        REDIRECT_URI,
        "--jwks-file",
        str(jwks),
    )
    assert result.exit_code == 0, result.output
    # A public application stands in the way of the switch; once it is gone the domain switches.
    _run(runner, "apps", "create", "--domain", "shop.example", "--name", "Spa", "--redirect-uri", REDIRECT_URI)
    result, _ = _run(runner, "domains", "update", "--domain", "shop.example", "--profile", "fapi2")
    assert result.exit_code != 0
    assert "FAPI 2.0 profile: every application must comply first" in result.output
    result, updated = _run(runner, "domains", "update", "--domain", "bank.example", "--profile", "standard")
    assert result.exit_code == 0, result.output
    assert updated["profile"] == "standard"
    result, _ = _run(runner, "domains", "update", "--domain", "bank.example", "--profile", "fapi3")
    assert result.exit_code != 0


# The console


def test_the_console_shows_and_switches_the_profile(client, setup, people, world):
    as_admin(client)
    page = get(client, f"/domains/{setup.domain.id}/profile")
    assert page.status_code == 200
    assert "FAPI 2.0 Security Profile" in text(page)
    refused = submit(client, f"/domains/{setup.domain.id}/profile", {"profile": "fapi2"})
    assert refused.status_code == 409
    assert "every application must comply first" in text(refused)
    for application in (setup.public_app, setup.confidential_app):
        with world.app.app_context():
            db.session.delete(db.session.get(Application, application.id))
            db.session.commit()
    saved = submit(client, f"/domains/{setup.domain.id}/profile", {"profile": "fapi2"})
    assert saved.status_code == 303
    assert _profile(world, setup.domain.id) == "fapi2"
    listing = get(client, "/")
    assert "FAPI 2.0" in text(listing)


def test_support_users_see_the_profile_without_a_form(client, setup, people):
    as_admin(client, "support@example.com")
    page = get(client, f"/domains/{setup.domain.id}/profile")
    assert page.status_code == 200
    assert "Save profile" not in text(page)


# Dynamic registration (RFC 7591)


def test_registration_in_a_fapi2_domain_needs_private_key_jwt(client, world, domain, issue):
    world.update(Domain, domain.id, profile="fapi2")
    _, token = issue(max_uses=5)
    secret = register(client, token, {"redirect_uris": [REDIRECT_URI]})
    assert secret.status_code == 400
    assert secret.get_json()["error"] == "invalid_client_metadata"
    assert secret.get_json()["error_description"].startswith("FAPI 2.0 profile: ")
    device = register(
        client,
        token,
        {
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": JWKS,
            "grant_types": ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code"],
        },
    )
    assert "device authorization grant" in device.get_json()["error_description"]
    keyed = register(
        client, token, {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "private_key_jwt", "jwks": JWKS}
    )
    assert keyed.status_code == 201, keyed.get_json()
    stored = world.query(select(Application).where(Application.client_id == keyed.get_json()["client_id"]))[0]
    assert stored.require_pkce is True
