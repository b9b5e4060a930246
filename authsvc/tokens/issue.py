"""Issuing a token: a grant's typed record in, the token's row and audit record written, a typed outcome out.

Every grant ends here. The row (digests only, never the values), its audit
record and, for a code exchange, the spent code or, for a refresh, the claim
of the token it succeeds, go in one transaction (one statement on PostgreSQL:
authsvc.tokens.rows). What can go wrong is an answer, not an exception: the
grant that asked decides what its client is told.
"""

from __future__ import annotations

import enum
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError

from authsvc.core import actors, security
from authsvc.core.database import commit_keeping_loaded, db
from authsvc.core.models import TOKEN_EXCHANGE_GRANT_TYPE, Application, User
from authsvc.core.settings import settings
from authsvc.tokens import rows, spent_codes

log = logging.getLogger(__name__)


def new_family() -> str:
    """A new grant's family (``Token.family``): the time in nanoseconds, in hex, then 128 random bits.

    Time first, so that ``ix_token_family`` takes each new entry at its right edge, as the primary key does,
    not on a random leaf page: after each checkpoint a page's first change writes the whole page to the
    write-ahead log (8 kB), so a random key pays that on nearly every insert once the table is large
    (bench/README.md, "Client credentials: where a request's work goes"). The random part keeps two grants
    of the same nanosecond apart. Not a secret: a family is never shown to a client, only matched to revoke.
    Used by the grants that start a family (here, and the code exchange: authsvc.oauth.grants).
    """
    return f"{time.time_ns():016x}{secrets.token_hex(16)}"


class Outcome(enum.Enum):
    ISSUED = "issued"
    # A refresh: another exchange claimed the refresh token since it was read. Nothing was written.
    CLAIM_LOST = "claim_lost"
    # A code exchange: an earlier exchange spent the code (a replay); what it produced is revoked. Nothing written.
    CODE_SPENT = "code_spent"
    # A code exchange: the code's user or application was deleted since they were read. Nothing written.
    GONE = "gone"


@dataclass
class Lineage:
    """What ties the tokens a grant issues to the grant before them: set by the code and refresh grants.

    ``family``: the authorisation grant the tokens join (new when None).
    ``grant_expires_at``: the grant's end, set once at the authorisation and
    carried across rotation (None: the client's refresh lifetime from now).
    ``claim``: the id of the refresh token this exchange spends, claimed in
    the statement that writes its successor. ``spent_code``: the code this
    exchange spends, noted in the same statement. ``auth_time``, ``amr`` and
    ``sid``: the sign-in behind the grant (OpenID Connect), carried from the
    code to every refreshed token.
    """

    family: str | None = None
    grant_expires_at: int | None = None
    claim: int | None = None
    spent_code: str | None = None
    auth_time: int | None = None
    amr: list[str] | None = None
    sid: str | None = None


@dataclass(frozen=True)
class Issue:
    """What a grant asks to be issued: the token response's values, for whom, and under which grant."""

    client: Application
    user: User | None
    grant_type: str
    access_token: str
    refresh_token: str | None
    scope: str
    issued_at: int
    expires_in: int
    # The client's refresh (grant) lifetime, for a grant that starts now.
    refresh_ttl: int
    lineage: Lineage = field(default_factory=Lineage)
    # RFC 9449: the thumbprint of the key the tokens are bound to.
    dpop_jkt: str | None = None
    # RFC 8707: what the access token is for, and the resources the grant allows.
    audience: list[str] | None = None
    resources: list[str] | None = None
    # RFC 8693 4.1: a token exchange's actor (nested for a chain); also in its audit record.
    act: dict[str, Any] | None = None


@dataclass(frozen=True)
class Issued:
    outcome: Outcome
    family: str


_EVENTS = {"refresh_token": "token.refreshed", TOKEN_EXCHANGE_GRANT_TYPE: "token.exchanged"}


