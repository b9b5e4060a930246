"""Bad input to SCIM is a SCIM error below 500, never a fault: numbers beyond the database's integers,
NUL and lone surrogates in any string, addresses too long to index (docs/scim.md, "Errors").

Each test walks its whole class of inputs in one app: the cases are cheap, an app is not.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from tests.helpers.scim import GROUP_SCHEMA, MEDIA_TYPE, PATCH_SCHEMA, USER_SCHEMA, assert_scim_error

# Past INTEGER, past BIGINT, past anything; digits int() reads ("١" is 1) or refuses ("²").
HUGE = ["2147483648", "9223372036854775808", "99999999999999999999999999", "²", "١"]
# Text no UTF-8 database column or JSON document can hold: NUL, and lone surrogates (JSON's "\ud800").
UNSTORABLE = ["a\u0000b", "\ud800", "x\udfffy"]


def _raw(body: dict) -> str:
    # json.dumps writes NUL and lone surrogates as \u escapes, as a client's encoder would.
    return json.dumps(body)


@pytest.mark.parametrize("resource", ["Users", "Groups"])
def test_an_id_with_slashes_or_newlines_is_a_scim_404_not_a_redirect(scim, resource):
    # Percent-encoded in the path as a client sends them: a slash then a newline once routed past SCIM's
    # catch-all (a JSON 404 of the service's), and a doubled slash was redirected to its merged form (an HTML 308).
    for raw in ["/\n", "a/\n", "/", "a//b", "//"]:
        for method in ("GET", "DELETE"):
            response = scim.send(method, f"/{resource}/{quote(raw, safe='')}")
            assert_scim_error(response, 404)
            assert "Location" not in response.headers


@pytest.mark.parametrize("resource", ["Users", "Groups"])
def test_an_id_beyond_the_databases_integers_is_no_resource(scim, resource):
    schema = USER_SCHEMA if resource == "Users" else GROUP_SCHEMA
    replacement = {"schemas": [schema], "userName": "a@example.com", "displayName": "A"}
    patch = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "path": "displayName", "value": "B"}]}
    for number in HUGE:
        for method, body in (("GET", None), ("PUT", replacement), ("PATCH", patch), ("DELETE", None)):
            assert_scim_error(scim.send(method, f"/{resource}/{number}", body), 404)


def test_a_start_index_or_count_beyond_the_databases_integers_is_an_empty_page(scim):
    scim.create_user("ada@example.com")
    scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Staff"})
    for resource in ("Users", "Groups"):
        for number in HUGE[:3]:
            listing = scim.get(f"/{resource}", query_string={"startIndex": number})
            assert listing.status_code == 200, listing.get_json()
            assert listing.get_json().get("Resources", []) == []
            assert len(scim.get(f"/{resource}", query_string={"count": number}).get_json()["Resources"]) >= 1
            search = scim.post(f"/{resource}/.search", {"startIndex": int(number)})
            assert search.status_code == 200, search.get_json()


def test_a_filter_value_beyond_the_databases_integers_matches_nothing(scim):
    user = scim.create_user("ada@example.com")
    scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Staff", "members": [{"value": user["id"]}]})
    queries = [
        ("Users", 'id eq "{n}"'),
        ("Users", 'id ne "{n}"'),
        ("Groups", 'id eq "{n}"'),
        ("Groups", 'members.value eq "{n}"'),
        ("Groups", 'members eq "{n}"'),
    ]
    for resource, template in queries:
        everyone = scim.get(f"/{resource}").get_json()["totalResults"]
        for number in HUGE:
            listing = scim.get(f"/{resource}", query_string={"filter": template.format(n=number)})
            assert listing.status_code == 200, (template, number, listing.get_json())
            assert listing.get_json()["totalResults"] == (0 if " eq " in template else everyone)
    # Unquoted, a number is no value of a string attribute: the filter is refused as scim2-models reads it.
    for resource, template in (("Users", "id eq {n}"), ("Groups", "members eq {n}")):
        assert_scim_error(scim.get(f"/{resource}", query_string={"filter": template.format(n=HUGE[2])}), 400)


def test_a_group_member_beyond_the_databases_integers_is_invalid(scim):
    group = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Staff"}).get_json()
    for number in HUGE:
        body = {"schemas": [GROUP_SCHEMA], "displayName": "Others", "members": [{"value": number}]}
        assert_scim_error(scim.post("/Groups", body), 400, "invalidValue")
        added = scim.patch(f"/Groups/{group['id']}", [{"op": "add", "path": "members", "value": [{"value": number}]}])
        assert_scim_error(added, 400, "invalidValue")


USER_FIELDS = {
    "userName": {"userName": "{}"},
    "displayName": {"displayName": "{}"},
    "externalId": {"externalId": "{}"},
    "title": {"title": "{}"},
    "name.givenName": {"name": {"givenName": "{}"}},
    "emails.value": {"emails": [{"value": "{}"}]},
    "phoneNumbers.value": {"phoneNumbers": [{"value": "{}"}]},
}


def _filled(template: dict, text: str) -> dict:
    return json.loads(json.dumps(template).replace('"{}"', json.dumps(text)))


@pytest.mark.parametrize("text", UNSTORABLE)
def test_unstorable_text_in_any_user_field_is_a_400(scim, world, text):
    user = scim.create_user("ada@example.com")
    for path, template in USER_FIELDS.items():
        created = {"schemas": [USER_SCHEMA], "userName": "bob@example.com", **_filled(template, text)}
        assert_scim_error(scim.post("/Users", _raw(created)), 400)
        replaced = {"schemas": [USER_SCHEMA], "userName": "ada@example.com", **_filled(template, text)}
        assert_scim_error(scim.put(f"/Users/{user['id']}", _raw(replaced)), 400)
        patch = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "path": path, "value": text}]}
        assert_scim_error(scim.send("PATCH", f"/Users/{user['id']}", _raw(patch)), 400)
    assert scim.get("/Users", query_string={"filter": 'userName eq "bob@example.com"'}).get_json()["totalResults"] == 0


@pytest.mark.parametrize("text", UNSTORABLE)
def test_unstorable_text_in_any_group_field_is_a_400(scim, text):
    user = scim.create_user("ada@example.com")
    for field in ("displayName", "externalId", "members"):
        value = [{"value": user["id"], "display": text}] if field == "members" else text
        body = {"schemas": [GROUP_SCHEMA], "displayName": "Staff", field: value}
        assert_scim_error(scim.post("/Groups", _raw(body)), 400)
    assert scim.get("/Groups").get_json()["totalResults"] == 0


def test_unstorable_text_in_a_filter_is_a_400(scim):
    scim.create_user("ada@example.com")
    for attribute in ("userName", "externalId", "displayName", "emails.value", "id"):
        for text in UNSTORABLE:
            escaped = json.dumps(text)  # the filter's own string escapes: "\u0000", "\ud800"
            search = scim.send("POST", "/Users/.search", _raw({"filter": f"{attribute} eq {escaped}"}))
            assert search.status_code == 400, (attribute, text, search.get_data(as_text=True))
            assert search.mimetype == MEDIA_TYPE
        listing = scim.get("/Users", query_string={"filter": f'{attribute} eq "a\u0000b"'})
        assert listing.status_code == 400, (attribute, listing.get_data(as_text=True))


def test_a_user_name_too_long_for_an_address_is_refused_before_anything_is_stored(scim):
    user = scim.create_user("ada@example.com")
    for user_name in ("a" * 200_000 + "@example.com", "a" + "\u0301" * 5000 + "@example.com"):
        assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": user_name}), 400, "invalidValue")
        renamed = scim.patch(f"/Users/{user['id']}", [{"op": "replace", "path": "userName", "value": user_name}])
        assert_scim_error(renamed, 400, "invalidValue")
    assert scim.get(f"/Users/{user['id']}").get_json()["userName"] == "ada@example.com"
    assert scim.get("/Users").get_json()["totalResults"] == 2  # ada and the setup's person
