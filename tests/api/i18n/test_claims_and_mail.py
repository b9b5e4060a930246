"""The language outside the pages: the ``locale`` claim (OpenID Connect Core 5.1) for the profile scope,
the discovery document's ``ui_locales_supported`` and ``claims_locales_supported``, and e-mails written in
the recipient's language (docs/translations.md)."""

from __future__ import annotations

import pytest

from authsvc.core.models import User
from tests.helpers import get_code, headers, signin
from tests.helpers.id_tokens import exchange, verify
from tests.helpers.pages import csrf_token
from tests.helpers.smtp import deliver, text_of
from tests.helpers.smtp import mail_app as mail_app  # noqa: F401 - the fixture
from tests.helpers.smtp import smtp as smtp  # noqa: F401 - the fixture
from tests.helpers.smtp import smtp_server as smtp_server  # noqa: F401 - the fixture


def test_discovery_names_the_languages_of_the_pages(client, oidc):
    document = client.get("/.well-known/openid-configuration", headers=headers()).get_json()
    assert {"en", "de", "fr", "es", "pt-BR", "ja", "ar"} <= set(document["ui_locales_supported"])
    assert document["claims_locales_supported"] == ["en"]
    assert "locale" in document["claims_supported"]


def claims(client, oidc, scope: str) -> tuple[dict, dict]:
    """The signed-in user's ID token claims and UserInfo answer for ``scope``."""
    code = get_code(client, oidc.app.client_id, scope=scope, nonce="n")
    body = exchange(client, oidc.app, oidc.secret, code).get_json()
    _, id_claims = verify(client, body["id_token"])
    info = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {body['access_token']}"))
    assert info.status_code == 200, info.get_json()
    return id_claims, info.get_json()


def test_the_locale_claim_states_the_users_choice_for_the_profile_scope(client, oidc, world):
    world.update(User, oidc.person.id, locale="pt_BR")
    signin(client)
    id_claims, info = claims(client, oidc, "openid profile")
    assert id_claims["locale"] == info["locale"] == "pt-BR"
    id_claims, info = claims(client, oidc, "openid")
    assert "locale" not in id_claims and "locale" not in info, "the claim belongs to the profile scope"


@pytest.fixture
def app(mail_app):
    return mail_app


def test_a_message_is_written_in_the_recipients_language(app, client, setup, smtp, world):
    world.update(User, setup.person.id, locale="de")
    page = client.get("/auth/password/forgot", headers=headers(**{"Accept-Language": "fr"}))
    asked = client.post(
        "/auth/password/forgot",
        data={"csrf_token": csrf_token(page), "email": "person@example.com"},
        headers=headers(**{"Accept-Language": "fr"}),
    )
    assert asked.status_code == 200
    assert "Consultez votre boîte de réception" in asked.get_data(as_text=True), "the page is the asker's"
    deliver(app)
    [message] = smtp.to("person@example.com")
    assert message["Subject"] == "Setzen Sie Ihr Passwort zurück"
    assert "Jemand hat angefordert, das Passwort Ihres Kontos" in text_of(message)
    assert 'lang="de"' in message.get_body(("html",)).get_content()
