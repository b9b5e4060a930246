"""Many clients at once through full flows against a multi-worker gunicorn on PostgreSQL and Redis:
every flow succeeds, no code or refresh token is honoured twice, and no token is lost."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from sqlalchemy import func, select

from authsvc.core.database import db
from authsvc.core.models import Token, User
from tests.helpers import PASSWORD, World
from tests.helpers.servers import running_service

pytestmark = [pytest.mark.slow, pytest.mark.postgresql]

FLOWS = 16
RACERS = 8
REDIRECT_URI = "http://127.0.0.1:9/callback"


class Flows:
    def __init__(self, url: str, client_id: str):
        self.url = url
        self.client_id = client_id

    def signin(self, email: str) -> str:
        response = requests.post(self.url + "/auth/signin", json={"email": email, "password": PASSWORD}, timeout=30)
        assert response.status_code == 202, response.text
        return response.cookies["user"]

    def code(self, cookie: str) -> str:
        response = requests.get(
            self.url + "/auth/oauth/authorize",
            params={"response_type": "code", "client_id": self.client_id, "redirect_uri": REDIRECT_URI},
            cookies={"user": cookie},
            allow_redirects=False,
            timeout=30,
        )
        assert response.status_code == 302, response.text
        return parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]

    def exchange(self, code: str) -> requests.Response:
        return requests.post(
            self.url + "/auth/oauth/token",
            params={
                "grant_type": "authorization_code",
                "code": code,
                "client_id": self.client_id,
                "redirect_uri": REDIRECT_URI,
            },
            timeout=30,
        )

    def refresh(self, refresh_token: str) -> requests.Response:
        return requests.post(
            self.url + "/auth/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": self.client_id},
            timeout=30,
        )

    def inspect(self, access_token: str) -> requests.Response:
        return requests.get(
            self.url + "/api/engine/v2/api_keys/inspect",
            headers={"Authorization": f"Bearer {access_token}"},
            timeout=30,
        )


def test_many_clients_at_once_through_full_flows(make_app, tmp_path):
    rates = (
        "AUTHSVC_SIGNIN_RATE_LIMIT",
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT",
        "AUTHSVC_TOKEN_RATE_LIMIT",
        "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT",
    )
    settings = {name: "100000/minute" for name in rates}
    with running_service(tmp_path, WEB_CONCURRENCY="2", **settings) as service:
        world = World(make_app())
        domain = world.domain("127.0.0.1")
        application, _ = world.application(domain, redirect_uris=[REDIRECT_URI])
        emails = [f"user{i}@example.com" for i in range(FLOWS)]
        for email in [*emails, "racer@example.com"]:
            world.user(domain, email)
        flows = Flows(service.url, application.client_id)

        # Prepared before the start: one code and one refresh token that many will race for.
        raced_code = flows.code(flows.signin("racer@example.com"))
        seed = flows.exchange(flows.code(flows.signin("racer@example.com")))
        assert seed.status_code == 200
        raced_refresh = seed.json()["refresh_token"]
        start = threading.Barrier(FLOWS + 2 * RACERS)

        def full_flow(email: str) -> dict:
            start.wait()
            cookie = flows.signin(email)
            first = flows.exchange(flows.code(cookie))
            assert first.status_code == 200, first.text
            second = flows.refresh(first.json()["refresh_token"])
            assert second.status_code == 200, second.text
            claims = flows.inspect(second.json()["access_token"])
            assert claims.status_code == 200 and claims.json()["u"]["e"] == email
            return {"email": email, "tokens": [first.json(), second.json()]}

        def race(call, value):
            start.wait()
            return call(value)

        with ThreadPoolExecutor(max_workers=FLOWS + 2 * RACERS) as pool:
            flow_results = [pool.submit(full_flow, email) for email in emails]
            code_results = [pool.submit(race, flows.exchange, raced_code) for _ in range(RACERS)]
            refresh_results = [pool.submit(race, flows.refresh, raced_refresh) for _ in range(RACERS)]
            done = [f.result(timeout=120) for f in flow_results]
            code_answers = [f.result(timeout=120) for f in code_results]
            refresh_answers = [f.result(timeout=120) for f in refresh_results]

        # Every legitimate flow succeeded, and each of its tokens still works.
        assert sorted(result["email"] for result in done) == sorted(emails)
        issued = [token for result in done for token in result["tokens"]]
        for token in issued:
            assert flows.inspect(token["access_token"]).status_code == 200
        # The raced code and refresh token were each honoured exactly once.
        assert sorted(a.status_code for a in code_answers) == [200] + [400] * (RACERS - 1)
        assert sorted(a.status_code for a in refresh_answers) == [200] + [400] * (RACERS - 1)
        assert {a.json()["error"] for a in code_answers + refresh_answers if a.status_code == 400} == {"invalid_grant"}
        rotated = next(a.json() for a in refresh_answers if a.status_code == 200)
        # Within the grace window a lost race is a refusal, not theft: the winner's token works.
        assert flows.inspect(rotated["access_token"]).status_code == 200
        # No token lost, none extra: one row per token answer.
        answered = len(issued) + 1 + 1 + 1  # flows, the seed, the raced code's winner, the raced refresh's winner
        with world.app.app_context():
            assert db.session.scalar(select(func.count()).select_from(Token)) == answered
            by_user = dict(
                db.session.execute(
                    select(User.email, func.count(Token.id)).join(Token, Token.user_id == User.id).group_by(User.email)
                ).all()
            )
        assert all(by_user[email] == 2 for email in emails)
        assert by_user["racer@example.com"] == 3


REPLAY_TRIALS = 25


def test_a_code_redeemed_twice_at_once_leaves_no_live_token(make_app, tmp_path):
    rates = (
        "AUTHSVC_SIGNIN_RATE_LIMIT",
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT",
        "AUTHSVC_TOKEN_RATE_LIMIT",
        "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT",
    )
    with running_service(tmp_path, WEB_CONCURRENCY="2", **{name: "100000/minute" for name in rates}) as service:
        world = World(make_app())
        domain = world.domain("127.0.0.1")
        application, _ = world.application(domain, redirect_uris=[REDIRECT_URI])
        world.user(domain, "racer@example.com")
        flows = Flows(service.url, application.client_id)
        cookie = flows.signin("racer@example.com")
        survivors = []
        with ThreadPoolExecutor(max_workers=2) as pool:
            for trial in range(REPLAY_TRIALS):
                code = flows.code(cookie)
                start = threading.Barrier(2)

                def redeem(code=code, start=start):
                    start.wait()
                    return flows.exchange(code)

                answers = [f.result(timeout=60) for f in [pool.submit(redeem), pool.submit(redeem)]]
                assert sorted(a.status_code for a in answers)[1] == 400, [a.text for a in answers]
                granted = [a.json()["access_token"] for a in answers if a.status_code == 200]
                live = world.query(
                    select(Token.id).where(Token.application_id == application.id, Token.revoked_at.is_(None))
                )
                if live or any(flows.inspect(token).status_code == 200 for token in granted):
                    survivors.append(trial)
        assert survivors == [], f"{len(survivors)} of {REPLAY_TRIALS} raced redemptions left a live token"
