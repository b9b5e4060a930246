"""Hostile input, property-based: malformed, oversized, wrongly typed and wrongly encoded requests to
every route of the app get a 2xx, 3xx or 4xx answer with a JSON body (or an HTML page), never a 500."""

from __future__ import annotations

import json
import os
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from authsvc import create_app
from authsvc.core.models import Domain
from tests.conftest import HOST, PASSWORD, REDIRECT_URI, HttpsClient, base_config, signin
from tests.test_pages import csrf_token

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
EXAMPLES = int(os.environ.get("AUTHSVC_HOSTILE_EXAMPLES", "40"))


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


@pytest.fixture
def hostile_client(app, world):
    domain = world.domain(HOST)
    world.application(domain)
    world.application(domain, confidential=True, name="Confidential")
    person = world.user(domain, "person@example.com")
    world.user(domain, "service@example.com", service_account=True)
    world.api_key(person)
    app.test_client_class = HttpsClient
    return app.test_client()


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
        if response.mimetype == "application/json":
            json.loads(body)
        elif rule == "/metrics" and response.status_code == 200:
            assert response.mimetype == "text/plain"
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


# Every JSON and form entry point, with valid credentials, so that generated bodies reach the
# code behind authentication: the right field names, values of every JSON type, text with lone
# surrogates (JSON's "\ud800" escape), nulls, and now and then a value that is valid.
LONE_SURROGATE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
# Lone surrogates appear in st.text() too, but rarely; half the time one is added.
ANY_TEXT = st.text(max_size=30) | st.tuples(st.text(max_size=15), LONE_SURROGATE).map("".join)
FORM_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
LEAVES = st.none() | st.booleans() | st.integers() | ANY_TEXT
ANY_JSON = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3), max_leaves=5
)
VALID = {
    "email": "person@example.com",
    "username": "service@example.com",
    "password": PASSWORD,
    "continue": "/x",
    "user": "person@example.com",
    "name": "Generated",
    "host": "generated.example.com",
    "redirect_uris": [REDIRECT_URI],
    "scopes": "public",
    "scope": "public",
    "grant_type": "password",
    "redirect_uri": REDIRECT_URI,
    "token_type_hint": "access_token",
    "permission": "user",
    "client_id": "generated-client",
    "client_secret": "s",
    "authorize_url": "https://idp.example/a",
    "token_url": "https://idp.example/t",
    "userinfo_url": "https://idp.example/u",
    "preset": "microsoft",
    "tenant": "contoso.example",
    "expires_at": 2**31 - 1,
    "access_token_ttl": 60,
    "session_ttl": 60,
}
SIGNIN = ["email", "password", "continue"]
TOKEN = [
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
]
REVOKE = ["token", "token_type_hint", "client_id", "client_secret"]
ADMIN_FIELDS = {
    "domains": ["name", "host", "scopes", "session_ttl"],
    "oauth_apps": [
        "name",
        "redirect_uris",
        "scopes",
        "confidential",
        "consent",
        "require_pkce",
        "access_token_ttl",
        "refresh_token_ttl",
        "client_id",
    ],
    "users": ["email", "password", "name", "service_account", "admin", "support", "groups", "disabled", "system_admin"],
    "api_keys": ["user", "name", "scopes", "permission", "expires_at"],
    "sso": [
        "name",
        "client_id",
        "client_secret",
        "scopes",
        "preset",
        "tenant",
        "issuer",
        "authorize_url",
        "token_url",
        "userinfo_url",
        "jwks_url",
        "authorize_params",
        "profile_mappings",
        "match_rules",
        "trust_email",
        "required_scopes",
        "token_endpoint_auth_method",
    ],
}
CONSOLE_FORMS = {
    "applications/new": ["name", "redirect_uris", "scopes", "consent", "require_pkce", "confidential"],
    "applications/{application}": ["name", "redirect_uris", "scopes", "consent", "require_pkce"],
    "users/new": ["email", "name", "password", "service_account", "admin", "support"],
    "users/{user}": ["email", "name", "service_account", "admin", "support"],
    "users/{user}/password": ["password"],
    "api_keys/new": ["user", "name", "scopes", "permission", "expires_in_days"],
    "sso/new": ["name", "client_id", "client_secret", "tenant"],
}


