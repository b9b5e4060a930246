"""SCIM writes are right under the forms Entra ID and Okta send and under concurrency: If-Match is
atomic, PATCH remove removes, a member named with a null "$ref" is that member (docs/scim.md, "Users").
"""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import select, text

from authsvc.core.database import db
from authsvc.core.models import ScimGroup, User
from tests.helpers import HttpsClient
from tests.helpers.scim import GROUP_SCHEMA, PATCH_SCHEMA, assert_scim_error


def _waiting_on_a_lock(app) -> int:
    with app.app_context(), db.engine.connect() as watcher:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        return watcher.execute(text(query)).scalar_one()


@pytest.mark.postgresql
@pytest.mark.parametrize("resource", ["Users", "Groups"])
def test_two_writes_with_the_same_if_match_one_wins_and_one_is_412(app, scim, resource):
    """Two clients that read the same version must not both overwrite it: the second would lose the first's update."""
    if resource == "Users":
        row_id = scim.create_user("ada@example.com", displayName="Ada")["id"]
        model = User
    else:
        row_id = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Staff"}).get_json()["id"]
        model = ScimGroup
    version = scim.get(f"/{resource}/{row_id}").headers["ETag"]
    answers: dict[str, int] = {}

    def rename(name: str) -> None:
        app.test_client_class = HttpsClient
        operations = {
            "schemas": [PATCH_SCHEMA],
            "Operations": [{"op": "replace", "path": "displayName", "value": name}],
        }
        response = app.test_client().patch(
            f"/scim/v2/{resource}/{row_id}", json=operations, headers=scim.headers(**{"If-Match": version})
        )
        answers[name] = response.status_code

    # A third session holds the row, so that both writes have read the version before either writes.
    with app.app_context(), db.engine.connect() as locker:
        locker.execute(select(model.id).where(model.id == int(row_id)).with_for_update())
        writers = [threading.Thread(target=rename, args=(name,)) for name in ("First", "Second")]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 10
        while _waiting_on_a_lock(app) < 2:
            assert time.monotonic() < deadline, "the two writes did not both reach the row"
            time.sleep(0.05)
        locker.rollback()
    for writer in writers:
        writer.join(10)
    assert sorted(answers.values()) == [200, 412], answers
    winner = next(name for name, status in answers.items() if status == 200)
    assert scim.get(f"/{resource}/{row_id}").get_json()["displayName"] == winner


@pytest.mark.parametrize("resource", ["Users", "Groups"])
def test_a_delete_naming_a_stale_version_is_412_and_deletes_nothing(scim, resource):
    """If-Match on DELETE (RFC 7644 3.14): a client that read an older version must not delete what changed since."""
    if resource == "Users":
        row_id = scim.create_user("ada@example.com", displayName="Ada")["id"]
    else:
        row_id = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Staff"}).get_json()["id"]
    stale = scim.get(f"/{resource}/{row_id}").headers["ETag"]
    renamed = scim.patch(f"/{resource}/{row_id}", [{"op": "replace", "path": "displayName", "value": "Renamed"}])
    assert renamed.status_code == 200, renamed.get_json()
    assert_scim_error(scim.delete(f"/{resource}/{row_id}", **{"If-Match": stale}), 412)
    assert scim.get(f"/{resource}/{row_id}").get_json()["displayName"] == "Renamed"
    current = scim.get(f"/{resource}/{row_id}").headers["ETag"]
    assert scim.delete(f"/{resource}/{row_id}", **{"If-Match": current}).status_code == 204
    assert_scim_error(scim.get(f"/{resource}/{row_id}"), 404)


@pytest.mark.postgresql
@pytest.mark.parametrize("resource", ["Users", "Groups"])
@pytest.mark.parametrize("other", ["DELETE", "PATCH"])
def test_a_delete_and_another_write_with_the_same_if_match_one_wins_and_one_is_412(app, scim, resource, other):
    """The version is claimed in the statement that holds the row (a conditional UPDATE) before the delete: of two
    writes that read the same version, the one that comes second finds it moved and is 412, never a second success."""
    if resource == "Users":
        row_id = scim.create_user("ada@example.com", displayName="Ada")["id"]
        model = User
    else:
        row_id = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Staff"}).get_json()["id"]
        model = ScimGroup
    version = scim.get(f"/{resource}/{row_id}").headers["ETag"]
    answers: dict[str, int] = {}

    def write(name: str, method: str) -> None:
        app.test_client_class = HttpsClient
        operations = {
            "schemas": [PATCH_SCHEMA],
            "Operations": [{"op": "replace", "path": "displayName", "value": "Renamed"}],
        }
        response = app.test_client().open(
            f"/scim/v2/{resource}/{row_id}",
            method=method,
            json=operations if method == "PATCH" else None,
            headers=scim.headers(**{"If-Match": version}),
        )
        answers[name] = response.status_code

    with app.app_context(), db.engine.connect() as locker:
        locker.execute(select(model.id).where(model.id == int(row_id)).with_for_update())
        writers = [
            threading.Thread(target=write, args=("delete", "DELETE")),
            threading.Thread(target=write, args=("other", other)),
        ]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 10
        while _waiting_on_a_lock(app) < 2:
            assert time.monotonic() < deadline, "the two writes did not both reach the row"
            time.sleep(0.05)
        locker.rollback()
    for writer in writers:
        writer.join(10)
    assert sorted(answers.values()) in ([200, 412], [204, 412]), answers
    gone = scim.get(f"/{resource}/{row_id}").status_code == 404
    assert gone == (answers["delete"] == 204 or (other == "DELETE" and answers["other"] == 204)), answers


def test_patch_remove_takes_an_optional_attribute_away(scim, world):
    created = scim.create_user(
        "ada@example.com", displayName="Ada", title="Countess", nickName="Ada", externalId="e-1", locale="en-GB"
    )
    path = f"/Users/{created['id']}"
    for attribute in ("displayName", "title", "nickName", "externalId", "locale"):
        response = scim.patch(path, [{"op": "remove", "path": attribute}])
        assert response.status_code == 200, response.get_json()
        assert attribute not in response.get_json(), attribute
        assert attribute not in scim.get(path).get_json(), attribute
    assert scim.get(path).get_json()["userName"] == "ada@example.com"


def test_entra_ids_remove_with_a_null_ref_removes_that_member(scim, setup, world):
    """Entra ID sends {"$ref": null, "value": ID}: a null attribute is an unassigned one (RFC 7643 2.5)."""
    other = world.user(setup.domain, "other@example.com")
    members = [{"value": str(setup.person.id)}, {"value": str(other.id)}]
    group = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Sales", "members": members}).get_json()
    remove = [{"op": "Remove", "path": "members", "value": [{"$ref": None, "value": str(other.id)}]}]
    response = scim.patch(f"/Groups/{group['id']}", remove)
    assert response.status_code == 200, response.get_json()
    assert [m["value"] for m in response.get_json()["members"]] == [str(setup.person.id)]
