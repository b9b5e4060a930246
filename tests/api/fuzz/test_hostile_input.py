"""Hostile input, property-based: malformed, oversized, wrongly typed and wrongly encoded requests to
every route of the app get a 2xx, 3xx or 4xx answer with a JSON body (or an HTML page), never a 500.

Generated bodies sent with valid credentials to each entry point (sign-in, token, revoke,
introspect, the admin API, the console's forms) are tests/api/fuzz/test_hostile_input_bodies.py.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from authsvc import create_app
from tests.helpers import HOST, base_config, fuzz_examples

PARAMETERS = [
    "grant_type",
    "code",
    "client_id",
    "client_secret",
    "redirect_uri",
    "code_verifier",
    "scope",
    "refresh_token",
    "username",
    "password",
    "email",
    "continue",
    "response_type",
    "state",
    "code_challenge",
    "code_challenge_method",
    "token",
    "token_type_hint",
    "id",
    "provider",
    "bearer_token",
    "api-key",
    "csrf_token",
    "approve",
    "error",
    # OpenID Connect's authorisation request parameters, and the sign-in page's.
    "nonce",
    "prompt",
    "max_age",
    "login_hint",
    "id_token_hint",
    "request",
    "request_uri",
    "sign_in_asked",
]
GRANT_TYPES = ["password", "authorization_code", "refresh_token", "client_credentials", ""]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
# Text of every kind, but encodable: the test client must be able to send it.
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
ODD_TEXT = st.one_of(TEXT, st.sampled_from(["\x00", "%00", "\u202e", "../../etc/passwd", "' OR 1=1 --", "a" * 3000]))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
PARAMETER_NAMES = st.one_of(st.sampled_from(PARAMETERS), TEXT)
# Examples per route: enough for every run to probe each route; raise it for a deeper search.
EXAMPLES = fuzz_examples(8)


def _routes() -> list[tuple[str, str]]:
    app = create_app(base_config())
    return sorted(
        (rule.rule, method)
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in rule.methods - {"HEAD", "OPTIONS"}
    )


ROUTES = _routes()


@st.composite
def requests_to(draw: st.DrawFn, rule: str, method: str) -> dict:
    path = rule
    while "<" in path:
        start, end = path.index("<"), path.index(">")
        path = path[:start] + quote(draw(ODD_TEXT) or "x", safe="") + path[end + 1 :]
    request: dict = {"method": draw(st.sampled_from([method, method, method, *METHODS])), "path": path}
    headers = {"Host": draw(st.sampled_from([HOST, HOST, HOST, "unknown.example", "[::1]:99999", "a" * 300]))}
    for name, values in (
        ("Authorization", st.one_of(TEXT.map(lambda t: "Bearer " + t), TEXT.map(lambda t: "Basic " + t), TEXT)),
        ("X-API-Key", TEXT),
        ("X-Request-Id", TEXT),
        ("Cookie", st.sampled_from(["user=", "user=abc", "bearer_token=\x7f", "api-key=a.b", "user=%ff; user=2"])),
    ):
        if draw(st.booleans()):
            value = draw(values)
            # Header values are latin-1 on the wire, one line each (a client cannot send otherwise).
            value = value.encode("utf-8", "replace").decode("latin-1")
            headers[name] = value.replace("\r", "").replace("\n", "")
    request["headers"] = headers
    query_kind = draw(st.sampled_from(["none", "dict", "raw"]))
    if query_kind == "dict":
        request["query_string"] = draw(st.dictionaries(PARAMETER_NAMES, ODD_TEXT, max_size=5))
    elif query_kind == "raw":
        raw = draw(st.binary(max_size=60))
        request["environ_overrides"] = {"QUERY_STRING": raw.decode("latin-1")}
    body_kind = draw(st.sampled_from(["none", "json", "typed_json", "form", "bytes", "huge", "deep"]))
    if body_kind == "json":
        request["data"] = json.dumps(draw(JSON_VALUES))
        request["content_type"] = "application/json"
    elif body_kind == "typed_json":
        # The right field names with the wrong types, and a valid-looking grant type.
        body = draw(st.dictionaries(st.sampled_from(PARAMETERS), JSON_VALUES, max_size=5))
        body["grant_type"] = draw(st.one_of(st.sampled_from(GRANT_TYPES), JSON_VALUES))
        request["data"] = json.dumps(body)
        request["content_type"] = "application/json"
    elif body_kind == "form":
        request["data"] = draw(st.dictionaries(PARAMETER_NAMES, ODD_TEXT, max_size=5))
    elif body_kind == "bytes":
        request["data"] = draw(st.binary(max_size=200))
        request["content_type"] = draw(
            st.sampled_from(
                [
                    "application/json",
                    "application/x-www-form-urlencoded",
                    "multipart/form-data",
                    "multipart/form-data; boundary=x",
                    "text/plain; charset=utf-16",
                    "application/xml",
                ]
            )
        )
    elif body_kind == "deep":
        request["data"] = draw(st.sampled_from([b"[", b'{"a":'])) * 5000
        request["content_type"] = "application/json"
    elif body_kind == "huge":
        request["data"] = b"a=" + b"x" * (70 * 1024)
        request["content_type"] = draw(st.sampled_from(["application/json", "application/x-www-form-urlencoded"]))
    return request


@pytest.mark.parametrize("rule,method", ROUTES)
def test_every_route_answers_hostile_input_with_a_4xx_never_a_500(hostile_client, rule, method):
    @given(request=requests_to(rule, method))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers_cleanly(request):
        request = dict(request)
        path = request.pop("path")
        response = hostile_client.open(path, **request)
        body = response.get_data()
        assert response.status_code < 500, (request, body[:300])
        assert b"Traceback" not in body
        if request["method"] in ("HEAD", "OPTIONS") and not body:
            return  # Flask's own answers to HEAD and OPTIONS have no body
        if response.mimetype in ("application/json", "application/scim+json"):
            json.loads(body)
        elif rule == "/metrics" and response.status_code == 200:
            assert response.mimetype == "text/plain"
        elif rule == "/auth/branding/style.css" and response.status_code in (200, 304):
            assert response.mimetype == "text/css"  # a domain's stylesheet, the default look's when unbranded
        else:
            assert response.mimetype == "text/html", (response.status_code, response.mimetype, body[:200])

    answers_cleanly()


@pytest.mark.parametrize("path", ["/auth/signin", "/auth/oauth/token", "/auth/oauth/revoke", "/api/engine/v2/domains"])
@pytest.mark.parametrize("opening", [b"[", b'{"a":'])
def test_json_nested_too_deeply_is_a_400(hostile_client, path, opening):
    # Small enough for the body limit, deep enough to exhaust Python's recursion limit in json.loads.
    response = hostile_client.post(
        path, data=opening * 5000, content_type="application/json", headers={"Host": HOST, "X-API-Key": "a.b"}
    )
    assert response.status_code in (400, 401), response.get_data(as_text=True)[:300]
    assert response.is_json


def test_a_lone_surrogate_in_the_signin_email_is_a_400(hostile_client):
    response = hostile_client.post(
        "/auth/signin",
        data='{"email": "\\ud800@a.test", "password": "x"}',
        content_type="application/json",
        headers={"Host": HOST},
    )
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert response.get_json()["error"] == "invalid_request"


def test_a_lone_surrogate_in_the_password_grant_username_is_a_400(hostile_client):
    body = '{"grant_type": "password", "client_id": "x", "username": "\\udc00svc@a.test", "password": "p"}'
    response = hostile_client.post(
        "/auth/oauth/token", data=body, content_type="application/json", headers={"Host": HOST}
    )
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert response.get_json()["error"] == "invalid_request"


# A route of each surface with a path value no record can hold, and the format its 404 comes in.
UNSTORABLE_PATHS = [
    ("GET", "/api/engine/v2/api_keys/{}", "application/json"),
    ("DELETE", "/api/engine/v2/domains/1/webhooks/{}", "application/json"),
    ("GET", "/auth/oauth/register/{}", "application/json"),
    ("DELETE", "/auth/oauth/authorized_applications/{}", "application/json"),
    ("GET", "/auth/branding/applications/{}/logo", "application/json"),
    ("GET", "/auth/admin/domains/{}/users", "text/html"),
    ("POST", "/auth/account/sessions/{}/end", "text/html"),
    ("POST", "/auth/mfa/{}/remove", "text/html"),
    ("GET", "/scim/v2/Users/{}", "application/scim+json"),
]


@pytest.mark.parametrize("value", ["%00", "a%00b", "a%00"])
@pytest.mark.parametrize("method,path,mimetype", UNSTORABLE_PATHS)
def test_a_path_value_no_record_can_hold_is_a_404_in_the_surfaces_format(hostile_client, method, path, mimetype, value):
    """No id holds NUL (PostgreSQL refuses it in a query parameter, a 500): every route answers such a path
    value as no record's, before it authenticates, in the format its clients read. (A lone surrogate never
    reaches a view: a path's bytes that are no UTF-8 are decoded as U+FFFD.)"""
    response = hostile_client.open(path.format(value), method=method, headers={"Host": HOST})
    assert response.status_code == 404, response.get_data(as_text=True)[:300]
    assert response.mimetype == mimetype
    if mimetype == "application/json":
        assert response.get_json()["error"] == "not_found"
    elif mimetype == "text/html":
        assert "Not found" in response.get_data(as_text=True)
    else:
        assert response.get_json()["status"] == "404"


def test_a_nul_path_value_on_an_unknown_host_is_answered_not_a_500(hostile_client):
    for path in ("/auth/admin/domains/%00/users", "/api/engine/v2/api_keys/%00", "/scim/v2/Users/%00"):
        response = hostile_client.get(path, headers={"Host": "unknown.example"})
        assert response.status_code == 404, (path, response.get_data(as_text=True)[:300])
