"""The consent page speaks plainly: the application's name and logo (an admin's, from our own host; a logo the
client declared at registration never fetched, only named as not verified), where the answer goes, and what
each scope allows in the domain admins' words or the service's own (docs/branding.md, "Consent")."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from authsvc.core.models import ApplicationLogo
from authsvc.core.scope_text import BUILT_IN
from tests.helpers import HOST, REDIRECT_URI, authorize, headers, signin
from tests.helpers.admin_api import call
from tests.helpers.images import image

DESCRIPTIONS = "/domains/1/scope_descriptions"


def consent_page(client, application, scope="public mqtt.read", **query):
    signin(client)
    page = authorize(client, application.client_id, scope=scope, state="s", **query)
    assert page.status_code == 200, page.get_data(as_text=True)[:500]
    return page.get_data(as_text=True)


def put_app_logo(client, key, application_id, data: bytes):
    return client.put(
        f"/api/engine/v2/oauth_apps/{application_id}/logo",
        data=data,
        headers=headers(HOST, **{"X-API-Key": key, "Content-Type": "image/png"}),
    )


def test_the_consent_page_names_the_application_its_redirect_host_and_the_scopes_in_plain_words(
    client, keys, setup, world
):
    application, _ = world.application(setup.domain, consent=True, name="Room Booker", scopes="public mqtt.read")
    describe = {"scope": "mqtt.read", "text": "Read the room sensors."}
    call(client, "put", DESCRIPTIONS, keys.admin_key, json=describe)
    html = consent_page(client, application)
    assert "<h1>Allow Room Booker?</h1>" in html
    assert re.search(r'class="redirect-host">' + re.escape(urlsplit(REDIRECT_URI).netloc) + "<", html), html
    assert "Read the room sensors." in html
    # No logo of any kind: the initial, no image, no claim.
    assert '<img class="app-logo"' not in html and "not verified" not in html
    # One in the page's language (English here) comes before the one for any language; another language's never.
    call(client, "put", DESCRIPTIONS, keys.admin_key, json=describe | {"locale": "en", "text": "Read your rooms."})
    call(client, "put", DESCRIPTIONS, keys.admin_key, json=describe | {"locale": "de", "text": "Sensoren lesen."})
    html = authorize(client, application.client_id, scope="public mqtt.read", state="s").get_data(as_text=True)
    assert "Read your rooms." in html and "Read the room sensors." not in html and "Sensoren" not in html


def test_the_consent_page_shows_built_in_descriptions_of_standard_scopes(client, setup, world):
    application, _ = world.application(setup.domain, consent=True, scopes="public openid email")
    html = consent_page(client, application, scope="openid email")
    assert BUILT_IN["openid"] in html and BUILT_IN["email"] in html


def test_the_consent_page_shows_an_admins_logo_as_verified(client, keys, setup, world):
    application, _ = world.application(setup.domain, consent=True, name="Room Booker")
    digest = put_app_logo(client, keys.admin_key, application.id, image()).json["logo"]["digest"]
    html = consent_page(client, application, scope="public")
    assert f'src="/auth/branding/applications/{application.client_id}/logo?v={digest}"' in html
    assert "not verified" not in html


def test_a_registered_logo_uri_is_never_fetched_and_shown_as_not_verified(client, setup, world):
    application, _ = world.application(setup.domain, consent=True, name="Partner")
    world.save(ApplicationLogo(application_id=application.id, declared_uri="https://cdn.partner.example/logo.png"))
    html = consent_page(client, application, scope="public")
    assert "cdn.partner.example/logo.png" not in html  # no <img> pointing at it, no link
    assert "cdn.partner.example" in html and "not verified" in html
