"""A typed address names its account in any spelling of the one address, and stored addresses are in that form.

An address is stored in its normal form (authsvc.core.validation.email: lower case, Unicode NFC,
the domain in its Unicode form). A person may type it another way (a decomposed accent from
their keyboard, the ``xn--`` form of the domain from a password manager): sign-in must find the
same account, never none, and never another (docs/security.md, "E-mail addresses").
"""

from __future__ import annotations

import logging

import pytest
from flask_migrate import upgrade
from sqlalchemy import text as sql

from authsvc import create_app
from authsvc.cli import migrations
from authsvc.core.database import db
from tests.helpers import PASSWORD, base_config, headers

STORED = "josé@bücher.de"
# The same address: a decomposed accent, upper case, the domain's ACE (xn--) form, spaces around.
TYPED = " JOSE\u0301@XN--BCHER-KVA.DE "


@pytest.fixture
def jose(world, setup):
    return world.user(setup.domain, STORED)


def test_the_signin_endpoint_finds_the_account_by_any_spelling_of_its_address(client, jose):
    response = client.post("/auth/signin", query_string={"email": TYPED, "password": PASSWORD}, headers=headers())
    assert response.status_code == 202, response.get_json()
    assert response.get_json()["id"] == str(jose.id)


def test_the_password_grant_finds_the_account_by_any_spelling_of_its_address(client, world, setup):
    world.user(setup.domain, STORED, service_account=True)  # the password grant is for service accounts
    body = {"grant_type": "password", "username": TYPED, "password": PASSWORD, "client_id": setup.public_app.client_id}
    response = client.post("/auth/oauth/token", json=body, headers=headers())
    assert response.status_code == 200, response.get_json()


def test_another_spelling_with_a_wrong_password_is_refused_as_a_wrong_password(client, jose):
    response = client.post("/auth/signin", query_string={"email": TYPED, "password": "wrong"}, headers=headers())
    assert response.status_code == 401, response.get_json()


@pytest.mark.skipif("sqlite" not in base_config()["SQLALCHEMY_DATABASE_URI"], reason="a SQLite upgrade")
def test_the_upgrade_stores_old_rows_in_the_normal_form_and_never_merges_two_accounts(tmp_path, caplog):
    """Rows written before the normal form are rewritten to it, unless it is another row's address: then both
    stay as they are (and the ids are logged), since merging two accounts would hand one person's to another."""
    app = create_app({**base_config(), "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'before.sqlite3'}"})
    migrations.install(app)
    with app.app_context():
        upgrade(revision="e5c1a9d7b3f2")  # the schema before the data was normalised
        db.session.execute(
            sql(
                "INSERT INTO domain (name, host, scopes, mfa_require, profile, created_at)"
                " VALUES ('d', 'd.example', 'public', 'off', 'standard', 0)"
            )
        )
        domain_id = db.session.execute(sql("SELECT id FROM domain")).scalar_one()
        stored = [
            "jose\u0301@example.com",  # decomposed: alone, becomes josé@example.com
            "ada@xn--bcher-kva.de",  # alone, becomes ada@bücher.de
            "bob@xn--bcher-kva.de",  # bob@bücher.de is another row: both left
            "bob@bücher.de",
            "carol@xn--bcher-kva.de",  # carol@ both ways, and not yet normal either: both left
            "carol@bu\u0308cher.de",
            "plain@example.com",
            "not an address",
        ]
        for email in stored:
            db.session.execute(
                sql(
                    'INSERT INTO "user" (domain_id, email, name, service_account, admin, support, groups, disabled,'
                    " sessions_valid_after, created_at) VALUES (:domain, :email, '', 0, 0, 0, '[]', 0, 0, 0)"
                ),
                {"domain": domain_id, "email": email},
            )
        ids = dict(db.session.execute(sql('SELECT email, id FROM "user"')).all())
        db.session.execute(
            sql(
                "INSERT INTO account_link (digest, purpose, user_id, email, created_at, expires_at)"
                " VALUES ('d1', 'email_verify', :user, :email, 0, 0)"
            ),
            {"user": ids["ada@xn--bcher-kva.de"], "email": "ada@xn--bcher-kva.de"},
        )
        db.session.commit()
        with caplog.at_level(logging.WARNING, logger="authsvc.migrations"):
            upgrade(revision="f1b8c4e2a7d9")
        after = dict(db.session.execute(sql('SELECT id, email FROM "user"')).all())
        link = db.session.execute(sql("SELECT email FROM account_link")).scalar_one()
        db.engine.dispose()
    assert {email: after[ids[email]] for email in stored} == {
        "jose\u0301@example.com": "josé@example.com",
        "ada@xn--bcher-kva.de": "ada@bücher.de",
        "bob@xn--bcher-kva.de": "bob@xn--bcher-kva.de",
        "bob@bücher.de": "bob@bücher.de",
        "carol@xn--bcher-kva.de": "carol@xn--bcher-kva.de",
        "carol@bu\u0308cher.de": "carol@bu\u0308cher.de",
        "plain@example.com": "plain@example.com",
        "not an address": "not an address",
    }
    assert link == "ada@bücher.de"
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    bob = sorted([ids["bob@xn--bcher-kva.de"], ids["bob@bücher.de"]])
    carol = sorted([ids["carol@xn--bcher-kva.de"], ids["carol@bu\u0308cher.de"]])
    assert f"users {bob[0]}, {bob[1]} of domain {domain_id}" in " ".join(warnings)
    assert f"users {carol[0]}, {carol[1]} of domain {domain_id}" in " ".join(warnings)
    assert not any("@" in message for message in warnings)
