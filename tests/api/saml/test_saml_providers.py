"""Configuring a SAML provider: ``sso create --protocol saml``, our SP metadata, the IdP's metadata refreshed on
a schedule and on demand (certificate rollover), the admin API and the console."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import SsoProvider
from tests.fakes.slow_peer import SlowPeer
from tests.helpers import HOST, headers
from tests.helpers.saml import audit_events, create_saml, needs_xmlsec, refusal_reasons, sign_in

pytestmark = needs_xmlsec

# The CLI and our SP metadata


def test_sso_create_saml_prints_the_acs_metadata_url_and_entity_id(client, runner, setup, idp, world):
    created = create_saml(runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network")
    base = f"https://{HOST}/auth/oauth2/saml/{created['id']}"
    assert created == {
        "id": created["id"],
        "callback_url": f"{base}/acs",
        "metadata_url": f"{base}/metadata",
        "entity_id": f"{base}/metadata",
    }
    provider = world.query(select(SsoProvider))[0]
    assert provider.kind == "saml" and provider.client_id == idp.entity_id
    assert "PRIVATE KEY" not in provider.saml_sp_key_encrypted and provider.saml_sp_key_encrypted
    assert provider.saml_sp_certificate.startswith("-----BEGIN CERTIFICATE-----")
    assert [r.target for r in audit_events(world, "sso.created")] == [f"sso:{created['id']}"]


def test_sp_metadata_names_our_entity_id_acs_and_certificate(client, runner, setup, idp, world):
    created = create_saml(runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network")
    response = client.get(urlsplit(created["metadata_url"]).path, headers=headers())
    assert response.status_code == 200
    assert response.mimetype == "application/samlmetadata+xml"
    document = response.get_data(as_text=True)
    assert f'entityID="{created["entity_id"]}"' in document
    assert f'Location="{created["callback_url"]}"' in document
    assert "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" in document
    certificate = world.query(select(SsoProvider))[0].saml_sp_certificate
    body = "".join(certificate.strip().splitlines()[1:-1])
    assert document.count(body) == 2  # one KeyDescriptor for signing, one for encryption
    assert 'use="signing"' in document and 'use="encryption"' in document
    assert "PRIVATE" not in document


def test_sso_create_saml_from_a_metadata_file(client, runner, setup, idp, tmp_path):
    path = tmp_path / "idp.xml"
    path.write_text(idp.metadata())
    created = create_saml(runner, "--metadata-file", str(path), "--email-attribute", "mail")
    assert created["callback_url"].endswith("/acs")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--metadata-url or --metadata-file"),
        (["--metadata-url", "https://idp.example.com/md", "--metadata-file", "x"], "one of them"),
        (["--metadata-url", "http://127.0.0.1:1/metadata"], "private"),
    ],
)
def test_sso_create_saml_refuses_bad_input(runner, setup, tmp_path, args, message):
    if "x" in args:
        (tmp_path / "x").write_text("<x/>")
        args = [a if a != "x" else str(tmp_path / "x") for a in args]
    result = runner.invoke(args=["sso", "create", "--domain", HOST, "--name", "S", "--protocol", "saml", *args])
    assert result.exit_code != 0
    assert message in result.output


def test_metadata_that_is_not_an_idp_is_refused(runner, setup, tmp_path):
    path = tmp_path / "idp.xml"
    path.write_text("<not-metadata/>")
    result = runner.invoke(
        args=["sso", "create", "--domain", HOST, "--name", "S", "--protocol", "saml", "--metadata-file", str(path)]
    )
    assert result.exit_code != 0
    assert "exactly one identity provider" in result.output or "cannot be read" in result.output


def test_an_unknown_providers_metadata_is_a_404(client, setup):
    assert client.get("/auth/oauth2/saml/0123456789abcdef/metadata", headers=headers()).status_code == 404


# IdP certificate rollover: the metadata is refetched on a schedule and on demand


def test_a_rotated_idp_key_is_refused_until_the_metadata_is_refreshed_on_demand(
    app, client, runner, world, idp, saml_provider
):
    idp.rotate_key()
    posted, _ = sign_in(app, client, idp, saml_provider["id"])
    assert posted.status_code == 400
    assert refusal_reasons(world) == ["signature"]
    result = runner.invoke(args=["sso", "refresh-metadata", saml_provider["id"]])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["changed"] is True
    _, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    assert [e.details["after"]["changed"] for e in audit_events(world, "saml.metadata_refreshed")] == [True]


def test_stale_metadata_is_refetched_at_the_next_sign_in(app, client, world, idp, saml_provider):
    idp.rotate_key()
    fetched = idp.metadata_requests
    world.update(SsoProvider, saml_provider["id"], saml_metadata_fetched_at=int(time.time()) - 2 * 86400)
    _, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    assert idp.metadata_requests == fetched + 1
    assert audit_events(world, "saml.metadata_refreshed")[0].details["scheduled"] is True


def test_fresh_metadata_is_not_refetched(app, client, idp, saml_provider):
    fetched = idp.metadata_requests
    sign_in(app, client, idp, saml_provider["id"])
    assert idp.metadata_requests == fetched


# The admin API


API = "/api/engine/v2"


@pytest.fixture
def admin_key(world, setup):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    return world.api_key(admin, scopes="public admin", permission="admin")


@pytest.fixture
def root_key(world, setup):
    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    return world.api_key(root, scopes="public admin", permission="admin")


def api(client, method, path, key, body=None):
    kwargs = {"json": body} if body is not None else {}
    return getattr(client, method)(API + path, headers=headers(**{"X-API-Key": key}), **kwargs)


def test_the_admin_api_creates_a_saml_provider_and_shows_its_sp_urls(client, world, idp, root_key):
    created = api(
        client,
        "post",
        "/sso",
        root_key,
        {
            "protocol": "saml",
            "name": "Corp SAML",
            "metadata_url": idp.url + "/metadata",
            "allow_private_network": True,
            "email_attribute": "mail",
            "groups_attribute": "groups",
        },
    )
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    base = f"https://{HOST}/auth/oauth2/saml/{body['id']}"
    assert body["protocol"] == "saml" and body["idp_entity_id"] == idp.entity_id
    assert (body["callback_url"], body["metadata_url"], body["entity_id"]) == (
        f"{base}/acs",
        f"{base}/metadata",
        f"{base}/metadata",
    )
    assert body["email_attribute"] == "mail" and body["groups_attribute"] == "groups"
    assert "PRIVATE KEY" not in json.dumps(body) and "sp_key" not in json.dumps(body)
    shown = api(client, "get", f"/sso/{body['id']}", root_key).get_json()
    assert shown["metadata_url"] == f"{base}/metadata"
    assert [r.target for r in audit_events(world, "sso.created")] == [f"sso:{body['id']}"]


def test_a_domain_admin_cannot_point_a_saml_provider_at_a_private_network(client, idp, admin_key):
    answer = api(
        client, "post", "/sso", admin_key, {"protocol": "saml", "name": "S", "metadata_url": idp.url + "/metadata"}
    )
    assert answer.status_code == 422
    assert "metadata_url" in answer.get_json()["fields"]


def test_a_metadata_url_that_trickles_is_cut_off_at_the_deadline(app, client, root_key):
    app.config["AUTHSVC_OUTBOUND_DEADLINE"] = 1
    body = {"protocol": "saml", "name": "S", "allow_private_network": True}
    with SlowPeer(trickle=0.2) as peer:
        started = time.monotonic()
        answer = api(client, "post", "/sso", root_key, {**body, "metadata_url": peer.url})
        assert time.monotonic() - started < 3
    assert answer.status_code == 422
    assert "DeadlineExceeded" in answer.get_json()["fields"]["metadata_url"]


def test_the_admin_api_refuses_saml_metadata_that_describes_no_idp(client, admin_key):
    answer = api(client, "post", "/sso", admin_key, {"protocol": "saml", "name": "S", "metadata_xml": "<x/>"})
    assert answer.status_code == 422
    assert "metadata_xml" in answer.get_json()["fields"]


def test_the_admin_api_updates_a_saml_provider_and_refreshes_its_metadata(client, world, idp, saml_provider, admin_key):
    changed = api(
        client,
        "patch",
        f"/sso/{saml_provider['id']}",
        admin_key,
        {"allow_unsolicited": True, "clock_skew": 30, "name_attribute": "cn"},
    )
    assert changed.status_code == 200, changed.get_json()
    body = changed.get_json()
    assert (body["allow_unsolicited"], body["clock_skew"], body["name_attribute"]) == (True, 30, "cn")
    assert audit_events(world, "sso.updated")[-1].details["after"]["allow_unsolicited"] is True
    idp.rotate_key()
    refreshed = api(client, "post", f"/sso/{saml_provider['id']}/refresh_metadata", admin_key)
    assert refreshed.status_code == 200
    assert refreshed.get_json()["changed"] is True
    assert audit_events(world, "saml.metadata_refreshed")[-1].actor.startswith("api_key:")


def test_only_a_system_admin_replaces_the_metadata_of_a_provider_a_privileged_account_signs_in_through(
    client, world, setup, idp, saml_provider, admin_key, root_key
):
    """The metadata holds the IdP's signing certificate: new metadata under the same entity id would let
    whoever signs with its key sign in as the privileged accounts linked to the provider."""
    from authsvc.core.models import ExternalIdentity

    root = world.user(setup.domain, "linked-root@example.com", admin=True, system_admin=True)
    world.save(ExternalIdentity(provider_id=saml_provider["id"], user_id=root.id, subject="root-at-idp", via="user"))
    idp.rotate_key()
    same_idp_new_key = {"metadata_xml": idp.metadata()}
    refused = api(client, "patch", f"/sso/{saml_provider['id']}", admin_key, same_idp_new_key)
    assert refused.status_code == 422, refused.get_json()
    assert "only a system admin" in refused.get_json()["fields"]["metadata_xml"]
    assert api(client, "patch", f"/sso/{saml_provider['id']}", root_key, same_idp_new_key).status_code == 200


# The console


def test_an_admin_adds_a_saml_provider_in_the_console_and_sees_what_to_register(client, world, setup, idp):
    from tests.helpers.console import as_admin, get, submit, text

    world.user(setup.domain, "admin@example.com", admin=True)
    as_admin(client)
    sso = f"/domains/{setup.domain.id}/sso"
    assert "New SAML provider" in text(get(client, sso))
    response = submit(
        client, sso + "/new-saml", {"name": "Corp ADFS", "metadata_xml": idp.metadata(), "groups_attribute": "groups"}
    )
    assert response.status_code == 303, text(response)
    [provider] = world.query(select(SsoProvider))
    base = f"https://{HOST}/auth/oauth2/saml/{provider.id}"
    page = text(client.get(response.headers["Location"], headers=headers()))
    assert f'<code id="entity-id">{base}/metadata</code>' in page
    assert f'<code id="callback-url">{base}/acs</code>' in page
    assert f'id="metadata-url" href="{base}/metadata"' in page
    assert "PRIVATE KEY" not in page
    assert "SAML 2.0" in text(get(client, sso))
    refused = submit(client, sso + "/new-saml", {"name": "Bad", "metadata_xml": "<x/>"})
    assert refused.status_code == 422
    assert len(world.query(select(SsoProvider))) == 1
