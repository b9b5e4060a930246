"""SAML 2.0 Single Logout against pysaml2's IdP on loopback (tests/fakes/saml_idp.py), both ways.

The IdP's LogoutRequest (HTTP-Redirect and HTTP-POST, signed) ends the sessions its NameID and
SessionIndex name, sends the OpenID Connect back-channel logouts, and is answered with our signed
LogoutResponse, which the IdP checks. Signing out here sends the IdP our signed LogoutRequest and
continues once its LogoutResponse comes back. Unsigned, replayed, foreign and stale requests are 400s.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.fakes.saml_idp import SamlIdp
from tests.helpers import HOST, headers, stored_session
from tests.helpers import oidc_logout as oidc_logout_helpers
from tests.helpers.oidc_logout import claims_of, id_token
from tests.helpers.saml import (
    ADA,
    audit_events,
    create_saml,
    introduce,
    needs_xmlsec,
    post_from_idp,
    read_form,
    sign_in,
)

# Back-channel receivers on loopback need the operator's setting: this module's app allows it.
app = oidc_logout_helpers.app

pytestmark = needs_xmlsec

REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"


def slo_url(provider: dict) -> str:
    return provider["callback_url"].rsplit("/", 1)[0] + "/slo"


def path_and_query(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def query_fields(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def signed_in_session(app, client) -> str:
    cookie = client.get_cookie("user", domain=HOST).value
    with app.app_context():
        assert stored_session(cookie) is not None
    return cookie


def session_live(app, cookie: str) -> bool:
    with app.app_context():
        return stored_session(cookie) is not None


def from_idp(app, idp, url: str, fields: dict[str, str]):
    """Deliver the IdP's message as the browser does: a redirect's GET, or the IdP page's cross-site POST."""
    if fields:
        return post_from_idp(app, idp, url, fields)
    return app.test_client().get(
        path_and_query(url), headers=headers(**{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
    )


def logout_reasons(world) -> list[str]:
    return [r.details.get("reason") for r in audit_events(world, "saml.logout_refused")]


@pytest.fixture
def ada(app, client, idp, saml_provider):
    """Ada, signed in through the IdP: (her session cookie, the SessionIndex the IdP gave that sign-in)."""
    _, finished = sign_in(app, client, idp, saml_provider["id"])
    assert finished.status_code == 303
    return signed_in_session(app, client), idp.issued[-1]["session_index"]


# Our SP metadata


def test_the_sp_metadata_lists_the_single_logout_service_in_both_bindings(client, saml_provider):
    xml = client.get(urlsplit(saml_provider["metadata_url"]).path, headers=headers()).get_data(as_text=True)
    services = re.findall(r"<(?:\w+:)?SingleLogoutService\b[^>]*>", xml)
    bindings = {
        re.search(r'Binding="([^"]+)"', s).group(1): re.search(r'Location="([^"]+)"', s).group(1) for s in services
    }
    assert bindings == {REDIRECT: slo_url(saml_provider), POST: slo_url(saml_provider)}
    assert slo_url(saml_provider) == f"https://{HOST}/auth/oauth2/saml/{saml_provider['id']}/slo"


# IdP-initiated


def test_an_idp_logout_request_over_http_redirect_ends_the_session_and_is_answered_signed(
    app, world, idp, saml_provider, ada
):
    cookie, session_index = ada
    url, fields = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, session_index=session_index
    )
    answer = from_idp(app, idp, url, fields)
    assert answer.status_code == 303, answer.get_data(as_text=True)
    location = answer.headers["Location"]
    assert location.startswith(idp.url + "/slo/redirect?")
    assert not session_live(app, cookie)
    checked = idp.read_logout_response(REDIRECT, query_fields(location))
    assert checked["signed"] is True
    assert checked["status"] == "urn:oasis:names:tc:SAML:2.0:status:Success"
    assert checked["issuer"] == saml_provider["entity_id"]
    assert checked["destination"] == idp.url + "/slo/redirect"
    assert query_fields(location)["RelayState"] == "idp-relay"
    [event] = audit_events(world, "saml.logout")
    assert event.details == {"provider": saml_provider["id"], "initiated_by": "idp", "sessions": 1}


def test_an_idp_logout_request_over_http_post_ends_the_session_and_is_answered_signed(
    app, world, idp, saml_provider, ada
):
    cookie, session_index = ada
    url, fields = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], POST, session_index=session_index
    )
    answer = from_idp(app, idp, url, fields)  # a cross-site POST: not the cross-site guard's 403
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert not session_live(app, cookie)
    action, returned = read_form(answer.get_data(as_text=True))
    assert action == idp.url + "/slo/post"
    checked = idp.read_logout_response(POST, returned)
    assert checked["signed"] is True
    assert checked["status"] == "urn:oasis:names:tc:SAML:2.0:status:Success"


