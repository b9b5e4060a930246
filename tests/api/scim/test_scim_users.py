"""SCIM Users, through scim2-client and in the shapes Entra ID and Okta send."""

from __future__ import annotations

import pytest
from scim2_models import Email, Name, SearchRequest, User
from sqlalchemy import select

from authsvc.core.models import User as Account
from tests.helpers import OTHER_HOST, PASSWORD, headers, signin
from tests.helpers.scim import MEDIA_TYPE, USER_SCHEMA, assert_scim_error


def stored(world, email: str) -> Account:
    (user,) = world.query(select(Account).where(Account.email == email))
    return user


def test_discovery_endpoints_answer_in_scims_media_type(scim):
    paths = ("/ServiceProviderConfig", "/ResourceTypes", "/Schemas", "/ResourceTypes/User", "/Schemas/" + USER_SCHEMA)
    for path in paths:
        response = scim.get(path)
        assert response.status_code == 200, (path, response.get_json())
        assert response.mimetype == MEDIA_TYPE
    config = scim.get("/ServiceProviderConfig").get_json()
    assert config["patch"]["supported"] is True and config["filter"]["supported"] is True
    assert config["etag"]["supported"] is True and config["bulk"]["supported"] is False
    names = {r["name"] for r in scim.get("/ResourceTypes").get_json()["Resources"]}
    assert names == {"User", "Group"}


def test_scim2_client_creates_reads_replaces_and_deletes_a_user(scim, world):
    client = scim.scim2_client()
    created = client.create(
        User(user_name="Ada@Example.com", name=Name(given_name="Ada", family_name="Lovelace"), external_id="e-1")
    )
    assert created.user_name == "ada@example.com"
    assert created.active is True and created.meta.version
    user = stored(world, "ada@example.com")
    assert (user.name, user.external_id, user.provisioned_by) == ("Ada Lovelace", "e-1", "scim")
    # The new user signs in by the address SCIM gave (here with a password an admin set).
    assert client.query(User, created.id).user_name == "ada@example.com"
    created.display_name = "Countess"
    created.emails = [Email(value="ada@example.com", type="work", primary=True)]
    replaced = client.replace(created)
    assert replaced.display_name == "Countess"
    assert stored(world, "ada@example.com").name == "Countess"
    client.delete(User, created.id)
    assert_scim_error(scim.get(f"/Users/{created.id}"), 404)


def test_username_is_the_sign_in_address_and_changing_it_moves_the_sign_in(scim, world, client, setup):
    created = scim.create_user("ada@example.com")
    world.update(Account, int(created["id"]), password_hash=None)
    with world.app.app_context():
        from authsvc.core.database import db

        user = db.session.get(Account, int(created["id"]))
        user.set_password(PASSWORD)
        db.session.commit()
    rename = [{"op": "replace", "path": "userName", "value": "ADA.L@example.com"}]
    response = scim.patch(f"/Users/{created['id']}", rename)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["userName"] == "ada.l@example.com"
    signin(client, "ada.l@example.com")
    refused = client.post(
        "/auth/signin", query_string={"email": "ada@example.com", "password": PASSWORD}, headers=headers()
    )
    assert refused.status_code == 401


def test_usernames_are_unique_case_insensitively(scim):
    scim.create_user("ada@example.com")
    body = {"schemas": [USER_SCHEMA], "userName": "ADA@example.com"}
    assert_scim_error(scim.post("/Users", body), 409, "uniqueness")
    other = scim.create_user("bob@example.com")
    response = scim.patch(f"/Users/{other['id']}", [{"op": "replace", "path": "userName", "value": "Ada@Example.com"}])
    assert_scim_error(response, 409, "uniqueness")


def test_privileged_accounts_and_service_accounts_are_invisible_and_their_addresses_taken(scim, world, setup):
    world.user(setup.domain, "boss@example.com", system_admin=True, admin=True)
    listed = {r["userName"] for r in scim.get("/Users").get_json()["Resources"]}
    assert listed == {"person@example.com"}
    for email in ("boss@example.com", "service@example.com", "it-admin@example.com"):
        assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": email}), 409, "uniqueness")
    assert_scim_error(scim.get(f"/Users/{setup.service.id}"), 404)
    for method, body in (("PUT", {"schemas": [USER_SCHEMA], "userName": "x@example.com"}), ("DELETE", None)):
        assert_scim_error(scim.send(method, f"/Users/{scim.admin.id}", body), 403)
    response = scim.patch(f"/Users/{setup.service.id}", [{"op": "replace", "path": "active", "value": False}])
    assert_scim_error(response, 403)
    assert stored(world, "service@example.com").disabled is False
    assert stored(world, "it-admin@example.com").provisioned_by is None


def test_a_user_who_existed_before_scim_is_adopted_on_the_first_write(scim, world, setup):
    found = scim.get("/Users", query_string={"filter": 'userName eq "Person@example.com"'})
    (resource,) = found.get_json()["Resources"]
    assert resource["id"] == str(setup.person.id)
    assert stored(world, "person@example.com").provisioned_by is None
    response = scim.patch(f"/Users/{setup.person.id}", [{"op": "add", "path": "externalId", "value": "entra-42"}])
    assert response.status_code == 200, response.get_json()
    user = stored(world, "person@example.com")
    assert (user.provisioned_by, user.external_id) == ("scim", "entra-42")


