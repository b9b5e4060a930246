"""A grant's one write racing another change (authsvc.tokens.rows): what the client is told, what is stored.

The exchange reads its rows first and writes once; between the two, another
connection may delete the code's user, or another exchange may claim the
refresh token. Both are driven here on PostgreSQL, whose write runs in
autocommit and enforces the foreign keys.
"""

import time

import pytest
from sqlalchemy import create_engine, event, select, text

from authsvc.core import audit, security
from authsvc.core.database import db
from authsvc.core.models import AuditRecord, Token
from authsvc.tokens import revocation
from authsvc.tokens import rows as token_rows
from tests.helpers import BACKEND, DATABASE_URL, get_code, headers, signin
from tests.helpers.code_exchange import exchange, refresh, tokens_for
from tests.helpers.counting import trips

pytestmark = pytest.mark.skipif(
    BACKEND != "postgresql", reason="the write in autocommit and the foreign keys are PostgreSQL's"
)


def test_a_code_whose_user_is_deleted_during_the_exchange_is_refused_as_gone_not_as_a_replay(app, client, setup, world):
    signin(client)
    code = get_code(client, setup.public_app.client_id)
    engine = create_engine(DATABASE_URL, isolation_level="AUTOCOMMIT")

    # The user deleted by another connection after the exchange read it, just before the exchange's write.
    def delete_the_user(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().startswith("WITH") and "spent_code" in statement:
            with engine.connect() as other:
                other.execute(text('DELETE FROM "user" WHERE id = :id'), {"id": setup.person.id})

    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", delete_the_user)
    try:
        response = exchange(client, setup.public_app.client_id, code)
    finally:
        with app.app_context():
            event.remove(db.engine, "before_cursor_execute", delete_the_user)
        engine.dispose()
    assert response.status_code == 400, response.get_json()
    assert response.get_json() == {
        "error": "invalid_grant",
        "error_description": "The user or application of this authorization code no longer exists.",
    }
    assert world.query(select(Token).where(Token.application_id == setup.public_app.id)) == []
    assert world.query(select(AuditRecord).where(AuditRecord.event == "code.replayed")) == []


def test_after_a_lost_claim_the_reuses_revocation_and_its_record_are_one_transaction(
    app, client, setup, world, monkeypatch
):
    first = tokens_for(client, setup)
    assert refresh(client, setup.public_app.client_id, first["refresh_token"]).status_code == 200  # claimed
    [original] = world.query(select(Token).where(Token.access_token_digest == security.digest(first["access_token"])))
    issued = int(time.time())
    successor = dict.fromkeys(token_rows.TOKEN_COLUMNS) | {
        "application_id": original.application_id,
        "user_id": original.user_id,
        "access_token_digest": security.digest("a successor"),
        "refresh_token_digest": security.digest("its refresh token"),
        "family": original.family,
        "grant_type": "refresh_token",
        "scope": original.scope,
        "issued_at": issued,
        "expires_in": 3600,
        "purgeable_at": issued + 3600,
    }
    with app.test_request_context(headers=headers()):
        lost = token_rows.insert_token_and_record(
            successor, "token.refreshed", domain_id=setup.domain.id, actor="client:x", details={}, claim=original.id
        )
        assert lost is False
        # What the grant writes next for a reuse outside the grace (authsvc.tokens.refresh.judge_reuse).
        with trips(app, monkeypatch) as counted:
            revocation.revoke_family(original.family)
            audit.record("refresh_token.reused", domain_id=setup.domain.id, actor="client:x", commit=False)
            db.session.commit()
    assert counted.sql_trips() == ["BEGIN", "UPDATE", "INSERT", "COMMIT"], counted
    assert len(world.query(select(Token).where(Token.family == original.family))) == 2  # no successor written


def test_an_approval_racing_the_same_persons_approval_of_the_same_client_is_one_approval(app, client, setup, world):
    """Two requests approving the same client for the same person (two tabs, a retry): the later one's INSERT
    meets the earlier one's row; its scopes are added to that row and the person gets the code, not a 500."""
    from authsvc.core.models import Application, Consent
    from tests.helpers import authorize, location_params
    from tests.helpers.pages import csrf_token

    world.update(Application, setup.public_app.id, consent=True)
    signin(client)
    page = authorize(client, setup.public_app.client_id)
    assert page.status_code == 200, page.get_data(as_text=True)
    engine = create_engine(DATABASE_URL, isolation_level="AUTOCOMMIT")

    # The other request's approval lands after this one found none, just before this one's INSERT.
    def approve_elsewhere(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().startswith("INSERT INTO consent"):
            with engine.connect() as other:
                other.execute(
                    text("INSERT INTO consent (user_id, application_id, scopes, created_at) VALUES (:u, :a, 'x', 0)"),
                    {"u": setup.person.id, "a": setup.public_app.id},
                )

    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", approve_elsewhere)
    try:
        approved = client.post(
            page.request.full_path, data={"csrf_token": csrf_token(page), "approve": "1"}, headers=headers()
        )
    finally:
        with app.app_context():
            event.remove(db.engine, "before_cursor_execute", approve_elsewhere)
        engine.dispose()
    assert approved.status_code == 302, approved.get_data(as_text=True)
    assert "code" in location_params(approved)
    [consent] = world.query(select(Consent))
    assert consent.scopes == "x public"
