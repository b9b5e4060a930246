"""Finding a token by what a client presents: one condition per kind, read by every lookup of it.

Only a token's digest is stored (authsvc.core.security); the unique indexes
on the two digests make each lookup one index probe. Inspect's statement
(authsvc.tokens.presented), revocation and introspection (authsvc.oauth.revocation_introspection),
the bearer token of a request (authsvc.api.lookup) and the refresh grant
(authsvc.oauth.refresh_grant) all find a token by these two conditions.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import ColumnElement, Table, bindparam, select
from sqlalchemy.orm.attributes import set_committed_value

from authsvc.core import security
from authsvc.core.database import db
from authsvc.core.models import Application, Token, User
from authsvc.core.readers import entities
from authsvc.core.readers.pool import read_one

_TOKENS, _USERS = cast(Table, Token.__table__), cast(Table, User.__table__)

# The token whose access or refresh token has the digest ``digest`` (a bound parameter).
ACCESS_TOKEN: ColumnElement[bool] = _TOKENS.c.access_token_digest == bindparam("digest")
REFRESH_TOKEN: ColumnElement[bool] = _TOKENS.c.refresh_token_digest == bindparam("digest")

_ACCESS_TOKEN_ROW = select(Token).where(ACCESS_TOKEN)
_REFRESH_TOKEN_ROW = select(Token).where(REFRESH_TOKEN)


def access_token(value: str) -> Token | None:
    """The token row of access token ``value``, in the session; None if unknown."""
    return db.session.scalar(_ACCESS_TOKEN_ROW, {"digest": security.digest(value)})


def refresh_token(value: str) -> Token | None:
    """The token row of refresh token ``value``, in the session; None if unknown."""
    return db.session.scalar(_REFRESH_TOKEN_ROW, {"digest": security.digest(value)})


# The refresh grant's read: the token with its user (a LEFT JOIN), on the readers (authsvc.core.readers.entities).
# Its application is the client's, which the session holds (the client is found first): not joined again.
_TOKEN_KEYS = entities.keys(_TOKENS)
_REFRESH_TOKEN_WITH_USER = (
    select(*entities.columns(_TOKENS, "t_"), *entities.USER_COLUMNS)
    .select_from(_TOKENS.outerjoin(_USERS, _USERS.c.id == _TOKENS.c.user_id))
    .where(REFRESH_TOKEN)
)


def refresh_token_with_user(value: str) -> Token | None:
    """The token of refresh token ``value``, with its user, as the session's entities; None if unknown.

    One statement on the readers, so that the grant's one write can run in autocommit (authsvc.tokens.rows).
    """
    row = read_one(_REFRESH_TOKEN_WITH_USER, {"digest": security.digest(value)})
    if row is None:
        return None
    token, made = entities.entity(Token, row, "t_", _TOKEN_KEYS)
    if made:
        # Its relationships loaded, as the ORM's joined load leaves them. Another client's application is
        # not held: it loads when first read (and the token fails check_client).
        user = entities.entity(User, row, "u_", entities.USER_KEYS)[0] if row.u_id is not None else None
        set_committed_value(token, "user", user)
        application = entities.held(Application, token.application_id)
        if application is not None:
            set_committed_value(token, "application", application)
    return cast(Token, token)
