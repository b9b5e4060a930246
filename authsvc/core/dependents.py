"""Deleting rows with everything that refers to them, alike on PostgreSQL and SQLite.

SQLite runs here without ``PRAGMA foreign_keys``: neither a foreign key's ``ON DELETE CASCADE``
nor its refusal happens there, so a row left behind by a deletion would quietly point at
nothing, or at whoever gets the id next. Every deletion of a user, an application or a domain
therefore deletes what refers to it explicitly, found from the models' foreign keys: a table
added later is covered without being named here (docs/security.md, "Ids").
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Table, delete, update

from authsvc.core.database import db

# References that outlive what they name: set to NULL instead (an application bound to a deleted
# service account is left unbound; one registered with a deleted initial access token stays).
UNBOUND = frozenset({("application", "service_account_id"), ("application", "registration_token_id")})


def referring(table: str) -> list[tuple[Table, str]]:
    """Every (table, column) whose foreign key names ``table``, dependents first."""
    found = []
    for other in reversed(db.metadata.sorted_tables):
        for key in other.foreign_keys:
            if key.column.table.name == table and other.name != table:
                found.append((other, key.parent.name))
    return found


def delete_referrers(table: str, ids: int | str | ColumnElement[int] | ColumnElement[str]) -> None:
    """Delete the rows that refer to ``table``'s row ``ids`` (an id, or a subquery of ids), or unbind them.

    Not the rows themselves: the caller deletes them, after what it deletes through its own
    package (a user's tokens through authsvc.tokens), and commits.
    """
    for other, name in referring(table):
        column = other.c[name]
        condition = column == ids if isinstance(ids, int | str) else column.in_(ids)
        if (other.name, name) in UNBOUND:
            db.session.execute(update(other).where(condition).values({name: None}))
        else:
            db.session.execute(delete(other).where(condition))