def test_entra_id_patch_shapes(scim, world):
    """The PATCH requests Microsoft Entra ID sends (learn.microsoft.com, "SCIM 2.0 protocol compliance")."""
    emails = [{"value": "ada@example.com", "type": "work", "primary": True}]
    created = scim.create_user("ada@example.com", emails=emails)
    path = f"/Users/{created['id']}"
    response = scim.patch(
        path,
        [
            {
                "op": "Replace",
                "value": {"name.givenName": "Ada", "name.familyName": "Lovelace", "displayName": "Ada L"},
            },
            {"op": "Add", "path": 'emails[type eq "work"].value', "value": "ada.work@example.com"},
            {"op": "Add", "path": 'phoneNumbers[type eq "mobile"].value', "value": "+44 20 0000 0000"},
            {"op": "Replace", "path": "externalId", "value": "entra-1"},
        ],
    )
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["name"] == {"givenName": "Ada", "familyName": "Lovelace"}
    assert body["emails"][0]["value"] == "ada.work@example.com"
    assert body["phoneNumbers"] == [{"value": "+44 20 0000 0000", "type": "mobile"}]
    assert (body["displayName"], body["externalId"]) == ("Ada L", "entra-1")
    # "active" as the string "False", in a value object with no path.
    response = scim.patch(path, [{"op": "Replace", "value": {"active": "False"}}])
    assert response.status_code == 200 and response.get_json()["active"] is False
    assert stored(world, "ada@example.com").disabled is True
    response = scim.patch(path, [{"op": "Replace", "path": "active", "value": "True"}])
    assert response.get_json()["active"] is True
    assert stored(world, "ada@example.com").disabled is False


def test_okta_shapes(scim, world):
    """Okta: POST with the whole profile, PUT to update, PATCH active false to deactivate (developer.okta.com)."""
    body = {
        "schemas": [USER_SCHEMA],
        "userName": "ada@example.com",
        "name": {"givenName": "Ada", "familyName": "Lovelace"},
        "emails": [{"primary": True, "value": "ada@example.com", "type": "work"}],
        "displayName": "Ada Lovelace",
        "locale": "en-GB",
        "externalId": "00u1",
        "groups": [],
        "password": "ignored-without-the-setting",
        "active": True,
    }
    response = scim.post("/Users", body)
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert "password" not in created
    assert stored(world, "ada@example.com").password_hash is None
    body["name"]["familyName"] = "King"
    response = scim.put(f"/Users/{created['id']}", {**body, "id": created["id"]})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["name"]["familyName"] == "King"
    response = scim.patch(f"/Users/{created['id']}", [{"op": "replace", "value": {"active": False}}])
    assert response.get_json()["active"] is False


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('userName eq "ADA@example.com"', {"ada@example.com"}),
        ('userName sw "b"', {"bob@example.com"}),
        ('userName co "example.com" and active eq true', {"ada@example.com", "person@example.com"}),
        ('externalId eq "e-bob"', {"bob@example.com"}),
        ('emails.value eq "ada@example.com" or externalId eq "e-bob"', {"ada@example.com", "bob@example.com"}),
        ("active eq false", {"bob@example.com"}),
        ("externalId pr", {"ada@example.com", "bob@example.com"}),
        ('meta.lastModified gt "2000-01-01T00:00:00Z"', {"ada@example.com", "bob@example.com", "person@example.com"}),
        ('meta.lastModified gt "2999-01-01T00:00:00Z"', set()),
        ('title eq "Engineer"', {"ada@example.com"}),
    ],
)
def test_filters(scim, expression, expected):
    scim.create_user("ada@example.com", externalId="e-ada", title="Engineer")
    scim.create_user("bob@example.com", externalId="e-bob", active=False)
    client = scim.scim2_client()
    found = client.query(User, query_parameters=SearchRequest(filter=expression, count=50))
    assert {user.user_name for user in found.resources or []} == expected
    assert found.total_results == len(expected)


def test_a_bad_filter_is_400_invalid_filter(scim):
    for expression in ("userName eq", 'nosuch eq "x"', "userName zz 1"):
        assert_scim_error(scim.send("GET", "/Users", query_string={"filter": expression}), 400, "invalidFilter")


def test_pagination_sorting_and_attribute_selection(scim):
    for name in ("carol", "alice", "bob"):
        scim.create_user(f"{name}@example.com")
    response = scim.send(
        "GET",
        "/Users",
        query_string={"startIndex": 2, "count": 2, "sortBy": "userName", "sortOrder": "descending"},
    )
    body = response.get_json()
    assert (body["totalResults"], body["startIndex"], body["itemsPerPage"]) == (4, 2, 2)
    assert [r["userName"] for r in body["Resources"]] == ["carol@example.com", "bob@example.com"]
    body = scim.send("GET", "/Users", query_string={"attributes": "userName", "sortBy": "userName"}).get_json()
    assert set(body["Resources"][0]) == {"schemas", "id", "userName"}
    body = scim.send("GET", "/Users", query_string={"excludedAttributes": "emails,meta"}).get_json()
    assert all("emails" not in r and "meta" not in r for r in body["Resources"])


