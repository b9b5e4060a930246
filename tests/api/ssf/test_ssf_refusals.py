"""What the transmitter refuses, always in RFC 8935 2.4's {"err", "description"}: a token meant for another
resource, bytes no route can take, a method a route has not, a push Authorization header that is not visible
ASCII; and two receivers' requests racing for one stream or one subject."""

from __future__ import annotations

from tests.helpers import headers
from tests.helpers.ssf import POLL, PUSH, bearer

STREAMS = "/ssf/streams"
MCP = "https://other.example/mcp"


def create(client, token: str, body: dict):
    return client.post(STREAMS, json=body, headers=bearer(token))


def assert_ssf_error(response, status: int, err: str | None = None) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"err", "description"} and body["description"]
    if err is not None:
        assert body["err"] == err
    return body


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
