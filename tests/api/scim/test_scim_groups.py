"""SCIM Groups; a user's groups are their roles (`u.r`) in inspect and in ID tokens."""

from __future__ import annotations

from scim2_models import Group, GroupMember
from sqlalchemy import select

from authsvc.core.models import ScimGroup, ScimGroupMember, User
from tests.helpers import OTHER_HOST, headers, signin
from tests.helpers.oidc_logout import claims_of, id_token
from tests.helpers.scim import GROUP_SCHEMA, Scim, assert_scim_error

INSPECT = "/api/engine/v2/api_keys/inspect"


def roles(world, email: str) -> list[str]:
    (user,) = world.query(select(User).where(User.email == email))
    return user.groups


def members(group: dict) -> set[str]:
    return {member["value"] for member in group.get("members") or []}


def new_group(scim, name: str, *user_ids) -> dict:
    body = {"schemas": [GROUP_SCHEMA], "displayName": name, "members": [{"value": str(i)} for i in user_ids]}
    response = scim.post("/Groups", body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_scim2_client_creates_lists_and_deletes_a_group(scim, setup, world):
    client = scim.scim2_client()
    group = client.create(Group(display_name="Engineering", members=[GroupMember(value=str(setup.person.id))]))
    assert group.display_name == "Engineering" and [m.value for m in group.members] == [str(setup.person.id)]
    listed = client.query(Group)
    assert [g.display_name for g in listed.resources] == ["Engineering"]
    user = scim.get(f"/Users/{setup.person.id}").get_json()
    assert [g["display"] for g in user["groups"]] == ["Engineering"]
    assert roles(world, "person@example.com") == ["Engineering"]
    client.delete(Group, group.id)
    assert roles(world, "person@example.com") == []
    assert world.query(select(ScimGroup)) == []


def test_a_users_groups_are_their_roles_in_inspect_and_id_tokens(app, client, world, oidc):
    admin = world.user(oidc.domain, "it-admin@example.com", admin=True)
    new_group(Scim(app, client, world.api_key(admin, scopes="scim")), "Finance", oidc.person.id)
    signin(client)
    tokens = id_token(client, oidc, scope="openid groups")
    inspected = client.get(INSPECT, headers=headers(Authorization=f"Bearer {tokens['access_token']}")).get_json()
    assert set(inspected["u"]["r"]) == {"staff", "ops", "Finance"}
    claims = claims_of(client, tokens["id_token"])
    assert set(claims["groups"]) == {"staff", "ops", "Finance"}


def test_entra_id_member_patches(scim, setup, world):
    """Entra ID adds members with "Add" and removes only the listed ones with "Remove" and a value."""
    other = world.user(setup.domain, "other@example.com")
    third = world.user(setup.domain, "third@example.com")
    group = new_group(scim, "Sales")
    path = f"/Groups/{group['id']}"
    add = [
        {
            "op": "Add",
            "path": "members",
            "value": [{"value": str(setup.person.id)}, {"value": str(other.id)}, {"value": str(third.id)}],
        }
    ]
    assert members(scim.patch(path, add).get_json()) == {str(setup.person.id), str(other.id), str(third.id)}
    remove = [{"op": "Remove", "path": "members", "value": [{"value": str(other.id)}]}]
    assert members(scim.patch(path, remove).get_json()) == {str(setup.person.id), str(third.id)}
    rename = [{"op": "Replace", "path": "displayName", "value": "Sales EMEA"}]
    assert scim.patch(path, rename).get_json()["displayName"] == "Sales EMEA"
    assert roles(world, "person@example.com") == ["Sales EMEA"]
    assert roles(world, "other@example.com") == []


def test_okta_member_patches_and_put(scim, setup, world):
    """Okta removes a member with a filtered path and replaces the name with a value object."""
    other = world.user(setup.domain, "other@example.com")
    group = new_group(scim, "Ops", setup.person.id, other.id)
    path = f"/Groups/{group['id']}"
    remove = [{"op": "remove", "path": f'members[value eq "{other.id}"]'}]
    assert members(scim.patch(path, remove).get_json()) == {str(setup.person.id)}
    replace = [{"op": "replace", "value": {"id": group["id"], "displayName": "Operations"}}]
    assert scim.patch(path, replace).get_json()["displayName"] == "Operations"
    put = {"schemas": [GROUP_SCHEMA], "displayName": "Operations", "members": [{"value": str(other.id)}]}
    assert members(scim.put(path, put).get_json()) == {str(other.id)}
    assert roles(world, "person@example.com") == []
    assert roles(world, "other@example.com") == ["Operations"]


def test_a_member_who_is_not_a_user_of_this_domain_is_400_and_nothing_is_stored(scim, setup, world):
    foreign = world.user(world.domain(OTHER_HOST), "foreign@other.example.com")
    group = new_group(scim, "Team", setup.person.id)
    for value in (str(foreign.id), "999999", "not-a-number", str(setup.service.id), str(scim.admin.id)):
        response = scim.patch(f"/Groups/{group['id']}", [{"op": "add", "path": "members", "value": [{"value": value}]}])
        assert_scim_error(response, 400, "invalidValue")
        body = {"schemas": [GROUP_SCHEMA], "displayName": f"new {value}", "members": [{"value": value}]}
        assert_scim_error(scim.post("/Groups", body), 400, "invalidValue")
    assert {m.user_id for m in world.query(select(ScimGroupMember))} == {setup.person.id}
    assert [g.display_name for g in world.query(select(ScimGroup))] == ["Team"]
    assert roles(world, "foreign@other.example.com") == []


def test_group_names_are_unique_and_filters_work(scim, setup):
    new_group(scim, "Alpha", setup.person.id)
    new_group(scim, "Beta")
    assert_scim_error(scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Alpha"}), 409, "uniqueness")
    found = scim.get("/Groups", query_string={"filter": 'displayName eq "alpha"'}).get_json()
    assert [g["displayName"] for g in found["Resources"]] == ["Alpha"]
    found = scim.get("/Groups", query_string={"filter": f'members.value eq "{setup.person.id}"'}).get_json()
    assert [g["displayName"] for g in found["Resources"]] == ["Alpha"]
    found = scim.get("/Groups", query_string={"excludedAttributes": "members"}).get_json()
    assert found["totalResults"] == 2 and all("members" not in g for g in found["Resources"])
    assert_scim_error(scim.get("/Groups", query_string={"filter": "displayName eq"}), 400, "invalidFilter")


def test_groups_of_another_domain_are_not_found(scim, world):
    other = world.domain(OTHER_HOST)
    foreign = world.save(ScimGroup(domain_id=other.id, display_name="Theirs", modified_at=0))
    assert_scim_error(scim.get(f"/Groups/{foreign.id}"), 404)
    assert_scim_error(scim.delete(f"/Groups/{foreign.id}"), 404)
