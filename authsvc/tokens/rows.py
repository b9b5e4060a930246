"""A token's row and its audit record, written together: one statement on PostgreSQL.

Every grant saves the token it issues with an audit record of it, in one
transaction, so that neither is ever stored without the other; the code
exchange also notes its code spent (authsvc.tokens.spent_codes), and a
refresh claims the refresh token it spends. authsvc.tokens.issue is the one
caller. On PostgreSQL all of
a grant's writes go in one statement, a data-modifying ``WITH`` whose
``RETURNING`` gives the record's id and target: one round trip (and one
statement for the server to run) for what took two to four, the largest part
of whose cost is the round trip itself (docs/performance.md); and when
nothing else of the request is in a transaction (its rows were read on the
readers: authsvc.core.readers.entities), no BEGIN and COMMIT around it either.
SQLite has no INSERT inside a ``WITH``: there the statements run one after
the other, in the same transaction.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from sqlalchemy import Insert, String, Table, bindparam, insert, literal, select, update
from sqlalchemy import cast as sql_cast

from authsvc.core import audit
from authsvc.core.database import AUTOCOMMIT, db, session_connection
from authsvc.core.models import AuditRecord, SpentCode, Token

_token, _record = cast(Table, Token.__table__), cast(Table, AuditRecord.__table__)
_spent = cast(Table, SpentCode.__table__)


class TokenRow(TypedDict):
    """A token's row as a grant's write inserts it (authsvc.tokens.issue fills it); every other column has its
    default. Digests only, never a token's value."""

    application_id: int
    user_id: int | None
    access_token_digest: str
    refresh_token_digest: str | None
    family: str
    grant_type: str
    scope: str
    issued_at: int
    expires_in: int
    refresh_expires_at: int | None
    grant_expires_at: int | None
    purgeable_at: int
    auth_time: int | None
    amr: list[str] | None
    sid: str | None
    dpop_jkt: str | None
    audience: str | None
    resources: str | None
    act: dict[str, Any] | None


class SpentCodeRow(TypedDict):
    """A spent code's row (authsvc.tokens.spent_codes), in parameters named apart from the token's columns
    (the token's ``family`` is the same value as ``spent_family``)."""

    spent_digest: str
    spent_family: str
    spent_until: int


class Claim(TypedDict):
    """A refresh token's claim: the row ``claim_id``, refreshed at ``claimed_at`` (its successor's issued_at)."""

    claim_id: int
    claimed_at: int


TOKEN_COLUMNS = tuple(TokenRow.__annotations__)
_RECORD_COLUMNS = ("at", "domain_id", "event", "actor", "ip", "details")
TARGET_PREFIX = "token:"

# Built once: a statement made per request costs its construction and cache key each time.
INSERT_TOKEN = insert(_token)
# The spent code's row, in parameters of their own (the token's ``family`` is the same value, by another name):
# SQLite's statement, and PostgreSQL's CTE.
SPEND_CODE = insert(_spent).values(
    digest=bindparam("spent_digest"), family=bindparam("spent_family"), expires_at=bindparam("spent_until")
)
# A refresh token claimed: of two concurrent exchanges of it exactly one updates the row.
CLAIM_REFRESH = (
    update(_token)
    .where(_token.c.id == bindparam("claim_id"), _token.c.refreshed_at.is_(None), _token.c.revoked_at.is_(None))
    .values(refreshed_at=bindparam("claimed_at"))
)
_CLAIMED = CLAIM_REFRESH.returning(_token.c.id).cte("claimed")
_TOKEN_VALUES = {c: bindparam(c, type_=_token.c[c].type) for c in TOKEN_COLUMNS}
_SPENT_CODE = SPEND_CODE.returning(_spent.c.digest).cte("spent_code")


def _with_record(new_token: Any) -> Insert:
    """The audit record of the token that the CTE ``new_token`` inserts, returning the record's id and target."""
    return (
        insert(_record)
        .from_select(
            [*_RECORD_COLUMNS, "target"],
            select(
                *(bindparam(c, type_=_record.c[c].type) for c in _RECORD_COLUMNS),
                (literal(TARGET_PREFIX) + sql_cast(new_token.c.id, String)).label("target"),
            ),
        )
        .returning(_record.c.id, _record.c.target)
    )