def test_an_idp_logout_ends_only_the_sign_in_of_its_session_index_or_every_one_without(app, client, idp, saml_provider):
    sign_in(app, client, idp, saml_provider["id"])
    first, first_index = signed_in_session(app, client), idp.issued[-1]["session_index"]
    other_browser = app.test_client()
    sign_in(app, other_browser, idp, saml_provider["id"])
    second = signed_in_session(app, other_browser)
    third_browser = app.test_client()
    sign_in(app, third_browser, idp, saml_provider["id"])
    third = signed_in_session(app, third_browser)
    # Someone else's sign-in through the same IdP is not touched.
    idp.sign_in_as("saml-grace", mail="grace@example.com")
    grace_browser = app.test_client()
    sign_in(app, grace_browser, idp, saml_provider["id"])
    grace = signed_in_session(app, grace_browser)

    url, _ = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, subject="saml-ada", session_index=first_index
    )
    assert from_idp(app, idp, url, {}).status_code == 303
    assert [session_live(app, c) for c in (first, second, third, grace)] == [False, True, True, True]

    url, _ = idp.logout_request(slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, subject="saml-ada")
    assert from_idp(app, idp, url, {}).status_code == 303
    assert [session_live(app, c) for c in (second, third, grace)] == [False, False, True]


def test_an_idp_logout_sends_the_back_channel_logouts_of_the_session(app, client, runner, world, rp, receiver):
    with SamlIdp() as idp:
        idp.sign_in_as("saml-ada", **ADA)
        created = create_saml(runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network")
        introduce(client, idp, created)
        sign_in(app, client, idp, created["id"])
        id_claims = claims_of(client, id_token(client, rp)["id_token"])
        url, _ = idp.logout_request(
            slo_url(created), created["entity_id"], REDIRECT, session_index=idp.issued[-1]["session_index"]
        )
        assert from_idp(app, idp, url, {}).status_code == 303
    (received,) = receiver.wait()
    (token,) = received["form"]["logout_token"]
    logout_claims = claims_of(client, token)
    assert logout_claims["sid"] == id_claims["sid"]
    assert logout_claims["sub"] == id_claims["sub"]
    assert logout_claims["aud"] == rp.app.client_id


# IdP-initiated, refused


@pytest.mark.parametrize("binding", [REDIRECT, POST])
def test_an_unsigned_logout_request_is_refused_and_ends_nothing(app, world, idp, saml_provider, ada, binding):
    cookie, session_index = ada
    url, fields = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], binding, session_index=session_index, signed=False
    )
    answer = from_idp(app, idp, url, fields)
    assert answer.status_code == 400
    assert answer.get_json()["error"] == "saml_logout_refused"
    assert session_live(app, cookie)
    assert logout_reasons(world) == ["unsigned"]


def test_a_replayed_logout_request_is_refused(app, client, world, idp, saml_provider, ada):
    _, session_index = ada
    url, _ = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, session_index=session_index
    )
    assert from_idp(app, idp, url, {}).status_code == 303
    # Signed in again (a new SessionIndex); the same request once more must not end anything.
    sign_in(app, client, idp, saml_provider["id"])
    again = signed_in_session(app, client)
    replayed = from_idp(app, idp, url, {})
    assert replayed.status_code == 400
    assert replayed.get_json()["error"] == "saml_logout_refused"
    assert session_live(app, again)
    assert logout_reasons(world) == ["replayed"]


def test_a_logout_request_from_another_identity_provider_is_refused(app, world, idp, saml_provider, ada):
    cookie, _ = ada
    with SamlIdp() as other:
        # Another IdP our SP also trusts elsewhere signs a request for the same name, sent to this provider.
        other.trust_sp(idp.sp_metadata)
        url, _ = other.logout_request(slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, subject="saml-ada")
        answer = from_idp(app, other, url, {})
    assert answer.status_code == 400
    assert session_live(app, cookie)
    assert logout_reasons(world) == ["issuer"]


@pytest.mark.parametrize("binding", [REDIRECT, POST])
def test_a_logout_request_signed_with_another_key_is_refused(app, world, idp, saml_provider, ada, binding):
    cookie, _ = ada
    url, fields = idp.logout_request(slo_url(saml_provider), saml_provider["entity_id"], binding, key_name="rogue")
    answer = from_idp(app, idp, url, fields)
    assert answer.status_code == 400
    assert session_live(app, cookie)
    assert logout_reasons(world) == ["signature"]


def test_a_stale_logout_request_is_refused(app, world, idp, saml_provider, ada):
    cookie, _ = ada
    url, _ = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, issue_instant="2020-01-01T00:00:00Z"
    )
    answer = from_idp(app, idp, url, {})
    assert answer.status_code == 400
    assert session_live(app, cookie)
    # The query is signed over the edited message: the signature holds, the age does not.
    assert logout_reasons(world) == ["expired"]


