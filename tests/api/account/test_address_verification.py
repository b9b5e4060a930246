"""A verified address: a new address is unverified (``email_verified`` false in ID tokens and UserInfo) until
its owner follows the link a real SMTP server (aiosmtpd on loopback) received; the owner may ask for it again.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.helpers import HOST, OIDC_SCOPES, REDIRECT_URI, HttpsClient, World, get_code, headers, signin
from tests.helpers.pages import csrf_token
from tests.helpers.smtp import deliver, emptied, link_in, mail_config, text_of
from tests.helpers.sso import api


@pytest.fixture
def app(mail_app):
    """The suite's app, mailing the SMTP server."""
    return mail_app


@pytest.fixture
def setup(world):
    class Setup:
        domain = world.domain(scopes=OIDC_SCOPES)
        app, secret = world.application(domain, confidential=True, scopes=OIDC_SCOPES)
        person = world.user(domain, "person@example.com", name="Person")
        admin = world.user(domain, "admin@example.com", admin=True)
        key = world.api_key(admin, scopes="public admin", permission="admin")

    return Setup


def claims(client, setup) -> tuple[dict, dict]:
    """The signed-in user's ID token claims and UserInfo answer, for ``openid email``."""
    code = get_code(client, setup.app.client_id, scope="openid email")
    tokens = client.post(
        "/auth/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        headers=headers(),
        auth=(setup.app.client_id, setup.secret),
    ).get_json()
    payload = tokens["id_token"].split(".")[1]
    id_claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    userinfo = client.get("/auth/oauth/userinfo", headers=headers(Authorization=f"Bearer {tokens['access_token']}"))
    return id_claims, userinfo.get_json()


def verified(client, setup) -> tuple[bool, bool]:
    id_claims, userinfo = claims(client, setup)
    return id_claims["email_verified"], userinfo["email_verified"]


def change_address(client, setup, email: str):
    changed = api(client, "patch", f"/users/{setup.person.id}", setup.key, {"email": email})
    assert changed.status_code == 200, changed.get_json()
    return changed.get_json()


def confirm(client, link: str):
    parts = urlsplit(link)
    assert parts.netloc == HOST, "links use the domain's own host"
    opened = client.get(f"{parts.path}?{parts.query}", headers=headers())
    assert opened.status_code == 303 and opened.headers["Referrer-Policy"] == "no-referrer"
    assert urlsplit(opened.headers["Location"]).query == "", "the secret leaves the address bar"
    page = client.get(opened.headers["Location"], headers=headers())
    if page.status_code != 200:
        return page
    assert page.headers["Referrer-Policy"] == "no-referrer"
    return client.post(opened.headers["Location"], data={"csrf_token": csrf_token(page)}, headers=headers())


def test_a_new_address_is_unverified_until_its_owner_follows_the_link(app, client, setup, smtp, world):
    signin(client)
    assert verified(client, setup) == (True, True)
    assert change_address(client, setup, "new@example.com")["email_verified"] is False
    signin(client, "new@example.com")
    assert verified(client, setup) == (False, False)
    deliver(app)
    [message] = smtp.to("new@example.com")
    assert message["Subject"] == "Confirm your e-mail address" and message["Message-ID"]
    assert message.get_body(preferencelist=("html",)) is not None
    done = confirm(client, link_in(message))
    assert done.status_code == 200 and "new@example.com" in done.get_data(as_text=True)
    assert verified(client, setup) == (True, True)
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "user.email_verified"))
    assert record.details == {"email": "new@example.com"}
    # The link works once.
    assert confirm(client, link_in(message)).status_code == 400


def test_a_link_to_an_address_no_longer_the_users_verifies_nothing(app, client, setup, smtp):
    change_address(client, setup, "first@example.com")
    change_address(client, setup, "second@example.com")
    deliver(app)
    [first] = smtp.to("first@example.com")
    assert confirm(client, link_in(first)).status_code == 400
    signin(client, "second@example.com")
    assert verified(client, setup) == (False, False)


def test_the_signed_in_page_sends_the_link_again(app, client, setup, smtp):
    change_address(client, setup, "new@example.com")
    signin(client, "new@example.com")
    page = client.get("/auth/login", headers=headers())
    assert "Send the link again" in page.get_data(as_text=True)
    again = client.post("/auth/email/verify/resend", data={"csrf_token": csrf_token(page)}, headers=headers())
    assert again.status_code == 200, again.get_data(as_text=True)
    deliver(app)
    messages = smtp.to("new@example.com")
    assert len(messages) == 2 and link_in(messages[0]) != link_in(messages[1])
    assert "token=" in text_of(messages[1])
    assert confirm(client, link_in(messages[1])).status_code == 200


def test_asking_again_needs_a_session_and_its_csrf_token(client, setup, smtp):
    assert client.post("/auth/email/verify/resend", headers=headers()).status_code == 401
    signin(client)
    assert client.post("/auth/email/verify/resend", headers=headers()).status_code == 400


def test_asking_again_is_rate_limited(make_app, smtp):
    app = emptied(make_app(**mail_config(smtp), AUTHSVC_ACCOUNT_MAIL_RATE_LIMIT="2/minute"))
    app.test_client_class = HttpsClient
    world = World(app)
    domain = world.domain()
    world.user(domain, "person@example.com", email_verified=False)
    client = app.test_client()
    signin(client)
    token = csrf_token(client.get("/auth/login", headers=headers()))
    asked = [
        client.post("/auth/email/verify/resend", data={"csrf_token": token}, headers=headers()).status_code
        for _ in range(3)
    ]
    assert asked == [200, 200, 429]
