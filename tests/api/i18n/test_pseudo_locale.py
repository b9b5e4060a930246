"""Every person's page through the pseudo-locale: the English catalog replaced by one that brackets and
accents every message (built at test time from messages.pot). A word left in plain letters outside the
brackets is text that never went through the catalogs (docs/translations.md, "Checks")."""

from __future__ import annotations

import pytest

from authsvc.core.models import Application
from authsvc.mail import messages
from tests.api.i18n.pseudo import pseudo_catalogs as pseudo_catalogs  # noqa: F401 - the fixture
from tests.api.i18n.pseudo import unmarked
from tests.helpers import authorize, headers, in_one_pass, signin
from tests.helpers.pages import submit_login
from tests.helpers.smtp import emptied

# What is checked does not depend on the database (the claims and e-mails of test_claims_and_mail.py run on both).
pytestmark = in_one_pass("sqlite")


@pytest.fixture
def app(make_app, pseudo_catalogs):  # noqa: F811 - the module's app reads the pseudo-locale
    return emptied(make_app(BABEL_TRANSLATION_DIRECTORIES=f"{pseudo_catalogs};translations"))


def data_of(setup) -> tuple[str, ...]:
    """What a page shows that is the domain's or the person's own, not the service's words."""
    return (
        setup.domain.name,
        setup.domain.host,
        "person@example.com",
        "Person",
        setup.public_app.name,
        setup.confidential_app.name,
        "XXXX-XXXX",
        "127.0.0.1",
        "authsvc",
    )


PAGES_SIGNED_OUT = (
    "/auth/login?continue=/auth/oauth/authorize",
    "/auth/password/forgot",
    "/auth/signup",
    "/auth/password/reset",
    "/",
)
PAGES_SIGNED_IN = (
    "/auth/login",
    "/auth/account",
    "/auth/account/sessions",
    "/auth/mfa",
    "/auth/mfa/totp",
    "/auth/device",
    "/",
)


def test_no_page_shows_text_that_escaped_the_catalogs(client, setup, world):
    found = {}
    for path in PAGES_SIGNED_OUT:
        page = client.get(path, headers=headers())
        found[path] = unmarked(page.get_data(as_text=True), *data_of(setup))
    failed = submit_login(client, password="not the password")
    found["failed sign-in"] = unmarked(failed.get_data(as_text=True), *data_of(setup))
    signin(client)
    for path in PAGES_SIGNED_IN:
        page = client.get(path, headers=headers())
        assert page.status_code == 200, path
        found[path] = unmarked(page.get_data(as_text=True), *data_of(setup))
    world.update(Application, setup.public_app.id, consent=True)
    consent = authorize(client, setup.public_app.client_id, scope="public", state="s")
    assert consent.status_code == 200
    found["consent"] = unmarked(consent.get_data(as_text=True), *data_of(setup), "public")
    assert {path: words for path, words in found.items() if words} == {}


def test_no_message_shows_text_that_escaped_the_catalogs(app, setup):
    context = {
        "link": "https://example.com/x",
        "reset_link": "https://example.com/r",
        "account_link": "https://example.com/a",
        "forgot": "https://example.com/f",
        "days": 3,
        "minutes": 30,
        "email": "person@example.com",
        "name": "Person",
        "old": "old@example.com",
        "new": "new@example.com",
        "change": "added",
        "factor": "X",
        "browser": "Firefox",
        "address": "127.0.0.1",
        "when": 0,
        "others_ended": True,
        "ways": [],
    }
    templates = [
        "email_change",
        "email_changed",
        "factor_changed",
        "invitation",
        "new_device",
        "password_changed",
        "password_elsewhere",
        "password_reset",
        "signup_existing",
        "verify_email",
    ]
    found = {}
    with app.test_request_context(headers=headers()):
        for name in templates:
            message = messages.compose(setup.domain, "person@example.com", name, "S", **context)
            page = message.get_body(("html",)).get_content()
            text = message.get_body(("plain",)).get_content()
            dynamic = (
                *data_of(setup),
                *[v for v in context.values() if isinstance(v, str)],
                "Jan 1, 1970, 12:00:00 AM",
            )
            words = unmarked(page, *dynamic) + unmarked("<p>" + text.replace("<", " ") + "</p>", *dynamic)
            if words:
                found[name] = words
    assert found == {}
