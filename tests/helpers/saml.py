"""SAML 2.0 sign-in for the tests: the IdP on loopback (tests/fakes/saml_idp.py), providers registered with it, and
the browser's path through it.

The browser's path is followed as a browser takes it: our redirect to the IdP,
the IdP's auto-posting form, that POST to our ACS from the IdP's site (a
foreign Origin, and no cookie: ours are SameSite=Lax), then our redirect back
to ourselves, which carries the flow cookie.

Used by the tests in tests/api/saml/, whose conftest.py offers the fixtures defined here, and which skip
without xmlsec1 (``needs_xmlsec``).
"""

from __future__ import annotations

import json
import re
from html import unescape
from urllib.parse import urlsplit

import pytest
import requests

from tests.fakes.saml_idp import SamlIdp, xmlsec_available
from tests.helpers import HOST, headers
from tests.helpers.console import audit as audit_events

needs_xmlsec = pytest.mark.skipif(
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


def refusal_reasons(world) -> list[str]:
    return [r.details.get("reason") for r in audit_events(world, "saml.refused")]