def test_etags_and_if_match(scim):
    created = scim.create_user("ada@example.com")
    got = scim.get(f"/Users/{created['id']}")
    version = got.headers["ETag"]
    assert version == created["meta"]["version"]
    operations = [{"op": "replace", "path": "displayName", "value": "One"}]
    assert scim.patch(f"/Users/{created['id']}", operations, **{"If-Match": version}).status_code == 200
    again = [{"op": "replace", "path": "displayName", "value": "Two"}]
    stale = scim.patch(f"/Users/{created['id']}", again, **{"If-Match": version})
    assert_scim_error(stale, 412)
    assert scim.get(f"/Users/{created['id']}").get_json()["displayName"] == "One"


def test_passwords_only_with_the_setting(make_app, setup, world):
    from tests.helpers.scim import Scim

    admin = world.user(setup.domain, "it-admin@example.com", admin=True)
    key = world.api_key(admin, scopes="scim")
    without = Scim(None, make_app().test_client(), key)
    attributes = {a["name"] for a in without.get("/Schemas/" + USER_SCHEMA).get_json()["attributes"]}
    assert "password" not in attributes
    with_passwords = Scim(None, make_app(AUTHSVC_SCIM_PASSWORDS=True).test_client(), key)
    attributes = {a["name"] for a in with_passwords.get("/Schemas/" + USER_SCHEMA).get_json()["attributes"]}
    assert "password" in attributes
    with_passwords.create_user("ada@example.com", password="a long enough password")
    user = stored(world, "ada@example.com")
    with world.app.app_context():
        assert user.check_password("a long enough password")


def test_users_of_another_domain_are_not_found(scim, world):
    other = world.domain(OTHER_HOST)
    foreign = world.user(other, "foreign@other.example.com")
    assert_scim_error(scim.get(f"/Users/{foreign.id}"), 404)
    assert_scim_error(scim.patch(f"/Users/{foreign.id}", [{"op": "replace", "path": "active", "value": False}]), 404)
    assert stored(world, "foreign@other.example.com").disabled is False


def test_bad_bodies_are_scim_errors_never_500(scim):
    assert_scim_error(scim.post("/Users", b"{not json"), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", [1, 2]), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA]}), 400)
    assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": "not-an-address"}), 400)
    created = scim.create_user("ada@example.com")
    assert_scim_error(scim.patch(f"/Users/{created['id']}", [{"op": "jump", "path": "userName"}]), 400)
    assert_scim_error(scim.get("/Users/not-a-number"), 404)


def test_a_body_over_the_limit_is_413_in_scims_format(make_app, setup, world):
    from tests.helpers.scim import Scim

    admin = world.user(setup.domain, "it-admin@example.com", admin=True)
    small = Scim(None, make_app(AUTHSVC_SCIM_MAX_BODY=2048).test_client(), world.api_key(admin, scopes="scim"))
    body = {"schemas": [USER_SCHEMA], "userName": "ada@example.com", "title": "x" * 4096}
    assert_scim_error(small.post("/Users", body), 413)
    # The default allows 1 MiB, above the service's other requests' limit.
    large = Scim(None, make_app().test_client(), small.key)
    body["title"] = "x" * 200_000
    assert large.post("/Users", body).status_code == 201


@pytest.mark.postgresql
def test_a_username_filter_is_an_index_lookup_on_a_large_domain(app, client, scim, setup):
    from sqlalchemy import event, insert, text

    from authsvc.core.database import db

    with app.app_context():
        db.session.execute(
            insert(Account),
            [
                {"domain_id": setup.domain.id, "email": f"user{i}@example.com", "name": "", "groups": []}
                for i in range(20000)
            ],
        )
        db.session.commit()
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text('VACUUM (ANALYZE) "user"'))
    statements = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and 'FROM "user"' in statement and "email" in statement:
            statements.append((statement, parameters))

    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", capture)
        try:
            response = scim.get("/Users", query_string={"filter": 'userName eq "User12345@example.com"'})
        finally:
            event.remove(db.engine, "before_cursor_execute", capture)
        assert [r["userName"] for r in response.get_json()["Resources"]] == ["user12345@example.com"]
        with db.engine.connect() as conn:
            plans = [
                "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
                for statement, parameters in statements
            ]
    assert len(plans) >= 2, statements
    # The next test's DELETE of 20,000 users, one foreign-key check each, came near the 10 s
    # statement timeout on a loaded machine; TRUNCATE empties them at once.
    with app.app_context(), db.engine.begin() as conn:
        conn.execute(text('TRUNCATE "user" CASCADE'))
    for plan in plans:
        assert 'Seq Scan on "user"' not in plan and "Seq Scan on user" not in plan, plan
        assert "user_domain_id_email_key" in plan or "user_pkey" in plan, plan
