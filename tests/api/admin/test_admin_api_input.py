"""The admin API given odd input: malformed bodies, unknown and odd ids, numbers past SQL's INTEGER,
nulls for required fields. Each is a 4xx with a clear error, never a 500."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import Application
from tests.helpers import HOST, OTHER_HOST, REDIRECT_URI, headers
from tests.helpers.admin_api import API, call


@pytest.mark.parametrize("payload", [b"{nope", b"[1,2]", b"null"])
def test_malformed_bodies_are_4xx(client, setup, keys, payload):
    response = client.post(
        f"{API}/oauth_apps",
        data=payload,
        content_type="application/json",
        headers=headers(**{"X-API-Key": keys.admin_key}),
    )
    assert response.status_code in (400, 422)


def test_unknown_ids_are_404(client, setup, keys):
    for path in ("/oauth_apps/999999", "/users/abc", "/api_keys/nope", "/sso/" + "x" * 40, "/domains/0"):
        assert call(client, "get", path, keys.admin_key).status_code == 404


@pytest.mark.parametrize("record_id", ["²", "١٢", "0x1", "-1"])
def test_odd_ids_are_404_not_500(client, setup, keys, record_id):
    assert call(client, "get", f"/users/{record_id}", keys.admin_key).status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/users/2147483648",
        "/oauth_apps/99999999999",
        "/domains/999999999999999999",
        "/users/2147483648/revoke",
        "/oauth_apps/9999999999/regenerate",
    ],
)
def test_ids_past_sql_integer_are_404_not_500(client, setup, keys, path):
    """PostgreSQL refuses a number past INTEGER (a 500) rather than finding nothing."""
    method = "post" if path.endswith(("/revoke", "/regenerate")) else "get"
    response = call(client, method, path, keys.admin_key)
    assert response.status_code == 404
    assert response.get_json()["error"] == "not_found"


@pytest.mark.parametrize("path", ["/api_keys/%00", "/sso/a%00b", "/api_keys/k%C3%A9y"])
def test_key_and_provider_ids_other_than_ascii_letters_and_digits_are_404_not_500(client, setup, keys, path):
    """NUL reached PostgreSQL, which refuses it in a string (a 500)."""
    for method in ("get", "delete"):
        assert call(client, method, path, keys.admin_key).status_code == 404


@pytest.mark.parametrize(
    "query",
    [
        "/oauth_apps?domain=²",
        "/audit?domain=²",
        "/users?domain=2147483648",
        "/audit?domain=99999999999",
        "/api_keys?page=²",
        "/sso?per_page=١",
        "/audit?since=²",
        "/audit?until=99999999999",
    ],
)
def test_odd_domain_filters_and_numbers_in_the_query_are_400_not_500(client, setup, keys, query):
    response = call(client, "get", query, keys.system_key, host=OTHER_HOST)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_request"


@pytest.mark.parametrize("domain", ["²", "١", "2147483648", "99999999999999999999"])
def test_a_body_naming_an_odd_domain_id_is_a_field_error_not_500(client, setup, keys, domain):
    response = call(
        client, "post", "/oauth_apps", keys.admin_key, {"name": "x", "redirect_uris": [REDIRECT_URI], "domain": domain}
    )
    assert response.status_code == 422
    assert response.get_json()["fields"] == {"domain": "no such domain"}


@pytest.mark.parametrize("user", ["²", "2147483648", "99999999999999999999"])
def test_an_api_key_for_an_odd_user_id_is_a_field_error_not_500(client, setup, keys, user):
    response = call(client, "post", "/api_keys", keys.admin_key, {"user": user, "name": "k"})
    assert response.status_code == 422
    assert response.get_json()["fields"] == {"user": "no such user in the domain"}


def test_an_api_key_expiry_past_sql_integer_is_a_field_error_not_500(client, setup, keys):
    body = {"user": "person@example.com", "name": "k"}
    for expires_at in (2**31, 2**40):
        created = call(client, "post", "/api_keys", keys.admin_key, body | {"expires_at": expires_at})
        assert created.status_code == 422 and "expires_at" in created.get_json()["fields"]
    key = call(client, "post", "/api_keys", keys.admin_key, body | {"expires_at": 2**31 - 1}).get_json()
    assert key["expires_at"] == 2**31 - 1
    for expires_at in (2**31, -1):
        changed = call(client, "patch", f"/api_keys/{key['id']}", keys.admin_key, {"expires_at": expires_at})
        assert changed.status_code == 422 and "expires_at" in changed.get_json()["fields"]
    assert call(client, "patch", f"/api_keys/{key['id']}", keys.admin_key, {"expires_at": None}).status_code == 200


def test_null_for_a_required_field_is_a_missing_field_not_500(client, setup, keys, world):
    for path, body in (
        ("/oauth_apps", {"name": None, "redirect_uris": ["https://rooms.example.com/cb"]}),
        ("/domains", {"name": None, "host": "new.example.com"}),
        ("/users", {"email": None, "password": "long enough password"}),
        ("/api_keys", {"user": "person@example.com", "name": None}),
    ):
        key, host = (keys.system_key, OTHER_HOST) if path == "/domains" else (keys.admin_key, HOST)
        response = call(client, "post", path, key, body, host=host)
        assert response.status_code == 422, (path, response.get_data(as_text=True)[:300])
        assert response.get_json()["fields"] == {next(k for k, v in body.items() if v is None): "is required"}


def test_null_redirect_uris_creates_no_application(client, setup, keys, world):
    before = world.query(select(Application.id))
    response = call(client, "post", "/oauth_apps", keys.admin_key, {"name": "No URI", "redirect_uris": None})
    assert response.status_code == 422
    assert response.get_json()["fields"] == {"redirect_uris": "is required"}
    assert world.query(select(Application.id)) == before


def test_choices_are_trimmed_like_every_other_string(client, setup, keys, world):
    path = f"/oauth_apps/{setup.public_app.id}"
    changed = call(client, "patch", path, keys.admin_key, {"id_token_signed_response_alg": " ES256 "})
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["id_token_signed_response_alg"] == "ES256"
    refused = call(client, "patch", path, keys.admin_key, {"id_token_signed_response_alg": "HS256"})
    assert refused.status_code == 422
    assert refused.get_json()["fields"] == {"id_token_signed_response_alg": "must be one of RS256, ES256"}


@pytest.mark.parametrize("url", ["ldaps://" + "a" * 64 + ".example.com:636", "ldap://bad_host.example.com"])
def test_a_directory_host_the_resolver_cannot_take_is_refused_when_saved(client, setup, keys, url):
    body = {"name": "Corp", "url": url, "bind_dn": "cn=s,dc=x", "bind_password": "p", "base_dn": "dc=x"}
    response = call(client, "post", "/ldap", keys.admin_key, body)
    assert response.status_code == 422
    assert "is not a host name" in response.get_json()["fields"]["url"]


def test_every_admin_refusal_is_answered_uncached_by_the_one_error_table(client, setup, keys):
    """The admin rules' refusals (a field error, no such record, a conflict) are answered like every other
    error: JSON that no browser or proxy keeps (RFC 9111 5.2.2.5), the field error with its fields."""
    invalid = call(client, "post", "/api_keys", keys.admin_key, {"user": "2147483648", "name": "k"})
    missing = call(client, "get", "/oauth_apps/999999", keys.admin_key)
    for response, status in ((invalid, 422), (missing, 404)):
        assert response.status_code == status
        assert response.headers["Cache-Control"] == "no-store"
    assert invalid.get_json() == {
        "error": "invalid_input",
        "error_description": "Some fields are not valid.",
        "fields": {"user": "no such user in the domain"},
    }
