"""SAML 2.0 sign-in against a real IdP on loopback (pysaml2's saml2.server.Server, tests/saml_idp.py).

The browser's path is followed as a browser takes it: our redirect to the IdP,
the IdP's auto-posting form, that POST to our ACS from the IdP's site (a
foreign Origin, and no cookie: ours are SameSite=Lax), then our redirect back
to ourselves, which carries the flow cookie.
"""

from __future__ import annotations

import json
import re
import time
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from sqlalchemy import select

from authsvc.core.models import AuditRecord, ExternalIdentity, SsoProvider, User
from tests.conftest import HOST, headers
from tests.saml_idp import SamlIdp, xmlsec_available

pytestmark = pytest.mark.skipif(
    not xmlsec_available(), reason="xmlsec1 is not installed (Debian package xmlsec1; scripts/test installs it as root)"
)

ADA = {"mail": "ada@example.com", "displayName": "Ada Lovelace", "groups": ["staff", "ops"]}


@pytest.fixture
def idp():
    with SamlIdp() as idp:
        idp.sign_in_as("saml-ada", **ADA)
        yield idp


def create_saml(runner, *args) -> dict:
    result = runner.invoke(args=["sso", "create", "--domain", HOST, "--name", "Corp SAML", "--protocol", "saml", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def introduce(client, idp, created: dict) -> None:
    """What an IdP administrator does: import our SP metadata from its URL."""
    metadata = client.get(urlsplit(created["metadata_url"]).path, headers=headers())
    assert metadata.status_code == 200
    idp.trust_sp(metadata.get_data(as_text=True))


@pytest.fixture
def saml_provider(client, runner, setup, idp):
    created = create_saml(
        runner, "--metadata-url", idp.url + "/metadata", "--groups-attribute", "groups", "--allow-private-network"
    )
    introduce(client, idp, created)
    return created


def read_form(page: str) -> tuple[str, dict[str, str]]:
    action = unescape(re.search(r'<form[^>]*action="([^"]+)"', page).group(1))
    fields = {
        unescape(n): unescape(v) for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
    }
    return action, fields


def post_from_idp(app, idp, action: str, fields: dict[str, str]):
    """The IdP page's cross-site POST: foreign Origin, and none of our (SameSite=Lax) cookies."""
    browser_without_cookies = app.test_client()
    return browser_without_cookies.post(
        urlsplit(action).path,
        data=fields,
        headers=headers(Origin=idp.url, **{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}),
    )


def to_idp(client, provider_id: str, **query):
    start = client.get("/auth/oauth2", query_string={"id": provider_id, **query}, headers=headers())
    assert start.status_code == 302, start.get_data(as_text=True)
    at_idp = requests.get(start.headers["Location"], timeout=10)
    assert at_idp.status_code == 200, at_idp.text
    return start, read_form(at_idp.text)


def sign_in(app, client, idp, provider_id: str, **query):
    """The whole round trip; returns the ACS's answer and, when it redirected, our finishing answer."""
    _, (action, fields) = to_idp(client, provider_id, **query)
    posted = post_from_idp(app, idp, action, fields)
    if posted.status_code != 303:
        return posted, None
    return posted, client.get(posted.headers["Location"], headers=headers())


def audit_events(world, event: str) -> list[AuditRecord]:
    return world.query(select(AuditRecord).where(AuditRecord.event == event).order_by(AuditRecord.id))


def refusal_reasons(world) -> list[str]:
    return [r.details.get("reason") for r in audit_events(world, "saml.refused")]


# Configuration and metadata


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


# The sign-in


def test_start_sends_a_signed_authn_request_over_http_redirect(client, idp, saml_provider):
    start = client.get("/auth/oauth2", query_string={"id": saml_provider["id"]}, headers=headers())
    assert start.status_code == 302
    location = urlsplit(start.headers["Location"])
    query = parse_qs(location.query)
    assert f"{location.scheme}://{location.netloc}{location.path}" == idp.url + "/sso/redirect"
    assert {"SAMLRequest", "RelayState", "SigAlg", "Signature"} <= set(query)
    assert query["SigAlg"] == ["http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"]
    # RelayState is our own flow id, not a URL.
    assert not query["RelayState"][0].startswith(("http", "/"))
    cookie = start.headers["Set-Cookie"]
    assert "authsvc_sso=" in cookie and "SameSite=Lax" in cookie and "HttpOnly" in cookie


def test_a_signed_assertion_signs_the_user_in_with_groups(app, client, world, idp, saml_provider):
    posted, finished = sign_in(app, client, idp, saml_provider["id"], **{"continue": "/auth/login?x=1"})
    assert posted.status_code == 303
    assert urlsplit(posted.headers["Location"]).path == "/auth/oauth2/saml/finish"
    assert finished.status_code == 303
    assert finished.headers["Location"] == "/auth/login?x=1"
    assert client.get_cookie("user", domain=HOST) is not None
    user = world.query(select(User).where(User.email == "ada@example.com"))[0]
    assert user.name == "Ada Lovelace"
    assert user.groups == ["ops", "staff"]
    identity = world.query(select(ExternalIdentity))[0]
    assert identity.subject == "saml-ada" and identity.provider_id == saml_provider["id"]
    signins = audit_events(world, "saml.signin")
    assert [s.target for s in signins] == [f"user:{user.id}"]
    # The request was signed, and the IdP saw our ACS and entity id.
    assert idp.requests[-1]["signed"]
    assert idp.requests[-1]["acs"] == saml_provider["callback_url"]
    assert idp.requests[-1]["issuer"] == saml_provider["entity_id"]


def test_the_session_inspects_with_the_groups(app, client, world, setup, idp, saml_provider):
    from tests.conftest import get_code

    sign_in(app, client, idp, saml_provider["id"])
    code = get_code(client, setup.public_app.client_id)
    token = client.post(
        "/auth/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": setup.public_app.client_id,
            "redirect_uri": "https://app.example.com/callback",
        },
        headers=headers(),
    ).get_json()["access_token"]
    claims = client.get("/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token}")).get_json()
    assert claims["u"]["e"] == "ada@example.com"
    assert claims["u"]["r"] == ["ops", "staff"]


