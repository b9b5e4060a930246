"""Which language a page is in: OpenID Connect's ui_locales (carried through sign-in and MFA to consent),
the person's saved choice (the switcher, kept on the account once signed in), Accept-Language, the
domain's default, English; its ``lang`` and ``dir``. What a machine reads (JSON errors) is never translated.

docs/translations.md, "How the language is chosen".
"""

from __future__ import annotations

import re

from sqlalchemy import select

from authsvc.core.models import Domain, DomainBranding, User
from authsvc.web import i18n
from tests.helpers import HOST, authorize, headers, in_one_pass, signin
from tests.helpers.pages import csrf_token

# What is checked does not depend on the database (the claims and e-mails of test_claims_and_mail.py run on both).
pytestmark = in_one_pass("sqlite")


def html_tag(response) -> str:
    return re.search(r"<html[^>]*>", response.get_data(as_text=True)).group(0)


def sign_in_page(client, **extra_headers):
    return client.get("/auth/login", headers=headers(**extra_headers))


def test_accept_language_chooses_the_page_language(client, setup):
    page = sign_in_page(client, **{"Accept-Language": "fr-CH;q=0.4, de-AT;q=0.9, en;q=0.1"})
    html = page.get_data(as_text=True)
    assert html_tag(page) == '<html lang="de" dir="ltr">'
    assert "<h1>Anmelden</h1>" in html and "Passwort" in html
    assert "<h1>Sign in</h1>" not in html


def test_without_a_preference_the_page_is_english(client, setup):
    page = sign_in_page(client)
    assert html_tag(page) == '<html lang="en" dir="ltr">'
    assert "<h1>Sign in</h1>" in page.get_data(as_text=True)


def test_arabic_is_laid_out_right_to_left(client, setup):
    page = sign_in_page(client, **{"Accept-Language": "ar-EG"})
    assert html_tag(page) == '<html lang="ar" dir="rtl">'


def test_every_shipped_language_is_named_as_babels_locale_data_names_it(app):
    """The switcher's names and directions are a table (Babel's data for them costs a worker about 11 MB):
    a catalog added, or a Babel upgrade that renames one, must show here, not on a page."""
    shipped = i18n.languages(app).codes
    assert set(i18n.OWN_NAMES) == set(shipped)
    for code in shipped:
        assert i18n.languages(app).get(code) == i18n.babels_language(code)


def test_ui_locales_of_the_authorisation_request_wins_over_accept_language(client, setup):
    """The application knows its user's language: the sign-in page it sends them to speaks it."""
    sent = authorize(client, setup.public_app.client_id, ui_locales="xx fr-CA de", state="s")
    assert sent.status_code == 303
    page = client.get(sent.headers["Location"], headers=headers(**{"Accept-Language": "de"}))
    assert html_tag(page) == '<html lang="fr" dir="ltr">'
    assert "<h1>Se connecter</h1>" in page.get_data(as_text=True)
    # The form's failure answer keeps the language: ui_locales rides in the form's continue.
    continue_url = re.search(r'name="continue" type="hidden" value="([^"]+)"', page.get_data(as_text=True))
    form = {
        "csrf_token": csrf_token(page),
        "email": "person@example.com",
        "password": "not the password",
        "continue": continue_url.group(1).replace("&amp;", "&"),
    }
    failed = client.post("/auth/login", data=form, headers=headers(**{"Accept-Language": "de"}))
    assert failed.status_code == 401
    assert "L’adresse e-mail ou le mot de passe est incorrect." in failed.get_data(as_text=True)


def test_ui_locales_reaches_the_consent_page(client, setup, world):
    world.update(type(setup.public_app), setup.public_app.id, consent=True)
    signin(client)
    page = authorize(client, setup.public_app.client_id, ui_locales="de", state="s")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert html_tag(page) == '<html lang="de" dir="ltr">'
    assert "Zulassen" in html and "Ablehnen" in html


def test_the_switcher_keeps_the_choice_in_a_cookie_and_returns_to_the_page(client, setup):
    page = sign_in_page(client)
    assert 'action="/auth/language"' in page.get_data(as_text=True)
    chosen = client.post(
        "/auth/language", data={"locale": "fr", "continue": "/auth/login?x=1&ui_locales=de"}, headers=headers()
    )
    assert chosen.status_code == 303
    assert chosen.headers["Location"] == "/auth/login?x=1", "the request's ui_locales would undo the choice"
    assert client.get_cookie("locale", domain=HOST).value == "fr"
    again = sign_in_page(client, **{"Accept-Language": "de"})
    assert html_tag(again) == '<html lang="fr" dir="ltr">'


def test_the_choice_of_a_signed_in_person_is_kept_on_the_account(app, client, setup, world):
    signin(client)
    chosen = client.post(
        "/auth/language", data={"locale": "de", "continue": "https://elsewhere.example/"}, headers=headers()
    )
    assert chosen.status_code == 303 and chosen.headers["Location"] == "/auth/login", "no open redirect"
    [person] = world.query(select(User).where(User.email == "person@example.com"))
    assert person.locale == "de"
    # Another browser, the same account: its pages follow the account's choice.
    other = app.test_client()
    signin(other)
    page = other.get("/auth/account", headers=headers(**{"Accept-Language": "fr"}))
    assert html_tag(page) == '<html lang="de" dir="ltr">'
    assert "Ihr Konto" in page.get_data(as_text=True)


def test_a_language_not_shipped_is_refused(client, setup):
    refused = client.post("/auth/language", data={"locale": "tlh"}, headers=headers())
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "invalid_request"


def test_the_domain_default_applies_when_the_request_says_nothing(client, setup, world):
    world.save(DomainBranding(domain_id=setup.domain.id, default_locale="fr", updated_at=0))
    world.update(Domain, setup.domain.id, branding_version=1)
    assert html_tag(sign_in_page(client)) == '<html lang="fr" dir="ltr">'
    # A preference the browser states comes first.
    assert html_tag(sign_in_page(client, **{"Accept-Language": "de"})) == '<html lang="de" dir="ltr">'


def test_json_errors_keep_their_codes_and_words_in_any_language(client, setup):
    german = {"Accept-Language": "de"}
    failed = client.post(
        "/auth/signin", data={"email": "person@example.com", "password": "wrong"}, headers=headers(**german)
    )
    assert failed.status_code == 401
    assert failed.get_json()["error"] == "invalid_credentials"
    assert failed.get_json()["error_description"] == "The e-mail address or password is incorrect."
    token = client.post("/auth/oauth/token", data={"grant_type": "nonsense"}, headers=headers(**german))
    assert token.get_json()["error"] in ("unsupported_grant_type", "invalid_client")
    assert not re.search(r"[äöüß]", token.get_data(as_text=True))
