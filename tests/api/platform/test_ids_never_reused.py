"""An id the service hands out names one record for ever, and deleting a record leaves nothing of it behind.

A relying party keeps a user's ``sub`` (ID tokens, JWT access tokens, UserInfo), a SCIM client its
ids, an auditor the audit trail's targets. SQLite gives a table without AUTOINCREMENT the largest id
plus one: once the newest user is deleted, the next user would get that id, and every copy of it
outside the database would name another person. And SQLite runs here without foreign keys, so
nothing cascades there: a row left referring to a deleted user (a second factor, a group
membership, a reset link) would belong to whoever got the id next (docs/security.md, "Ids").
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from flask_migrate import upgrade
from sqlalchemy import func, select
from sqlalchemy import text as sql

from authsvc import create_app
from authsvc.account import links
from authsvc.cli import migrations
from authsvc.core import security
from authsvc.core.database import db
from authsvc.core.models import Application, Consent, MfaFactor, RecoveryCode, ScimGroup, ScimGroupMember, User
from tests.helpers import OTHER_HOST, PASSWORD, HttpsClient, base_config
from tests.helpers.admin_api import call
from tests.helpers.scim import GROUP_SCHEMA, Scim

# The tables the migration rebuilds with AUTOINCREMENT on SQLite.
KEPT = ["domain", "application", "user", "token", "scim_group", "mfa_factor", "audit_record"]


def _created(response) -> str:
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


@pytest.mark.parametrize(
    "path,body",
    [
        ("/users", lambda n: {"email": f"p{n}@example.com", "password": PASSWORD}),
        ("/oauth_apps", lambda n: {"name": f"App {n}", "redirect_uris": ["https://app.example/cb"]}),
    ],
)
def test_the_admin_api_never_gives_a_deleted_records_id_to_a_new_one(client, keys, path, body):
    """The newest record deleted, the next one gets a new id: its old one may still be held outside."""
    gone = _created(call(client, "post", path, keys.admin_key, body(1)))
    assert call(client, "delete", f"{path}/{gone}", keys.admin_key).status_code == 200
    again = _created(call(client, "post", path, keys.admin_key, body(2)))
    assert int(again) > int(gone)


def test_a_deleted_domains_id_is_never_given_to_a_new_domain(client, keys):
    def domain(host: str) -> str:
        return _created(
            call(client, "post", "/domains", keys.system_key, {"name": host, "host": host}, host=OTHER_HOST)
        )

    gone = domain("gone.example")
    deleted = call(client, "delete", f"/domains/{gone}", keys.system_key, host=OTHER_HOST)
    assert deleted.status_code == 200, deleted.get_json()
    assert int(domain("next.example")) > int(gone)


@pytest.mark.parametrize("resource", ["Users", "Groups"])
def test_scim_never_gives_a_deleted_resources_id_to_a_new_one(make_app, setup, world, resource):
    """A SCIM client that kept an id must never find another person (or group) behind it."""
    app = make_app(AUTHSVC_SCIM_HARD_DELETE=True)
    admin = world.user(setup.domain, "it-admin@example.com", admin=True)
    app.test_client_class = HttpsClient
    scim = Scim(app, app.test_client(), world.api_key(admin, scopes="scim"))

    def create(n: int) -> str:
        if resource == "Users":
            return scim.create_user(f"ada{n}@example.com")["id"]
        return _created(scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": f"Staff {n}"}))

    gone = create(1)
    assert scim.delete(f"/{resource}/{gone}").status_code == 204
    assert int(create(2)) > int(gone)


def _referring(world, table: str, ids: list) -> dict[str, int]:
    """Rows of any table whose foreign key names one of ``table``'s rows ``ids``, counted by table."""
    found = {}
    for other in db.metadata.sorted_tables:
        for key in other.foreign_keys:
            if key.column.table.name == table and other.name != table:
                column = other.c[key.parent.name]
                count = world.query(select(func.count()).select_from(other).where(column.in_(ids)))[0]
                if count:
                    found[f"{other.name}.{column.name}"] = count
    return found


def _everything_of(world, app, setup, email: str) -> User:
    """A user with a second factor, recovery codes, a group, an approval, a reset link and a bound application."""
    user = world.user(setup.domain, email)
    group = world.save(ScimGroup(domain_id=setup.domain.id, display_name="Staff", modified_at=0))
    world.save(ScimGroupMember(group_id=group.id, user_id=user.id))
    world.save(MfaFactor(user_id=user.id, kind="totp", secret="x", confirmed=True))
    world.save(RecoveryCode(user_id=user.id, digest=security.digest("recovery")))
    world.save(Consent(user_id=user.id, application_id=setup.public_app.id, scopes="public"))
    with app.app_context():
        links.issue(user.id, user.email, links.PASSWORD_RESET, 600)
        db.session.commit()
    world.update(Application, setup.confidential_app.id, service_account_id=user.id)
    assert set(_referring(world, "user", [user.id])) >= {
        "scim_group_member.user_id",
        "mfa_factor.user_id",
        "recovery_code.user_id",
        "consent.user_id",
        "account_link.user_id",
        "application.service_account_id",
    }
    return user