def test_an_encrypted_assertion_signs_the_user_in(app, client, world, idp, saml_provider):
    idp.fault = "encrypted"
    _, (action, fields) = to_idp(client, saml_provider["id"])
    assert "EncryptedAssertion" in __import__("base64").b64decode(fields["SAMLResponse"]).decode()
    posted = post_from_idp(app, idp, action, fields)
    assert posted.status_code == 303, posted.get_data(as_text=True)
    finished = client.get(posted.headers["Location"], headers=headers())
    assert finished.status_code == 303
    assert world.query(select(User.email).where(User.email == "ada@example.com")) == ["ada@example.com"]


def test_a_signed_response_covering_an_unsigned_assertion_is_accepted(app, client, world, idp, saml_provider):
    idp.fault = "signed_response"
    posted, finished = sign_in(app, client, idp, saml_provider["id"])
    assert posted.status_code == 303, posted.get_data(as_text=True)
    assert finished.status_code == 303


def test_a_second_sign_in_uses_the_link_and_updates_the_groups(app, client, world, idp, saml_provider):
    sign_in(app, client, idp, saml_provider["id"])
    idp.sign_in_as("saml-ada", **{**ADA, "groups": ["staff"]})
    _, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    users = world.query(select(User).where(User.email == "ada@example.com"))
    assert len(users) == 1 and users[0].groups == ["staff"]
    assert len(world.query(select(ExternalIdentity))) == 1


# Refusals: each is a 400 page, signs nobody in, creates nobody, and is audited with its reason.


def assert_refused(posted, world, reason: str) -> None:
    assert posted.status_code == 400, posted.get_data(as_text=True)
    assert "Sign-in refused" in posted.get_data(as_text=True)
    assert world.query(select(User).where(User.email.in_(["ada@example.com", "mallory@example.com"]))) == []
    assert world.query(select(ExternalIdentity)) == []
    assert refusal_reasons(world)[-1] == reason


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("unsigned", "signature"),
        ("tampered", "signature"),
        ("other_key", "signature"),
        ("expired", "expired"),
        ("not_yet_valid", "expired"),
        ("wrong_audience", "audience"),
        ("wrong_destination", "destination"),
        ("wrong_recipient", "recipient"),
        ("no_in_response_to", "in_response_to"),
        ("foreign_in_response_to", "in_response_to"),
        ("wrapped_first", "assertion_count"),
        ("wrapped_advice", "signature"),
    ],
)
def test_a_bad_response_is_refused(app, client, world, idp, saml_provider, fault, reason):
    idp.fault = fault
    posted, _ = sign_in(app, client, idp, saml_provider["id"])
    assert_refused(posted, world, reason)


def test_a_replayed_response_is_refused(app, client, world, idp, saml_provider):
    _, (action, fields) = to_idp(client, saml_provider["id"])
    first = post_from_idp(app, idp, action, fields)
    assert first.status_code == 303
    again = post_from_idp(app, idp, action, fields)
    assert again.status_code == 400
    assert refusal_reasons(world) == ["unsolicited"]


def test_a_replayed_unsolicited_assertion_is_refused_by_its_id(app, client, runner, world, setup, idp):
    created = create_saml(
        runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network", "--allow-unsolicited"
    )
    introduce(client, idp, created)
    page = requests.get(idp.initiate_url(created["entity_id"], created["callback_url"]), timeout=10).text
    action, fields = read_form(page)
    first = post_from_idp(app, idp, action, fields)
    assert first.status_code == 303, first.get_data(as_text=True)
    again = post_from_idp(app, idp, action, fields)
    assert again.status_code == 400
    assert refusal_reasons(world) == ["replayed"]


def test_an_unsolicited_response_is_refused_unless_the_provider_allows_it(app, client, world, idp, saml_provider):
    page = requests.get(idp.initiate_url(saml_provider["entity_id"], saml_provider["callback_url"]), timeout=10).text
    action, fields = read_form(page)
    assert_refused(post_from_idp(app, idp, action, fields), world, "unsolicited")


