"""A branded domain in a real browser, against the service under gunicorn (two workers).

Chromium opens the sign-in page of a domain branded from the command line: the logo comes from our own
host and is drawn, the sign-in button has the primary colour (with black text, as white would fail WCAG
2.1 AA on yellow), the CSP header is the default look's, nothing breaks it and nothing is fetched from
elsewhere. A change made by the command line shows on every worker's next page.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from PIL import Image

from authsvc.auth.views import SIGNIN_CSP
from tests.helpers import in_one_pass
from tests.helpers.browser import chromium
from tests.helpers.servers import running_service

# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


@pytest.fixture(scope="module")
def service(schema, tmp_path_factory):
    instance = tmp_path_factory.mktemp("instance")
    logo = instance / "logo.png"
    Image.new("RGB", (120, 40), (16, 24, 32)).save(logo)
    with running_service(instance) as service:
        service.cli("domains", "create", "--name", "Workplace", "--host", "localhost")
        service.cli(
            "domains", "brand", "--domain", "localhost", "--display-name", "Acme Corp", "--logo", str(logo),
            "--primary-color", "#FFD400", "--privacy-url", "https://acme.example/privacy",
        )  # fmt: skip
        yield service


def test_a_branded_sign_in_page_in_chromium(service):
    base = service.url.replace("127.0.0.1", "localhost")
    with chromium() as browser:
        page = browser.new_context().new_page()
        requested, refused = [], []
        page.on("request", lambda request: requested.append(request.url))
        page.on("console", lambda message: refused.append(message.text) if "Content Security" in message.text else None)
        answer = page.goto(f"{base}/auth/login")
        assert answer is not None and answer.headers["content-security-policy"] == SIGNIN_CSP
        page.wait_for_load_state("load")
        assert "Acme Corp" in page.inner_text("header.brand-head")
        logo = page.locator("img.brand-logo")
        assert urlsplit(logo.get_attribute("src")).path == "/auth/branding/logo"
        assert logo.evaluate("img => img.complete && img.naturalWidth") == 120
        button = page.locator("button[type=submit]")
        assert button.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(255, 212, 0)"
        assert button.evaluate("b => getComputedStyle(b).color") == "rgb(0, 0, 0)"
        assert page.get_attribute("footer.brand-foot a", "href") == "https://acme.example/privacy"
        assert {urlsplit(url).netloc for url in requested} == {urlsplit(base).netloc}, requested
        assert refused == []

        # Another colour from the command line: every worker's next page has it.
        service.cli("domains", "brand", "--domain", "localhost", "--primary-color", "#0B3D91")
        for _ in range(4):  # a fresh connection each time, so that both workers answer
            fresh = browser.new_context().new_page()
            fresh.goto(f"{base}/auth/login")
            colour = fresh.locator("button[type=submit]").evaluate("b => getComputedStyle(b).backgroundColor")
            assert colour == "rgb(11, 61, 145)"
            fresh.context.close()
