"""SAML 2.0 sign-in against a real IdP on loopback (pysaml2's saml2.server.Server, tests/fakes/saml_idp.py).

The signed AuthnRequest, the assertions that sign someone in (signed, encrypted, in a signed response),
the IdP's cross-site POST to our ACS and the browser that must finish the flow, which accounts a sign-in
reaches, and linking by a signed-in user. Fixtures and the browser's path are in tests/helpers/saml.py;
refused responses in tests/api/saml/test_saml_refusals.py; configuring providers in
tests/api/saml/test_saml_providers.py.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests
from sqlalchemy import select

from authsvc.core.models import ExternalIdentity, SsoProvider, User
from tests.helpers import HOST, headers
from tests.helpers.saml import (
    ADA,
    audit_events,
    needs_xmlsec,
    post_from_idp,
    read_form,
    refusal_reasons,
    sign_in,
    to_idp,
)

pytestmark = needs_xmlsec

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
    from tests.helpers import get_code

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


def test_pysaml2_logs_no_assertion_contents(app, client, idp, saml_provider, caplog):
    import logging

    with caplog.at_level(logging.DEBUG):
        sign_in(app, client, idp, saml_provider["id"])
    assert "saml-ada" not in caplog.text
    assert "ada@example.com" not in caplog.text


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


def test_a_signed_in_user_links_their_account_at_the_idp(app, client, world, setup, idp, saml_provider):
    from tests.helpers import signin

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


def test_our_private_key_is_on_disk_only_while_a_request_uses_it(app, client, world, idp, saml_provider):
    """xmlsec1 reads keys from files; the process keeps its SAML clients, but not our key in a file between requests."""
    from authsvc.core import security

    _, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    # The kept client serves the next sign-in, which writes the key again for its own requests.
    _, again = sign_in(app, client, idp, saml_provider["id"])
    assert again.status_code == 303
    [provider] = world.query(select(SsoProvider).where(SsoProvider.id == saml_provider["id"]))
    with app.app_context():
        key_pem = security.decrypt(provider.saml_sp_key_encrypted)
    on_disk = [
        path
        for path in Path(tempfile.gettempdir()).glob("authsvc-saml-*/*")
        if path.is_file() and key_pem.strip() in path.read_text(errors="replace")
    ]
    assert on_disk == []
