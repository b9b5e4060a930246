"""The authorisation-code round trip in a real browser (headless Chromium)."""

from __future__ import annotations

import secrets
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.fakes.providers import Provider
from tests.helpers import in_one_pass, pkce_pair
from tests.helpers.browser import ClientApplication, chromium, exchange_and_inspect
from tests.helpers.seeded_service import PASSWORD, add_user
from tests.helpers.servers import running_service

# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


@pytest.fixture(scope="module")
def stage(schema, tmp_path_factory):
    with ClientApplication() as client_app, running_service(tmp_path_factory.mktemp("instance")) as service:
        service.cli("domains", "create", "--name", "Browser", "--host", "127.0.0.1")
        service.app = service.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Room booking",
            "--redirect-uri",
            client_app.redirect_uri,
            "--scopes",
            "public mqtt.read",
        )
        service.consent_app = service.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Consenting app",
            "--redirect-uri",
            client_app.redirect_uri,
            "--consent",
        )
        add_user(service, "person@example.com", "Person")
        yield service, client_app


def test_application_link_sign_in_and_back_with_code_and_state(stage, tmp_path):
    service, client_app = stage
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(8)
    client_app.link_to(
        service.url,
        response_type="code",
        client_id=service.app["client_id"],
        redirect_uri=client_app.redirect_uri,
        scope="public mqtt.read",
        state=state,
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    with chromium() as browser:
        page = browser.new_page()
        page.goto(client_app.url + "/")
        page.click("#signin")
        page.wait_for_url("**/auth/login?**")
        assert page.title().startswith("Sign in")
        page.screenshot(path=str(tmp_path / "signin.png"))
        page.fill("input[name=email]", "person@example.com")
        page.fill("input[name=password]", "a wrong password")
        page.click("button[type=submit]")
        assert "The e-mail address or password is incorrect." in page.content()
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(client_app.redirect_uri + "?**")
        params = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert params["state"] == state
    claims = exchange_and_inspect(service, service.app["client_id"], params["code"], client_app.redirect_uri, verifier)
    assert claims["u"]["e"] == "person@example.com"
    assert claims["scope"] == ["public", "mqtt.read"]
    assert (tmp_path / "signin.png").read_bytes().startswith(b"\x89PNG")


def test_consent_in_the_browser(stage):
    service, client_app = stage
    verifier, challenge = pkce_pair()
    client_app.link_to(
        service.url,
        response_type="code",
        client_id=service.consent_app["client_id"],
        redirect_uri=client_app.redirect_uri,
        state="c1",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    with chromium() as browser:
        page = browser.new_page()
        page.goto(client_app.url + "/")
        page.click("#signin")
        page.fill("input[name=email]", "person@example.com")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("text=Allow Consenting app?")
        page.click("button[name=approve]")
        page.wait_for_url(client_app.redirect_uri + "?**")
        params = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert params["state"] == "c1"
    exchange_and_inspect(service, service.consent_app["client_id"], params["code"], client_app.redirect_uri, verifier)


def test_single_sign_on_round_trip_in_the_browser(stage):
    service, client_app = stage
    with Provider("oidc") as idp:
        idp.sign_in_as(sub="browser-sso-1", email="sso.person@example.com", email_verified=True, name="SSO Person")
        provider = service.cli(
            "sso",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Corporate SSO",
            "--client-id",
            idp.client_id,
            "--client-secret",
            idp.client_secret,
            "--issuer",
            idp.url,
            "--allow-private-network",
        )
        verifier, challenge = pkce_pair()
        client_app.link_to(
            service.url,
            response_type="code",
            client_id=service.app["client_id"],
            redirect_uri=client_app.redirect_uri,
            state="sso-state",
            code_challenge=challenge,
            code_challenge_method="S256",
        )
        with chromium() as browser:
            page = browser.new_page()
            page.goto(client_app.url + "/")
            page.click("#signin")
            page.wait_for_url("**/auth/login?**")
            page.click("text=Sign in with Corporate SSO")
            page.wait_for_url(client_app.redirect_uri + "?**")
            params = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert params["state"] == "sso-state"
    claims = exchange_and_inspect(service, service.app["client_id"], params["code"], client_app.redirect_uri, verifier)
    assert claims["u"]["e"] == "sso.person@example.com"
    assert provider["callback_url"].endswith("/auth/oauth2/callback")
