"""What the transmitter refuses, always in RFC 8935 2.4's {"err", "description"}: a token meant for another
resource, bytes no route can take, a method a route has not, a push Authorization header that is not visible
ASCII; and two receivers' requests racing for one stream or one subject."""

from __future__ import annotations

import threading

import pytest
import requests
from sqlalchemy import select

from authsvc.ssf.models import SsfSubject
from tests.helpers import BACKEND, headers
from tests.helpers.ssf import POLL, PUSH, assert_ssf_error, bearer

STREAMS = "/ssf/streams"
MCP = "https://other.example/mcp"


def create(client, token: str, body: dict):
    return client.post(STREAMS, json=body, headers=bearer(token))


def test_a_token_issued_for_another_resource_is_401(client, setup, world):
    """A token whose audience (RFC 8707 resource) is another server, an MCP server's say, is not the
    transmitter's, as at the service's API."""
    application, secret = world.application(
        setup.domain,
        confidential=True,
        service_account_id=setup.service.id,
        redirect_uris=[],
        scopes="ssf",
        resources=[MCP],
    )

    def token(resource: str) -> str:
        data = {"grant_type": "client_credentials", "scope": "ssf", "resource": resource}
        answer = client.post("/auth/oauth/token", data=data, headers=headers(), auth=(application.client_id, secret))
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()["access_token"]

    for_mcp = token(MCP)
    assert_ssf_error(client.post(STREAMS, json={"delivery": {"method": POLL}}, headers=bearer(for_mcp)), 401)
    assert_ssf_error(client.get(STREAMS, headers=bearer(for_mcp)), 401, "authentication_failed")


def test_a_push_authorization_header_must_be_visible_ascii(client, setup, receiving):
    """The header a push carries is sent as given: visible ASCII with spaces inside, nothing else (no control
    character, no leading space, no byte beyond ASCII)."""
    for header in ["Bearer \u65e5\u672c", " lead", "a\x0bb", "a\x85b", "a\tb", "a\x7fb", "a\r\nb: c"]:
        delivery = {"method": PUSH, "endpoint_url": "https://example.com/ssf", "authorization_header": header}
        body = assert_ssf_error(create(client, receiving.token, {"delivery": delivery}), 400, "invalid_request")
        assert "authorization_header" in body["description"]
    delivery = {"method": PUSH, "endpoint_url": "https://example.com/ssf", "authorization_header": "Bearer a~b c!"}
    assert create(client, receiving.token, {"delivery": delivery}).status_code == 201


@pytest.mark.skipif(BACKEND != "postgresql", reason="SQLite takes one writer at a time: the requests never race there")
def test_racing_requests_for_one_stream_make_one_and_the_others_are_409(served, receiving):
    """Requests of one receiver creating its stream at once: one is made, every other is 409 conflict (the
    second stream's refusal), never a 500."""
    answers = racing(served, receiving, "/ssf/streams", lambda: {"delivery": {"method": POLL}})
    assert sorted(status for status, _ in answers) == [201] + [409] * (RACERS - 1), answers
    for status, body in answers:
        if status == 409:
            assert body == {"err": "conflict", "description": body["description"]}


@pytest.mark.skipif(BACKEND != "postgresql", reason="SQLite takes one writer at a time: the requests never race there")
def test_racing_requests_adding_one_subject_all_succeed(client, served, receiving, setup, world):
    """Adding a subject is idempotent: requests adding one person at once all succeed, and one row says so."""
    sid = create(client, receiving.token, {"delivery": {"method": POLL}}).get_json()["stream_id"]
    user = setup.person
    body = {"stream_id": sid, "subject": {"format": "opaque", "id": str(user.id)}}
    answers = racing(served, receiving, "/ssf/subjects/add", lambda: body)
    assert [status for status, _ in answers] == [200] * RACERS, answers
    rows = world.query(select(SsfSubject).where(SsfSubject.stream_id == sid))
    assert [(row.user_id, row.included) for row in rows] == [(user.id, True)]


RACERS = 6


def racing(served, receiving, path: str, body) -> list[tuple[int, dict | None]]:
    """``RACERS`` POSTs of ``body`` to ``path`` over sockets, released at once; their statuses and bodies."""
    answers: list[tuple[int, dict | None]] = []
    start = threading.Barrier(RACERS)

    def post() -> None:
        start.wait()
        answer = requests.post(
            served.base + path,
            json=body(),
            headers={"Host": served.host, "Authorization": f"Bearer {receiving.token}"},
            timeout=20,
        )
        answers.append((answer.status_code, answer.json() if answer.content else None))

    threads = [threading.Thread(target=post) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_what_the_app_refuses_on_a_transmitters_route_is_in_its_format(client, setup, receiving):
    """A path value no record can hold (NUL), a method the route has not and a query string with a raw byte are
    refused before any view runs, by the app: on the transmitter's routes, in its own format all the same."""
    auth = bearer(receiving.token)
    assert_ssf_error(client.post("/ssf/poll/%00", json={}, headers=auth), 404, "not_found")
    wrong_method = client.put("/ssf/verify", headers=auth)
    assert_ssf_error(wrong_method, 405)
    assert wrong_method.headers["Allow"].split(", ").count("POST") == 1
    assert_ssf_error(client.get("/ssf/streams?stream_id=\xff", headers=auth), 400, "invalid_request")
    # Elsewhere the app's own format stands.
    elsewhere = client.put("/auth/oauth/token", headers=headers())
    assert elsewhere.status_code == 405 and set(elsewhere.get_json()) == {"error", "error_description"}