def test_deleting_a_user_through_the_admin_api_leaves_no_row_that_refers_to_them(app, client, keys, setup, world):
    user = _everything_of(world, app, setup, "leaving@example.com")
    deleted = call(client, "delete", f"/users/{user.id}", keys.admin_key)
    assert deleted.status_code == 200, deleted.get_json()
    assert _referring(world, "user", [user.id]) == {}
    # The application bound to the account stays, unbound.
    (application,) = world.query(select(Application).where(Application.id == setup.confidential_app.id))
    assert application.service_account_id is None


def test_deleting_a_user_over_scim_leaves_no_row_that_refers_to_them(make_app, setup, world):
    app = make_app(AUTHSVC_SCIM_HARD_DELETE=True)
    admin = world.user(setup.domain, "it-admin@example.com", admin=True)
    app.test_client_class = HttpsClient
    scim = Scim(app, app.test_client(), world.api_key(admin, scopes="scim"))
    user = _everything_of(world, app, setup, "leaving@example.com")
    assert scim.delete(f"/Users/{user.id}").status_code == 204
    assert _referring(world, "user", [user.id]) == {}


def test_deleting_a_domain_leaves_no_row_that_refers_to_it_or_its_records(app, client, keys, setup, world):
    user = _everything_of(world, app, setup, "leaving@example.com")
    users = world.query(select(User.id).where(User.domain_id == setup.domain.id))
    applications = [setup.public_app.id, setup.confidential_app.id]
    groups = world.query(select(ScimGroup.id).where(ScimGroup.domain_id == setup.domain.id))
    deleted = call(client, "delete", f"/domains/{setup.domain.id}?force=true", keys.system_key, host=OTHER_HOST)
    assert deleted.status_code == 200, deleted.get_json()
    assert user.id in users
    for table, ids in (
        ("domain", [setup.domain.id]),
        ("user", users),
        ("application", applications),
        ("scim_group", groups),
    ):
        assert _referring(world, table, ids) == {}, table


@pytest.mark.skipif("sqlite" not in base_config()["SQLALCHEMY_DATABASE_URI"], reason="a SQLite upgrade")
def test_the_upgrade_keeps_every_row_and_makes_the_ids_autoincrement_on_sqlite(tmp_path):
    """A database made before the rule keeps its rows, indexes and constraints, and never reuses an id again."""
    app = create_app({**base_config(), "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'before.sqlite3'}"})
    migrations.install(app)
    with app.app_context():
        upgrade(revision="c5e1a9d3f7b2")  # the schema just before AUTOINCREMENT
        # Rows written in SQL, not through the models: they describe the schema of today's head.
        db.session.execute(
            sql(
                "INSERT INTO domain (name, host, scopes, mfa_require, profile, created_at)"
                " VALUES ('d', 'd.example', 'public', 'off', 'standard', 0)"
            )
        )
        domain = SimpleNamespace(id=db.session.execute(sql("SELECT id FROM domain")).scalar_one())
        for email in ("first@example.com", "newest@example.com"):
            db.session.execute(
                sql(
                    'INSERT INTO "user" (domain_id, email, email_verified, name, service_account, admin, support,'
                    " groups, disabled, system_admin, sessions_valid_after, created_at)"
                    " VALUES (:domain, :email, true, '', false, false, false, '[\"a\"]', false, false, 0, 0)"
                ),
                {"domain": domain.id, "email": email},
            )
        db.session.commit()
        before = db.session.execute(sql('SELECT * FROM "user" ORDER BY id')).all()
        indexes = set(db.session.execute(sql("SELECT name FROM sqlite_master WHERE type = 'index'")).scalars())
        upgrade(revision="e5c1a9d7b3f2")  # that migration alone: later ones add their own indexes
        after = db.session.execute(sql('SELECT * FROM "user" ORDER BY id')).all()
        tables = dict(db.session.execute(sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'")).all())
        assert set(db.session.execute(sql("SELECT name FROM sqlite_master WHERE type = 'index'")).scalars()) == indexes
        # The unique constraint on (domain, e-mail) survived the rebuild.
        duplicate = sql(
            'INSERT INTO "user" (domain_id, email, name, service_account, admin, support, groups, disabled,'
            " sessions_valid_after, created_at) VALUES (:domain, 'first@example.com', '', 0, 0, 0, '[]', 0, 0, 0)"
        )
        with pytest.raises(Exception, match="UNIQUE"):
            db.session.execute(duplicate, {"domain": domain.id})
        db.session.rollback()
        newest = max(row.id for row in after)
        db.session.execute(sql('DELETE FROM "user" WHERE id = :id'), {"id": newest})
        db.session.execute(
            sql(
                'INSERT INTO "user" (domain_id, email, name, service_account, admin, support, groups, disabled,'
                " sessions_valid_after, created_at) VALUES (:domain, 'next@example.com', '', 0, 0, 0, '[]', 0, 0, 0)"
            ),
            {"domain": domain.id},
        )
        next_id = db.session.execute(sql("SELECT id FROM \"user\" WHERE email = 'next@example.com'")).scalar_one()
        db.session.rollback()
        db.engine.dispose()
    assert after == before
    assert next_id > newest
    for table in KEPT:
        assert "AUTOINCREMENT" in tables[table], table
