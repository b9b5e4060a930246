"""A domain's brand on its pages and e-mails: the header, the button's colour through a served stylesheet,
the footer's links, the logo from our own host with long caching, the pages' CSP unchanged, and a page that
reads its brand with the domain row it already loads (no statement of its own)."""

from __future__ import annotations

import re

import pytest

from tests.helpers import HOST, headers
from tests.helpers import smtp as mail
from tests.helpers.admin_api import API, call
from tests.helpers.counting import trips
from tests.helpers.images import image
from tests.helpers.pages import csrf_token
from tests.helpers.smtp import deliver, html_of, text_of

smtp_server = mail.smtp_server
smtp = mail.smtp
mail_app = mail.mail_app


@pytest.fixture
def app(mail_app):
    """The suite's app, mailing the module's SMTP server."""
    return mail_app


BRAND = {
    "display_name": "Acme Corp",
    "primary_color": "#ffd400",
    "background_color": "#101820",
    "support_url": "https://help.acme.example/",
    "privacy_url": "https://acme.example/privacy",
    "terms_url": "https://acme.example/terms",
}


def brand(client, keys, **fields):
    answer = call(client, "put", "/domains/1/branding", keys.admin_key, json=BRAND | fields)
    assert answer.status_code == 200, answer.json
    return answer.json


def upload_logo(client, keys) -> str:
    answer = client.put(
        f"{API}/domains/1/branding/logo",
        data=image("PNG"),
        headers=headers(HOST, **{"X-API-Key": keys.admin_key, "Content-Type": "image/png"}),
    )
    assert answer.status_code == 200, answer.json
    return answer.json["logo"]["digest"]


def stylesheet_of(page: str) -> str:
    [href] = re.findall(r'<link rel="stylesheet" href="(/auth/branding/style\.css\?v=[0-9]+)">', page)
    return href


def test_the_sign_in_page_shows_the_brand_with_the_csp_unchanged(client, keys):
    default_look = client.get("/auth/login", headers=headers()).headers["Content-Security-Policy"]
    brand(client, keys)
    digest = upload_logo(client, keys)
    response = client.get("/auth/login", headers=headers())
    page = response.get_data(as_text=True)
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"] == default_look
    assert "style-src 'self';" in default_look and "unsafe-inline" not in default_look
    assert f'<img class="brand-logo" src="/auth/branding/logo?v={digest}" alt="Acme Corp">' in page
    assert '<span class="brand-name">Acme Corp</span>' in page and "<title>Sign in · Acme Corp</title>" in page
    for link in ("https://help.acme.example/", "https://acme.example/privacy", "https://acme.example/terms"):
        assert f'href="{link}"' in page
    # Nothing inline for the CSP to allow: no style attribute or element, no script but a file (script-src 'self').
    assert not re.search(r"<style|style=|<script(?![^>]*\bsrc=\")", page)
    css = client.get(stylesheet_of(page), headers=headers())
    assert css.status_code == 200 and css.mimetype == "text/css"
    # The sign-in button: the primary colour, and black text, as white would fail AA on yellow.
    assert "button:not(.secondary), .button:not(.secondary) { background: #ffd400; color: #000000; }" in css.text
    assert "--bg: #101820" in css.text


def test_an_unbranded_domains_pages_link_no_brand_stylesheet_and_show_no_brand_footer(client, setup):
    page = client.get("/auth/login", headers=headers()).get_data(as_text=True)
    assert "/auth/branding/" not in page and "brand-foot" not in page


def test_the_stylesheet_and_logo_are_cached_for_a_year_when_versioned_and_revalidated_by_etag(client, keys):
    brand(client, keys)
    digest = upload_logo(client, keys)
    page = client.get("/auth/login", headers=headers()).get_data(as_text=True)
    for url in (stylesheet_of(page), f"/auth/branding/logo?v={digest}"):
        first = client.get(url, headers=headers())
        assert first.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        etag = first.headers["ETag"]
        again = client.get(url, headers=headers(**{"If-None-Match": etag}))
        assert again.status_code == 304 and again.data == b""
    stale = client.get("/auth/branding/logo?v=old", headers=headers())
    assert stale.status_code == 200 and stale.headers["Cache-Control"] == "public, no-cache"
    assert stale.headers["X-Content-Type-Options"] == "nosniff"


def test_a_change_gives_the_pages_a_new_stylesheet_with_the_new_colour(client, keys):
    brand(client, keys)
    before = stylesheet_of(client.get("/auth/login", headers=headers()).get_data(as_text=True))
    assert "#ffd400" in client.get(before, headers=headers()).text
    brand(client, keys, primary_color="#0b3d91")
    after = stylesheet_of(client.get("/auth/login", headers=headers()).get_data(as_text=True))
    assert after != before
    assert "background: #0b3d91; color: #ffffff;" in client.get(after, headers=headers()).text
    call(client, "delete", "/domains/1/branding", keys.admin_key)
    assert "/auth/branding/" not in client.get("/auth/login", headers=headers()).get_data(as_text=True)


def test_a_branded_sign_in_page_makes_no_more_round_trips_than_an_unbranded_one(app, client, keys, monkeypatch):
    client.get("/auth/login", headers=headers())
    with trips(app, monkeypatch) as plain:
        client.get("/auth/login", headers=headers())
    brand(client, keys)
    upload_logo(client, keys)
    client.get("/auth/login", headers=headers())  # this worker reads the new brand once
    with trips(app, monkeypatch) as branded:
        page = client.get("/auth/login", headers=headers())
    assert "Acme Corp" in page.get_data(as_text=True)
    assert branded.sql == plain.sql, branded
    assert branded.redis == plain.redis, branded


def test_every_email_carries_the_brand(app, client, keys, smtp):
    brand(client, keys)
    digest = upload_logo(client, keys)
    page = client.get("/auth/password/forgot", headers=headers())
    asked = client.post(
        "/auth/password/forgot",
        data={"csrf_token": csrf_token(page), "email": "person@example.com"},
        headers=headers(),
    )
    assert asked.status_code == 200
    deliver(app)
    [message] = smtp.to("person@example.com")
    html, text = html_of(message), text_of(message)
    assert f"/auth/branding/logo?v={digest}" in html and "Acme Corp" in html
    assert "background:#ffd400;color:#000000" in html
    assert 'href="https://acme.example/privacy"' in html and "Terms: https://acme.example/terms" in text
    assert text.splitlines()[0] == "Acme Corp", text
    assert "reset the password" in text