_NEW_TOKEN = insert(_token).values(_TOKEN_VALUES).returning(_token.c.id).cte("new_token")
INSERT_TOKEN_AND_RECORD = _with_record(_NEW_TOKEN)
# The code exchange: the code's row too. A code spent before fails the statement on its primary key, and
# nothing of it is written.
SPEND_CODE_AND_INSERT = INSERT_TOKEN_AND_RECORD.add_cte(_SPENT_CODE)
# A refresh: the successor is inserted only from the row the claim updated, so a claim lost to another
# exchange writes nothing and returns no row.
# Its values are named apart from the columns: SQLAlchemy would add an UPDATE's SET clause for every
# parameter of the execution named as a column of the table.
_SUCCESSOR = {f"new_{c}": c for c in TOKEN_COLUMNS}
CLAIM_AND_INSERT = _with_record(
    insert(_token)
    .from_select(
        list(TOKEN_COLUMNS),
        select(*(bindparam(name, type_=_token.c[c].type) for name, c in _SUCCESSOR.items())).select_from(_CLAIMED),
    )
    .returning(_token.c.id)
    .cte("new_token")
)


def one_statement(
    row: TokenRow, record: audit.AuditValues, spent_code: SpentCodeRow | None, claimed: Claim | None
) -> tuple[Insert, dict[str, Any]]:
    """PostgreSQL's one statement for a grant's writes, and its parameters: the token ``row``, its audit
    ``record``'s values, and the spent code's or the claim's when there is one."""
    if claimed is not None:
        columns = cast(dict[str, Any], row)
        successor = {name: columns[column] for name, column in _SUCCESSOR.items()}
        return CLAIM_AND_INSERT, {**successor, **record, **claimed}
    if spent_code is not None:
        return SPEND_CODE_AND_INSERT, {**row, **record, **spent_code}
    return INSERT_TOKEN_AND_RECORD, {**row, **record}


def insert_token_and_record(
    row: TokenRow,
    event: str,
    *,
    domain_id: int,
    actor: str,
    details: dict[str, Any],
    spent_code: SpentCodeRow | None = None,
    claim: int | None = None,
) -> bool:
    """Insert the token ``row`` and its audit record ``event`` (target ``token:<id>``) in the session's transaction.

    ``spent_code``: the code exchanged (``spent_digest``, ``spent_family``, ``spent_until``), noted in the
    same statement; one noted before raises IntegrityError. ``claim``: the id of the refresh token this one
    succeeds, claimed first; False when another exchange claimed it (nothing is written, and the session is
    rolled back: in autocommit, its connection let go). The record is published once the transaction commits, as
    ``audit.record_in_transaction`` does.
    """
    session = db.session()
    values = audit.record_values(event, domain_id=domain_id, actor=actor, details=details)
    claimed = Claim(claim_id=claim, claimed_at=row["issued_at"]) if claim is not None else None
    if session.get_bind().dialect.name != "postgresql":
        connection = session.connection()
        if claimed is not None and connection.execute(CLAIM_REFRESH, claimed).rowcount != 1:
            session.rollback()
            return False
        if spent_code is not None:
            connection.execute(SPEND_CODE, spent_code)
        token_id = connection.execute(INSERT_TOKEN, row).inserted_primary_key[0]  # type: ignore[index]  # one row
        values["target"] = f"{TARGET_PREFIX}{token_id}"
        audit.record_in_transaction(values)
        return True
    # Nothing of the request in a transaction (its rows came from the readers) and nothing of it waiting to be
    # flushed: the one statement is a transaction of its own, without BEGIN and COMMIT, and its record is
    # published at once (a failure after it cannot take back what it committed). Changes waiting to be flushed
    # go in one transaction with the token instead.
    connected = session_connection()
    if connected is None and not (session.new or session.dirty or session.deleted):
        connection, autocommit = session.connection(execution_options={"isolation_level": "AUTOCOMMIT"}), True
    else:
        connection, autocommit = session.connection(), connected == AUTOCOMMIT
    statement, parameters = one_statement(row, values, spent_code, claimed)
    inserted = connection.execute(statement, parameters).one_or_none()
    if inserted is None:  # the claim lost
        # Also in autocommit: the session lets the connection go, so what the caller writes next (a reuse's
        # revocation and its audit record) is one transaction again, not two statements committed apart.
        session.rollback()
        return False
    ident, values["target"] = inserted
    (audit.note_committed if autocommit else audit.note_inserted)(ident, values)
    return True