def test_a_redirect_logout_request_that_inflates_past_the_size_limit_is_refused_unread(
    app, world, idp, saml_provider, ada
):
    cookie, session_index = ada
    # A few kilobytes of query that deflate expands a thousandfold: signed by the IdP, and refused all the same
    # (a request line holds any signed or unsigned one, and it is inflated before its signature is checked).
    url, _ = idp.logout_request(
        slo_url(saml_provider), saml_provider["entity_id"], REDIRECT, session_index=session_index, padding=600_000
    )
    assert len(url) < 8190
    answer = from_idp(app, idp, url, {})
    assert answer.status_code == 400
    assert answer.get_json()["error"] == "saml_logout_refused"
    assert "too large" in answer.get_json()["error_description"]
    assert session_live(app, cookie)
    assert logout_reasons(world) == ["malformed"]


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"SAMLRequest": "%%%not-base64"},
        {"SAMLRequest": "aGVsbG8=", "SigAlg": "x", "Signature": "y"},
        {"SAMLRequest": "aGVsbG8=", "SAMLResponse": "aGVsbG8="},
        {"SAMLResponse": "aGVsbG8=", "RelayState": "unknown"},
        {"SAMLRequest": "A" * 600_000},
    ],
)
def test_malformed_single_logout_messages_are_400s_never_500s(app, client, idp, saml_provider, query):
    path = urlsplit(slo_url(saml_provider)).path
    for response in (
        client.get(path, query_string=query, headers=headers()),
        post_from_idp(app, idp, slo_url(saml_provider), query),
    ):
        assert response.status_code in (400, 413), response.get_data(as_text=True)
        assert response.is_json


# SP-initiated


def test_signing_out_here_sends_a_signed_logout_request_to_the_idp_and_comes_back_to_continue(
    app, client, world, idp, saml_provider, ada
):
    cookie, session_index = ada
    out = client.get("/auth/logout", query_string={"continue": "/auth/login?bye=1"}, headers=headers())
    assert out.status_code == 303
    location = out.headers["Location"]
    assert location.startswith(idp.url + "/slo/redirect?")
    assert {"SAMLRequest", "RelayState", "SigAlg", "Signature"} <= set(query_fields(location))
    assert not session_live(app, cookie)  # signed out here at once, whatever the IdP does
    at_idp = requests.get(location, allow_redirects=False, timeout=10)
    assert at_idp.status_code == 303
    [seen] = idp.logout_requests
    assert seen["signed"] is True
    assert seen["issuer"] == saml_provider["entity_id"]
    assert (seen["name_id"], seen["session_indexes"]) == ("saml-ada", [session_index])
    assert seen["destination"] == idp.url + "/slo/redirect"
    back = at_idp.headers["Location"]
    assert back.startswith(slo_url(saml_provider) + "?")
    finished = client.get(path_and_query(back), headers=headers())
    assert finished.status_code == 303
    assert finished.headers["Location"] == "/auth/login?bye=1"
    # The pending request is single use.
    again = client.get(path_and_query(back), headers=headers())
    assert again.status_code == 400
    assert logout_reasons(world) == ["unsolicited"]
    assert [e.details["initiated_by"] for e in audit_events(world, "saml.logout")] == ["sp"]


def test_a_signed_partial_logout_answer_from_the_idp_still_continues(app, client, world, idp, saml_provider, ada):
    idp.logout_status = "urn:oasis:names:tc:SAML:2.0:status:PartialLogout"
    out = client.get("/auth/logout", query_string={"continue": "/auth/login?bye=1"}, headers=headers())
    back = requests.get(out.headers["Location"], allow_redirects=False, timeout=10).headers["Location"]
    finished = client.get(path_and_query(back), headers=headers())
    assert finished.status_code == 303
    assert finished.headers["Location"] == "/auth/login?bye=1"
    assert logout_reasons(world) == []


def test_signing_out_here_never_continues_to_another_site(app, client, idp, saml_provider, ada):
    out = client.get("/auth/logout", query_string={"continue": "https://evil.example/x"}, headers=headers())
    back = requests.get(out.headers["Location"], allow_redirects=False, timeout=10).headers["Location"]
    finished = client.get(path_and_query(back), headers=headers())
    assert finished.status_code == 303
    assert finished.headers["Location"] == "/auth/login"


def test_without_an_slo_endpoint_in_the_idp_metadata_signing_out_just_continues(app, client, runner, setup, world):
    with SamlIdp() as idp:
        idp.slo = False
        idp.sign_in_as("saml-ada", **ADA)
        created = create_saml(runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network")
        introduce(client, idp, created)
        sign_in(app, client, idp, created["id"])
        cookie = signed_in_session(app, client)
        out = client.get("/auth/logout", query_string={"continue": "/auth/login?bye=1"}, headers=headers())
    assert out.status_code == 303
    assert out.headers["Location"] == "/auth/login?bye=1"
    assert not session_live(app, cookie)
    assert idp.logout_requests == []


def test_a_password_session_signs_out_without_the_idp(app, client, setup, idp, saml_provider):
    from tests.helpers import signin

    signin(client)
    out = client.get("/auth/logout", query_string={"continue": "/auth/login?bye=1"}, headers=headers())
    assert out.headers["Location"] == "/auth/login?bye=1"
    assert idp.logout_requests == []