def issue(asked: Issue) -> Issued:
    """Write the token ``asked`` for with its audit record, in one transaction, and commit it."""
    family = asked.lineage.family or new_family()
    spent = spent_codes.row(asked.lineage.spent_code, family) if asked.lineage.spent_code else None
    client = asked.client
    details: dict[str, Any] = {"grant_type": asked.grant_type, "client_id": client.client_id, "scope": asked.scope}
    if asked.act is not None:
        details["act"] = asked.act
    try:
        saved = rows.insert_token_and_record(
            _row(asked, family),
            _EVENTS.get(asked.grant_type, "token.issued"),
            domain_id=client.domain_id,
            # A client_credentials token is the application's doing, though it acts as its service account.
            actor=actors.of_client(client.client_id)
            if asked.grant_type == "client_credentials" or not asked.user
            else actors.of_user(asked.user.id),
            details=details,
            spent_code=spent,
            claim=asked.lineage.claim,
        )
    except IntegrityError as failure:
        if spent is None:
            raise
        return Issued(_refused_exchange(client, spent["spent_digest"], failure), family)
    if not saved:
        return Issued(Outcome.CLAIM_LOST, family)
    # The client and the user stay loaded: an ID token and the replay check read them next.
    commit_keeping_loaded()
    return Issued(Outcome.ISSUED, family)


def _row(asked: Issue, family: str) -> rows.TokenRow:
    """The token's row: digests, lifetimes and the grant it belongs to."""
    issued = asked.issued_at
    access_expires_at = issued + asked.expires_in
    refresh_expires_at = grant_expires_at = None
    if asked.refresh_token:
        # The grant's end is set once, at the authorisation, and carried
        # across rotation; each refresh token also ends after the idle time.
        grant_expires_at = asked.lineage.grant_expires_at or issued + asked.refresh_ttl
        refresh_expires_at = grant_expires_at
        idle = settings().refresh_idle_ttl
        if idle > 0:
            refresh_expires_at = min(grant_expires_at, issued + idle)
    lineage = asked.lineage
    return rows.TokenRow(
        application_id=asked.client.id,
        user_id=asked.user.id if asked.user else None,
        access_token_digest=security.digest(asked.access_token),
        refresh_token_digest=security.digest(asked.refresh_token) if asked.refresh_token else None,
        family=family,
        grant_type=asked.grant_type,
        scope=asked.scope,
        issued_at=issued,
        expires_in=asked.expires_in,
        refresh_expires_at=refresh_expires_at,
        grant_expires_at=grant_expires_at,
        purgeable_at=max(access_expires_at, refresh_expires_at or 0),
        auth_time=lineage.auth_time,
        amr=lineage.amr,
        sid=lineage.sid,
        dpop_jkt=asked.dpop_jkt,
        audience=stored(asked.audience),
        resources=stored(asked.resources),
        act=asked.act,
    )


def stored(resources: list[str] | None) -> str | None:
    """Resources as a token row keeps them: space separated (no resource indicator holds a space)."""
    return " ".join(resources) if resources else None


def from_stored(value: str | None) -> list[str] | None:
    """A token row's resources as a list; None when it names none."""
    return value.split() if value else None


def _refused_exchange(client: Application, digest: str, failure: IntegrityError) -> Outcome:
    """The exchange's write failed on a constraint: why.

    The code noted spent by an earlier exchange is a replay: what that
    exchange produced is revoked. Any other constraint (the code's user or
    application deleted since they were read: the token's foreign keys) is
    not: nothing is revoked.
    """
    db.session.rollback()
    family = spent_codes.earlier_family(digest)
    if family is None:
        constraint = getattr(getattr(failure.orig, "diag", None), "constraint_name", None)
        failed = constraint or type(failure.orig).__name__
        log.warning("code exchange refused: its write failed on %s, not on the code's single use", failed)
        return Outcome.GONE
    spent_codes.revoke_replayed(client, family)
    return Outcome.CODE_SPENT
