"""The real service under gunicorn as tests/e2e/test_gunicorn_e2e.py drives it: the world it is given (a domain on
127.0.0.1, an application, a service account and a person with a password, a person's API key) and what a client
does against it (sign in, a password grant, a token inspected each way a request may carry it). ``add_user`` seeds
the browser tests' people too (tests/e2e/test_browser.py, test_device_browser.py)."""

from __future__ import annotations

import requests

PASSWORD = "service account password"


def seed(service) -> None:
    """The domain, the application (``service.app``), the two users and the API key (``service.key``), by the CLI."""
    service.cli("domains", "create", "--name", "E2E", "--host", "127.0.0.1")
    service.app = service.cli(
        "apps",
        "create",
        "--domain",
        "127.0.0.1",
        "--name",
        "E2E app",
        "--redirect-uri",
        "http://127.0.0.1:9/callback",
        "--scopes",
        "public mqtt.read",
        "--no-require-pkce",
    )
    add_user(service, "robot@example.com", "Robot", service_account=True)
    add_user(service, "person@example.com", "Person")
    service.key = service.cli(
        "api-keys", "create", "--domain", "127.0.0.1", "--user", "person@example.com", "--name", "e2e"
    )


def add_user(service, email: str, name: str, *, service_account: bool = False) -> None:
    """A user of the domain on 127.0.0.1 with the password ``PASSWORD``, by the CLI."""
    options = ["--service-account"] if service_account else []
    service.cli(
        "users", "create", "--domain", "127.0.0.1", "--email", email, "--password", PASSWORD, *options, "--name", name
    )


def inspect_each_way(service, access_token: str) -> list[dict]:
    url = service.url + "/api/engine/v2/api_keys/inspect"
    answers = [
        requests.get(url, headers={"Authorization": f"Bearer {access_token}"}, timeout=10),
        requests.get(url, params={"bearer_token": access_token}, timeout=10),
        requests.get(url, cookies={"bearer_token": access_token}, timeout=10),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200]
    return [a.json() for a in answers]


def signin(service, email="person@example.com") -> str:
    response = requests.post(service.url + "/auth/signin", params={"email": email, "password": PASSWORD}, timeout=10)
    assert response.status_code == 202
    return response.cookies["user"]


def password_token(service) -> dict:
    response = requests.post(
        service.url + "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "robot@example.com",
            "password": PASSWORD,
            "client_id": service.app["client_id"],
        },
        timeout=10,
    )
    assert response.status_code == 200
    return response.json()
