"""A token's row and its audit record, written together: one statement on PostgreSQL.

Every grant saves the token it issues with an audit record of it, in one
transaction, so that neither is ever stored without the other. On
PostgreSQL both go in one statement, a data-modifying ``WITH`` whose
``RETURNING`` gives the record's id and target: one round trip (and one
statement for the server to run) fewer on every token request than two
INSERTs, the largest part of whose cost is the round trip itself
(docs/performance.md); and when nothing else of the request is in a
transaction, no BEGIN and COMMIT around it either. SQLite has no INSERT
inside a ``WITH``: there the two INSERTs run one after the other, in the
same transaction.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import String, Table, bindparam, insert, literal, select
from sqlalchemy import cast as sql_cast

from authsvc.core import audit
from authsvc.core.database import db, holds_connection
from authsvc.core.models import AuditRecord, Token

_token, _record = cast(Table, Token.__table__), cast(Table, AuditRecord.__table__)

# The columns save_token fills in; every other one has its default.
TOKEN_COLUMNS = (
    "application_id",
    "user_id",
    "access_token_digest",
    "refresh_token_digest",
    "family",
    "grant_type",
    "scope",
    "issued_at",
    "expires_in",
    "refresh_expires_at",
    "grant_expires_at",
    "purgeable_at",
    "auth_time",
    "amr",
    "sid",
    "dpop_jkt",
    "audience",
    "resources",
)
_RECORD_COLUMNS = ("at", "domain_id", "event", "actor", "ip", "details")
TARGET_PREFIX = "token:"

# Built once: a statement made per request costs its construction and cache key each time.
INSERT_TOKEN = insert(_token)
_NEW_TOKEN = insert(_token).values({c: bindparam(c) for c in TOKEN_COLUMNS}).returning(_token.c.id).cte("new_token")
INSERT_TOKEN_AND_RECORD = (
    insert(_record)
    .from_select(
        [*_RECORD_COLUMNS, "target"],
        select(
            *(bindparam(c, type_=_record.c[c].type) for c in _RECORD_COLUMNS),
            (literal(TARGET_PREFIX) + sql_cast(_NEW_TOKEN.c.id, String)).label("target"),
        ),
    )
    .returning(_record.c.id, _record.c.target)
)


def insert_token_and_record(
    row: dict[str, Any], event: str, *, domain_id: int, actor: str, details: dict[str, Any]
) -> None:
    """Insert the token ``row`` and its audit record ``event`` (target ``token:<id>``) in the session's transaction.

    The record is published once the transaction commits, as ``audit.record_in_transaction`` does.
    """
    session = db.session()
    if session.get_bind().dialect.name != "postgresql":
        connection = session.connection()
        token_id = connection.execute(INSERT_TOKEN, row).inserted_primary_key[0]  # type: ignore[index]  # one row
        audit.record_in_transaction(
            event, domain_id=domain_id, actor=actor, target=f"{TARGET_PREFIX}{token_id}", details=details
        )
        return
    # Nothing of the request in a transaction (the client came from a reader, as in the client credentials
    # grant): the one statement is a transaction of its own, without BEGIN and COMMIT, and its record is
    # published at once (a failure after it cannot take back what it committed).
    autocommit = not holds_connection()
    connection = session.connection(execution_options={"isolation_level": "AUTOCOMMIT"} if autocommit else None)
    values = audit.record_values(event, domain_id=domain_id, actor=actor, details=details)
    ident, values["target"] = connection.execute(INSERT_TOKEN_AND_RECORD, {**row, **values}).one()
    (audit.note_committed if autocommit else audit.note_inserted)(ident, values)
