"""The failover drill's load (tests/e2e/test_failover_drill.py): sign-in + code flow across two service instances,
inspect (a revoked token's too) and the password grant, every answer recorded with its time, status and Retry-After;
and the wait for full service after a promotion."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import requests

PASSWORD = "drill password"
REDIRECT = "http://127.0.0.1:9/callback"


@dataclass
class Load:
    """Requests made by the load threads: (when, instance, what, status, seconds, Retry-After)."""

    urls: list[str]
    client_id: str
    service_id: str
    revoked: list[str]
    seen: list[tuple[float, int, str, int, float, str | None]] = field(default_factory=list)
    spent_codes: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def call(self, instance: int, what: str, method: str, path: str, **kwargs) -> requests.Response | None:
        started = time.monotonic()
        try:
            response = requests.request(method, self.urls[instance] + path, timeout=15, allow_redirects=False, **kwargs)
        except requests.RequestException as exc:
            with self.lock:
                self.seen.append((started, instance, what, 0, time.monotonic() - started, repr(exc)))
            return None
        with self.lock:
            self.seen.append(
                (
                    started,
                    instance,
                    what,
                    response.status_code,
                    time.monotonic() - started,
                    response.headers.get("Retry-After"),
                )
            )
        return response

    def code_flow(self, instance: int) -> bool:
        """Sign in, authorise, exchange: True when all three succeeded."""
        signed = self.call(
            instance, "signin", "POST", "/auth/signin", params={"email": "person@example.com", "password": PASSWORD}
        )
        if signed is None or signed.status_code != 202:
            return False
        query = {"response_type": "code", "scope": "public", "client_id": self.client_id, "redirect_uri": REDIRECT}
        cookie = {"Cookie": f"user={signed.cookies.get('user')}"}
        # The other instance goes on with the sign-in: they share the store.
        other = 1 - instance
        authorised = self.call(other, "authorize", "GET", "/auth/oauth/authorize", params=query, headers=cookie)
        if authorised is None or authorised.status_code != 302:
            return False
        code = parse_qs(urlsplit(authorised.headers["Location"]).query)["code"][0]
        exchange = {"grant_type": "authorization_code", "code": code, "client_id": self.client_id}
        token = self.call(instance, "token", "POST", "/auth/oauth/token", params={**exchange, "redirect_uri": REDIRECT})
        if token is None or token.status_code != 200:
            return False
        with self.lock:
            self.spent_codes.append(code)
        inspected = self.call(
            other,
            "inspect",
            "GET",
            "/api/engine/v2/api_keys/inspect",
            headers={"Authorization": f"Bearer {token.json()['access_token']}"},
        )
        if not self.revoked:
            return bool(inspected and inspected.status_code == 200)
        revoked = self.call(
            instance,
            "inspect-revoked",
            "GET",
            "/api/engine/v2/api_keys/inspect",
            headers={"Authorization": f"Bearer {secrets.choice(self.revoked)}"},
        )
        # (A requests Response is falsy when it is an error: compare with None.)
        return (
            inspected is not None
            and inspected.status_code == 200
            and revoked is not None
            and revoked.status_code == 401
        )

    def password_grant(self, instance: int) -> None:
        data = {"grant_type": "password", "username": "robot@example.com", "password": PASSWORD}
        self.call(instance, "password", "POST", "/auth/oauth/token", json={**data, "client_id": self.service_id})

    def run(self, instance: int) -> None:
        while not self.stop.is_set():
            self.code_flow(instance)
            self.password_grant(instance)
            self.stop.wait(0.05)  # bounded: a steady trickle, not a benchmark


def healthy_again(load: Load, since: float, timeout: float) -> float:
    """Seconds from ``since`` until a full code flow succeeds on both instances (this thread's own)."""
    deadline = since + timeout
    tried = []
    while time.monotonic() < deadline:
        mark = len(load.seen)
        if load.code_flow(0) and load.code_flow(1):
            return time.monotonic() - since
        tried = [entry for entry in load.seen[mark:] if entry[3] not in (200, 202, 302)][-3:] or tried
        time.sleep(0.2)
    raise AssertionError(f"the service did not recover within {timeout:.0f} s of the promotion: {tried}")
