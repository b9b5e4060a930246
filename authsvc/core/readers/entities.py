"""Rows read on the readers and made into the session's entities, without a second SELECT.

Used by the grants (a row or two per request: the client with its domain,
the code's user, the refresh token with its user) and by a session's user. ``read_one``
(authsvc.core.readers.pool) runs each as a prepared statement in autocommit: one
round trip, no SQLAlchemy execution around it, and no transaction, so the
grant's one write can run in autocommit as well (authsvc.tokens.rows):
no BEGIN and COMMIT round trips. The row's columns become the session's
entities as if the ORM had loaded them (``make_transient_to_detached``);
an entity the session holds already is kept, as a query would keep it.
Nothing is cached: every request reads its rows.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import ColumnElement, Integer, Label, Table, bindparam, inspect, select
from sqlalchemy.orm import make_transient_to_detached

from authsvc.core.database import db
from authsvc.core.models import User
from authsvc.core.readers.pool import read_one

_user = cast(Table, User.__table__)


def columns(table: Table, prefix: str) -> tuple[Label[Any], ...]:
    """Every column of ``table``, labelled ``prefix`` + its key (for ``entity``)."""
    return tuple(c.label(f"{prefix}{c.key}") for c in table.c)


def keys(table: Table) -> tuple[str, ...]:
    return tuple(c.key for c in table.c)


# A user's columns, and whether a directory vouches for it (an EXISTS the ORM reads with the user).
USER_KEYS = (*keys(_user), "directory_linked")
USER_COLUMNS = (
    *columns(_user, "u_"),
    cast(ColumnElement[bool], User.__mapper__.column_attrs["directory_linked"].expression).label("u_directory_linked"),
)
_USER_BY_ID = select(*USER_COLUMNS).where(_user.c.id == bindparam("user_id", type_=Integer))


def held(model: type[Any], ident: Any) -> Any:
    """The session's ``model`` entity of primary key ``ident``, if it holds one; None otherwise."""
    session = db.session()
    return session.identity_map.get(session.identity_key(model, ident))


def entity(model: type[Any], row: Any, prefix: str, names: tuple[str, ...]) -> tuple[Any, bool]:
    """The session's ``model`` entity of ``row``'s columns named ``prefix`` + name, and whether it was made now."""
    kept = held(model, getattr(row, f"{prefix}id"))
    if kept is not None:
        return kept, False
    made = model()
    # The row's values go in as a query's loading puts them (InstanceState.dict), not through each
    # attribute's set events (history, validators); then, as if loaded: no change to flush, and in the
    # session's identity map.
    inspect(made).dict.update({name: getattr(row, prefix + name) for name in names})
    make_transient_to_detached(made)
    db.session().add(made)
    return made, True


def user(user_id: int) -> User | None:
    """The user ``user_id`` (as ``Session.get`` answers it: the held one, else one statement), or None."""
    kept = held(User, user_id)
    if kept is not None:
        return cast(User, kept)
    row = read_one(_USER_BY_ID, {"user_id": str(user_id)})
    return None if row is None else cast(User, entity(User, row, "u_", USER_KEYS)[0])
