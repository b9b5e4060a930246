"""Hostile input at each entry point, property-based: generated JSON and form bodies sent to sign-in,
token, revoke, introspect, every admin API resource and every console form, with valid credentials,
get an answer below 500 and no stack trace.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from authsvc.core.models import Domain
from tests.helpers import HOST, PASSWORD, REDIRECT_URI, signin
from tests.helpers.hostile_bodies import ANY_JSON, ANY_TEXT, LONE_SURROGATE, ODD_LEAVES, SWEEP_EXAMPLES
from tests.helpers.pages import csrf_token

FORM_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
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
    "resource": ["https://api.example.com/"],
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
    "resource",
]
REVOKE = ["token", "token_type_hint", "client_id", "client_secret", "resource"]
DEVICE_AUTHORIZATION = ["client_id", "client_secret", "scope", "resource"]
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
        "introspect",
        "service_account",
        "backchannel_logout_uri",
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
    "registration_tokens/new": ["name", "expires_in_hours", "max_uses"],
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


OAUTH_ENTRY_POINTS = [
    ("/auth/signin", SIGNIN),
    ("/auth/oauth/token", TOKEN),
    ("/auth/oauth/revoke", REVOKE),
    ("/auth/oauth/introspect", REVOKE),
    ("/auth/oauth/device_authorization", DEVICE_AUTHORIZATION),
]


@pytest.mark.parametrize("path,names", OAUTH_ENTRY_POINTS)
@pytest.mark.parametrize("kind", ["json", "form"])
def test_unauthenticated_entry_points_answer_generated_bodies_without_a_500(entry_points, path, names, kind):
    def send(body):
        if kind == "json":
            return entry_points.client.post(path, data=body, content_type="application/json", headers={"Host": HOST})
        return entry_points.client.post(path, data=body, headers={"Host": HOST})

    _sweep(send, _json_bodies(names) if kind == "json" else _form_bodies(names))


@pytest.mark.parametrize("path,names", OAUTH_ENTRY_POINTS[1:])
def test_an_empty_resource_list_is_invalid_request(hostile_client, path, names):
    """RFC 8707 2: a JSON body names resources as a list of strings; an empty one names none and is refused."""
    body = {name: VALID.get(name, "x") for name in names} | {"resource": []}
    response = hostile_client.post(path, json=body, headers={"Host": HOST})
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"] == "invalid_request"
    assert "resource" in response.get_json()["error_description"]


# Each odd value alone, in each parameter: a generated body rarely puts one where a reader trips on it.
ODD_VALUES = ODD_LEAVES | LONE_SURROGATE | st.lists(ODD_LEAVES | LONE_SURROGATE, max_size=2)


@pytest.mark.parametrize("path,names", OAUTH_ENTRY_POINTS)
def test_odd_json_values_in_any_parameter_are_a_4xx(hostile_client, path, names):
    @given(name=st.sampled_from(names), value=ODD_VALUES)
    @settings(max_examples=SWEEP_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def refused(name, value):
        body = json.dumps({name: value} | ({} if name == "client_id" else {"client_id": "generated-client"}))
        response = hostile_client.post(path, data=body, content_type="application/json", headers={"Host": HOST})
        assert 400 <= response.status_code < 500, (name, value, response.get_data(as_text=True)[:300])
        assert "error" in response.get_json()

    refused()


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