def test_an_allowed_unsolicited_response_signs_in_and_ignores_a_url_relay_state(app, client, runner, world, setup, idp):
    created = create_saml(
        runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network", "--allow-unsolicited"
    )
    introduce(client, idp, created)
    url = idp.initiate_url(created["entity_id"], created["callback_url"], relay_state="https://evil.example.com/")
    action, fields = read_form(requests.get(url, timeout=10).text)
    posted = post_from_idp(app, idp, action, fields)
    assert posted.status_code == 303
    finished = client.get(posted.headers["Location"], headers=headers())
    assert finished.status_code == 303
    assert "evil.example.com" not in finished.headers["Location"]
    assert audit_events(world, "saml.signin")[0].details["solicited"] is False


def test_a_response_to_another_providers_flow_is_refused(app, client, runner, world, setup, idp, saml_provider):
    other = create_saml(runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network")
    _, (action, fields) = to_idp(client, saml_provider["id"])
    elsewhere = action.replace(saml_provider["id"], other["id"])
    assert_refused(post_from_idp(app, idp, elsewhere, fields), world, "relay_state")


def test_garbage_at_the_acs_is_a_400_not_a_500(app, client, world, idp, saml_provider):
    _, (action, fields) = to_idp(client, saml_provider["id"])
    for garbage in ("", "not base64!", "PHg+PC94Pg==", "A" * 10):
        posted = post_from_idp(app, idp, action, {**fields, "SAMLResponse": garbage})
        assert posted.status_code == 400
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


# The cross-site POST and the browser that started the flow


def test_the_acs_takes_the_idps_cross_site_post_and_only_the_starting_browser_finishes(
    app, client, world, idp, saml_provider
):
    _, (action, fields) = to_idp(client, saml_provider["id"])
    posted = post_from_idp(app, idp, action, fields)
    assert posted.status_code == 303  # not the cross-site guard's 403
    # Another browser (an attacker's victim, handed the finishing link) signs nobody in.
    victim = app.test_client()
    stolen = victim.get(posted.headers["Location"], headers=headers())
    assert stolen.status_code == 400
    assert victim.get_cookie("user", domain=HOST) is None
    assert refusal_reasons(world) == ["browser"]
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_the_cross_site_guard_still_refuses_other_posts_from_the_idps_site(client, idp, saml_provider):
    response = client.post(
        "/auth/signin",
        data={"email": "a@example.com", "password": "x"},
        headers=headers(Origin=idp.url, **{"Sec-Fetch-Site": "cross-site"}),
    )
    assert response.status_code == 403
    assert response.get_json()["error"] == "cross_site_request"


def test_a_finishing_link_works_once(app, client, world, idp, saml_provider):
    posted, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    assert client.get(posted.headers["Location"], headers=headers()).status_code == 400


# Accounts


def test_a_first_sign_in_never_links_itself_to_a_privileged_account(app, client, world, setup, idp, saml_provider):
    world.user(setup.domain, "ada@example.com", admin=True)
    posted, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    assert "sso_error=" in finished.headers["Location"]
    assert client.get_cookie("user", domain=HOST) is None
    assert world.query(select(ExternalIdentity)) == []


def test_a_disabled_user_cannot_sign_in_through_saml(app, client, world, idp, saml_provider):
    sign_in(app, client, idp, saml_provider["id"])
    client.delete_cookie("user", domain=HOST)
    user = world.query(select(User).where(User.email == "ada@example.com"))[0]
    world.update(User, user.id, disabled=True)
    _, finished = sign_in(app, client, idp, saml_provider["id"])
    assert "sso_error=account_disabled" in finished.headers["Location"]
    assert client.get_cookie("user", domain=HOST) is None
    assert refusal_reasons(world)[-1] == "account_disabled"


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
    from tests.test_console import as_admin, get, submit, text

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


def test_a_signed_in_user_links_their_account_at_the_idp(app, client, world, setup, idp, saml_provider):
    from tests.conftest import signin

    signin(client)
    page = client.get("/auth/oauth2/link", query_string={"id": saml_provider["id"]}, headers=headers())
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    start = client.post("/auth/oauth2/link", data={"id": saml_provider["id"], "csrf_token": token}, headers=headers())
    assert start.status_code == 303
    action, fields = read_form(requests.get(start.headers["Location"], timeout=10).text)
    posted = post_from_idp(app, idp, action, fields)
    finished = client.get(posted.headers["Location"], headers=headers())
    assert finished.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert (identity.user_id, identity.subject, identity.via) == (setup.person.id, "saml-ada", "user")
    assert world.query(select(User).where(User.email == "ada@example.com")) == []


def test_pysaml2_logs_no_assertion_contents(app, client, idp, saml_provider, caplog):
    import logging

    with caplog.at_level(logging.DEBUG):
        sign_in(app, client, idp, saml_provider["id"])
    assert "saml-ada" not in caplog.text
    assert "ada@example.com" not in caplog.text