@st.composite
def _json_bodies(draw: st.DrawFn, names: list[str]) -> str:
    # Some fields valid, then a few replaced: one bad field among good ones gets furthest.
    body = {name: VALID.get(name, "x") for name in draw(st.sets(st.sampled_from(names)))}
    for name in draw(st.lists(st.sampled_from(names), max_size=3)):
        body[name] = draw(st.one_of(ANY_TEXT, st.none(), ANY_JSON))
    return json.dumps(body)


@st.composite
def _form_bodies(draw: st.DrawFn, names: list[str]) -> dict:
    body = {name: str(VALID.get(name, "y")) for name in draw(st.sets(st.sampled_from(names)))}
    for name in draw(st.lists(st.sampled_from(names), max_size=3)):
        body[name] = draw(FORM_TEXT)
    return body


@pytest.fixture
def entry_points(hostile_client, world, app):
    """An admin's API key, existing records to update, and a signed-in admin with the console's CSRF token."""
    [domain] = world.query(select(Domain))
    admin = world.user(domain, "admin@example.com", admin=True)
    target = world.user(domain, "target@example.com")
    application, _ = world.application(domain, name="Target")
    key = world.api_key(admin, scopes="public admin", permission="admin")
    api = {"Host": HOST, "X-API-Key": key}
    sso = hostile_client.post(
        "/api/engine/v2/sso",
        headers=api,
        json={
            "name": "IdP",
            "client_id": "c",
            "client_secret": "s",
            "authorize_url": VALID["authorize_url"],
            "token_url": VALID["token_url"],
            "userinfo_url": VALID["userinfo_url"],
        },
    )
    assert sso.status_code == 201, sso.get_data(as_text=True)
    records = {
        "domains": domain.id,
        "oauth_apps": application.id,
        "users": target.id,
        "sso": sso.get_json()["id"],
        "api_keys": key.split(".")[0],
    }
    signin(hostile_client, "admin@example.com")
    console = f"/auth/admin/domains/{domain.id}/"
    token = csrf_token(hostile_client.get(console + "applications/new", headers={"Host": HOST}))

    class EntryPoints:
        client = hostile_client
        api_headers = api
        ids = records
        console_base = console
        csrf = token
        values = {"application": application.id, "user": target.id}

    return EntryPoints


def _sweep(send, bodies) -> None:
    @given(body=bodies)
    @settings(max_examples=SWEEP_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers_cleanly(body):
        response = send(body)
        text = response.get_data()
        assert response.status_code < 500, (body, text[:300])
        assert b"Traceback" not in text

    answers_cleanly()


SWEEP_EXAMPLES = int(os.environ.get("AUTHSVC_HOSTILE_EXAMPLES", "80"))
OAUTH_ENTRY_POINTS = [
    ("/auth/signin", SIGNIN),
    ("/auth/oauth/token", TOKEN),
    ("/auth/oauth/revoke", REVOKE),
    ("/auth/oauth/introspect", REVOKE),
]


@pytest.mark.parametrize("path,names", OAUTH_ENTRY_POINTS)
@pytest.mark.parametrize("kind", ["json", "form"])
def test_unauthenticated_entry_points_answer_generated_bodies_without_a_500(entry_points, path, names, kind):
    def send(body):
        if kind == "json":
            return entry_points.client.post(path, data=body, content_type="application/json", headers={"Host": HOST})
        return entry_points.client.post(path, data=body, headers={"Host": HOST})

    _sweep(send, _json_bodies(names) if kind == "json" else _form_bodies(names))


@pytest.mark.parametrize("resource", sorted(ADMIN_FIELDS))
@pytest.mark.parametrize("method", ["post", "patch"])
def test_admin_api_answers_generated_bodies_without_a_500(entry_points, resource, method):
    path = f"/api/engine/v2/{resource}" + (f"/{entry_points.ids[resource]}" if method == "patch" else "")

    def send(body):
        return entry_points.client.open(
            path, method=method.upper(), data=body, content_type="application/json", headers=entry_points.api_headers
        )

    _sweep(send, _json_bodies(ADMIN_FIELDS[resource]))


@pytest.mark.parametrize("form", sorted(CONSOLE_FORMS))
def test_console_forms_answer_generated_bodies_without_a_500(entry_points, form):
    path = entry_points.console_base + form.format(**entry_points.values)

    def send(body):
        return entry_points.client.post(path, data={"csrf_token": entry_points.csrf, **body}, headers={"Host": HOST})

    _sweep(send, _form_bodies(CONSOLE_FORMS[form]))
