"""The console in a real browser (headless Chromium): an admin creates an application, then uses it."""

from __future__ import annotations

import secrets
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.helpers import in_one_pass, pkce_pair
from tests.helpers.browser import ClientApplication, chromium, exchange_and_inspect
from tests.helpers.servers import running_service

ADMIN = "ops@acme.example"
ADMIN_PASSWORD = "admin password"
# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


@pytest.fixture(scope="module")
def stage(schema, tmp_path_factory):
    with ClientApplication() as client_app, running_service(tmp_path_factory.mktemp("instance")) as service:
        service.cli("domains", "create", "--name", "Acme", "--host", "127.0.0.1")
        service.cli(
            "users",
            "create",
            "--domain",
            "127.0.0.1",
            "--email",
            ADMIN,
            "--password",
            ADMIN_PASSWORD,
            "--name",
            "Olivia Ops",
            "--admin",
        )
        # Applications already in use, so that the list looks like a domain's (it is the README's screenshot).
        service.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Room booking",
            "--redirect-uri",
            "https://rooms.acme.example/callback",
            "--scopes",
            "public mqtt.read",
            "--require-pkce",
        )
        service.cli(
            "apps",
            "create",
            "--domain",
            "127.0.0.1",
            "--name",
            "Building backend",
            "--redirect-uri",
            "https://backend.acme.example/oauth/callback",
            "--scopes",
            "public mqtt.read mqtt.write",
            "--confidential",
        )
        yield service, client_app


def test_an_admin_creates_an_application_in_the_console_and_the_browser_signs_in_with_it(stage, tmp_path):
    service, client_app = stage
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 600})
        page.goto(service.url + "/auth/admin/")
        page.wait_for_url("**/auth/login?**")
        page.fill("input[name=email]", ADMIN)
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(service.url + "/auth/admin/")

        page.click("table >> text=Acme")
        page.click("text=New application")
        page.fill("input[name=name]", "Visitor kiosk")
        page.fill("textarea[name=redirect_uris]", client_app.redirect_uri)
        page.fill("input[name=scopes]", "public mqtt.read")
        page.check("input[name=require_pkce]")
        page.click("button[type=submit]")
        assert "Application Visitor kiosk created." in page.inner_text(".notice")
        client_id = page.inner_text("#client-id")

        page.click(".back a")
        page.wait_for_selector(f"text={client_id}")
        page.screenshot(path=str(tmp_path / "console.png"))

        # The browser still holds the admin's session: the code flow goes straight back to the application.
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(8)
        client_app.link_to(
            service.url,
            response_type="code",
            client_id=client_id,
            redirect_uri=client_app.redirect_uri,
            scope="public mqtt.read",
            state=state,
            code_challenge=challenge,
            code_challenge_method="S256",
        )
        page.goto(client_app.url + "/")
        page.click("#signin")
        page.wait_for_url(client_app.redirect_uri + "?**")
        params = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert params["state"] == state
    claims = exchange_and_inspect(service, client_id, params["code"], client_app.redirect_uri, verifier)
    assert claims["client_id"] == client_id
    assert claims["u"]["e"] == ADMIN
    assert claims["scope"] == ["public", "mqtt.read"]
    assert (tmp_path / "console.png").read_bytes().startswith(b"\x89PNG")
