"""The device grant end to end: a person in Chromium approves or denies while a Python poller plays the device.

The service runs under gunicorn with a 1 s polling interval and a short expiry
for the expiry test, both settings (AUTHSVC_DEVICE_INTERVAL, AUTHSVC_DEVICE_CODE_TTL).
"""

from __future__ import annotations

import threading
import time

import pytest
import requests

from tests.helpers import in_one_pass
from tests.helpers.browser import chromium
from tests.helpers.seeded_service import PASSWORD, add_user
from tests.helpers.servers import running_service

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# A browser drives the pages; the API tests check the storage on both backends.
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]


def _stage(service) -> dict:
    service.cli("domains", "create", "--name", "Devices", "--host", "127.0.0.1")
    add_user(service, "person@example.com", "Person")
    return service.cli(
        "apps",
        "create",
        "--domain",
        "127.0.0.1",
        "--name",
        "Lobby screen",
        "--redirect-uri",
        "https://screen.example.com/unused",
        "--scopes",
        "public mqtt.read",
        "--device",
    )


class Poller(threading.Thread):
    """The device: asks for codes, then polls the token endpoint, keeping every answer it gets."""

    def __init__(self, url: str, client_id: str, *, hurry_once: bool = False) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.client_id = client_id
        self.hurry_once = hurry_once
        self.errors: list[str] = []
        self.token: dict | None = None
        start = requests.post(
            url + "/auth/oauth/device_authorization",
            data={"client_id": client_id, "scope": "mqtt.read"},
            timeout=10,
        )
        assert start.status_code == 200, start.text
        self.codes = start.json()

    def poll(self) -> requests.Response:
        return requests.post(
            self.url + "/auth/oauth/token",
            data={"grant_type": DEVICE_GRANT, "device_code": self.codes["device_code"], "client_id": self.client_id},
            timeout=10,
        )

    def run(self) -> None:
        interval = self.codes["interval"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            response = self.poll()
            if response.status_code == 200:
                self.token = response.json()
                return
            error = response.json()["error"]
            self.errors.append(error)
            if error == "slow_down":
                interval += 5  # RFC 8628 3.5
            elif error != "authorization_pending":
                return
            if self.hurry_once:
                # A badly behaved device polls again at once, once.
                self.hurry_once = False
                continue
            time.sleep(interval + 0.2)


@pytest.fixture(scope="module")
def stage(schema, tmp_path_factory):
    env = {"AUTHSVC_DEVICE_INTERVAL": "1", "AUTHSVC_DEVICE_CODE_TTL": "60"}
    with running_service(tmp_path_factory.mktemp("instance"), **env) as service:
        yield service, _stage(service)


def _approve_in_browser(service, codes: dict, button: str, tmp_path) -> str:
    with chromium() as browser:
        page = browser.new_page()
        # The person types what the screen shows, at the verification URI.
        page.goto(codes["verification_uri"])
        page.wait_for_url("**/auth/login?**")
        page.fill("input[name=email]", "person@example.com")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/auth/device*")
        page.fill("input[name=user_code]", codes["user_code"].lower())
        page.click("button[type=submit]")
        page.wait_for_selector("text=Allow Lobby screen on this device?")
        assert "mqtt.read" in page.content()
        page.screenshot(path=str(tmp_path / "device.png"))
        page.click(f"button[name={button}]")
        page.wait_for_selector("h1")
        return page.inner_text("h1")


def test_a_person_approves_in_the_browser_while_the_device_polls(stage, tmp_path):
    service, app = stage
    device = Poller(service.url, app["client_id"], hurry_once=True)
    assert device.codes["verification_uri"] == service.url + "/auth/device"
    device.start()
    time.sleep(2.5)  # the device is polling (and was told to slow down) before anyone answers
    assert _approve_in_browser(service, device.codes, "approve", tmp_path) == "Device connected"
    device.join(30)
    assert device.token is not None, device.errors
    assert device.errors[:2] == ["authorization_pending", "slow_down"]
    assert set(device.errors) <= {"authorization_pending", "slow_down"}
    assert device.token["scope"] == "mqtt.read"
    assert device.token["refresh_token"]
    inspect = requests.get(
        service.url + "/api/engine/v2/api_keys/inspect",
        headers={"Authorization": f"Bearer {device.token['access_token']}"},
        timeout=10,
    )
    assert inspect.json()["u"]["e"] == "person@example.com"
    # Single use: the device code gave its tokens once.
    assert device.poll().json()["error"] == "invalid_grant"
    refreshed = requests.post(
        service.url + "/auth/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": device.token["refresh_token"],
            "client_id": app["client_id"],
        },
        timeout=10,
    )
    assert refreshed.status_code == 200
    assert refreshed.json()["refresh_token"] != device.token["refresh_token"]
    assert (tmp_path / "device.png").read_bytes().startswith(b"\x89PNG")


def test_a_person_denies_in_the_browser_and_the_device_hears_access_denied(stage, tmp_path):
    service, app = stage
    device = Poller(service.url, app["client_id"])
    device.start()
    assert _approve_in_browser(service, device.codes, "deny", tmp_path) == "Request denied"
    device.join(30)
    assert device.token is None
    assert device.errors[-1] == "access_denied"


def test_a_code_nobody_answers_expires(schema, tmp_path_factory):
    env = {"AUTHSVC_DEVICE_INTERVAL": "1", "AUTHSVC_DEVICE_CODE_TTL": "3"}
    with running_service(tmp_path_factory.mktemp("instance"), **env) as service:
        app = _stage(service)
        device = Poller(service.url, app["client_id"])
        assert device.codes["expires_in"] == 3
        device.start()
        device.join(30)
        assert device.token is None
        assert device.errors[0] == "authorization_pending"
        assert device.errors[-1] == "expired_token"
        with chromium() as browser:
            page = browser.new_page()
            page.goto(service.url + "/auth/login")
            page.fill("input[name=email]", "person@example.com")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            # The link only fills in the form (a GET tries no code: docs/security.md); the person sends it.
            page.goto(device.codes["verification_uri_complete"])
            assert page.input_value("input[name=user_code]") == device.codes["user_code"]
            page.click("button[type=submit]")
            assert "That code is not valid, has expired" in page.content()
