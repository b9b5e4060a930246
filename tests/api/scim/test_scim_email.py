"""SCIM reads and writes every user of its domain, whatever directory named them: one e-mail rule
(authsvc/core/validation.py) for SCIM, the admin API and every other surface (docs/scim.md, "Users").
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import User as Account
from tests.helpers import headers
from tests.helpers.scim import USER_SCHEMA, assert_scim_error

# Active Directory's UPN suffixes, RFC 6761's .test, a single-label host: what LDAP and SSO create today.
DIRECTORY_ADDRESSES = ["alice@corp.local", "bob@qa.test", "carol@intranet"]


@pytest.mark.parametrize("address", DIRECTORY_ADDRESSES)
def test_a_user_of_a_directory_namespace_is_listed_patched_replaced_and_deleted(scim, world, setup, address):
    """Entra ID and Okta deprovision through these requests: a 400 would leave the person signed in."""
    world.user(setup.domain, "zed@example.com")
    user = world.user(setup.domain, address)
    listing = scim.get("/Users")
    assert listing.status_code == 200, listing.get_json()
    assert {address, "zed@example.com"} <= {r["userName"] for r in listing.get_json()["Resources"]}
    read = scim.get(f"/Users/{user.id}")
    assert read.status_code == 200 and read.get_json()["emails"][0]["value"] == address
    patched = scim.patch(f"/Users/{user.id}", [{"op": "replace", "path": "active", "value": False}])
    assert patched.status_code == 200, patched.get_json()
    assert patched.get_json()["active"] is False
    body = {"schemas": [USER_SCHEMA], "userName": address, "emails": [{"value": address, "primary": True}]}
    replaced = scim.put(f"/Users/{user.id}", body)
    assert replaced.status_code == 200, replaced.get_json()
    assert scim.delete(f"/Users/{user.id}").status_code == 204
    assert_scim_error(scim.get(f"/Users/{user.id}"), 404)


@pytest.mark.parametrize("address", DIRECTORY_ADDRESSES)
def test_scim_creates_a_user_the_admin_api_would_create(scim, world, client, address):
    """The same address is valid on every surface or on none."""
    body = {"schemas": [USER_SCHEMA], "userName": address.upper(), "emails": [{"value": address}]}
    created = scim.post("/Users", body)
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["userName"] == address
    key = world.api_key(scim.admin, scopes="public admin", permission="admin")
    other = {"email": address.replace("@", "2@"), "password": "a long password"}
    answer = client.post("/api/engine/v2/users", json=other, headers=headers(**{"X-API-Key": key}))
    assert answer.status_code == 201, answer.get_json()


@pytest.mark.parametrize("address", ["a..b@example.com", "ada@", "ada@[10.0.0.1]", "a" * 65 + "@example.com"])
def test_scim_refuses_what_the_admin_api_refuses(scim, world, address):
    assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": address}), 400, "invalidValue")
    assert world.query(select(Account).where(Account.email == address.lower())) == []


def test_an_address_stored_before_the_rule_still_reads_and_deprovisions(scim, world, setup):
    """Rows an older, looser rule let in stay SCIM's: a client can still find and deprovision them."""
    user = world.user(setup.domain, "a..b@example.com")
    listing = scim.get("/Users", query_string={"filter": 'userName eq "a..b@example.com"'})
    assert listing.status_code == 200, listing.get_json()
    assert [r["id"] for r in listing.get_json()["Resources"]] == [str(user.id)]
    patched = scim.patch(f"/Users/{user.id}", [{"op": "replace", "path": "active", "value": False}])
    assert patched.status_code == 200, patched.get_json()
    assert patched.get_json()["userName"] == "a..b@example.com"
    assert scim.delete(f"/Users/{user.id}").status_code == 204


# One mailbox written two ways: a composed and a decomposed accent (Unicode NFC and NFD), and an
# internationalised domain in Unicode and in its ASCII (punycode) form.
SAME_MAILBOX = [("jos\u00e9@example.com", "jose\u0301@example.com"), ("ana@b\u00fccher.de", "ana@xn--bcher-kva.de")]


@pytest.mark.parametrize(("first", "second"), SAME_MAILBOX)
def test_one_mailbox_written_another_way_is_the_same_user(scim, world, client, first, second):
    """Two spellings of one address that look alike would be two accounts, one passing for the other:
    addresses are kept in one normal form (RFC 6531's NFC, the domain as IDNA 2008's Unicode form)."""
    key = world.api_key(scim.admin, scopes="public admin", permission="admin")
    made = client.post(
        "/api/engine/v2/users",
        json={"email": first, "password": "a long password"},
        headers=headers(**{"X-API-Key": key}),
    )
    assert made.status_code == 201, made.get_json()
    again = client.post(
        "/api/engine/v2/users",
        json={"email": second, "password": "a long password"},
        headers=headers(**{"X-API-Key": key}),
    )
    assert again.status_code == 422, again.get_json()
    assert "already exists" in again.get_json()["fields"]["email"]
    assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": second}), 409, "uniqueness")
