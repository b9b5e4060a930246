"""The credential behind a presented token or API key: one statement each, read by authsvc.tokens.presented.

``find_token`` and ``find_api_key`` answer a ``Credential`` (the token's or key's
claims, its user and the domain chosen by host) or None: the rows are the tokens
package's reads, what they mean (expiry, the secret's compare, permissions) is
decided here; ``authsvc.api.lookup`` decides what a request presents and whether
it may. Nothing is cached: a revoked credential fails on its next use, on every worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from authsvc.core import security, validation
from authsvc.core.database import db, now
from authsvc.core.models import STANDARD_PROFILE, User, capped_permissions
from authsvc.core.permissions import Permission
from authsvc.core.readers.pool import Readers
from authsvc.tokens import api_keys, presented

# An API key's last_used_at moves at most once per this many seconds: a busy
# key costs no write per request, and the column still says "in use lately".
LAST_USED_RESOLUTION = 60


@dataclass
class Claimant:
    """The user fields the claims need, read in the same statement as the credential."""

    id: int
    name: str
    email: str
    groups: list[str]


@dataclass
class Credential:
    kind: str  # "token" or "api_key"
    claimant: Claimant
    scopes: list[str]
    issued_at: int
    expires_at: int | None
    permissions: Permission
    audience: str | list[str]  # the host of the credential's domain, or a token's resources (RFC 8707)
    client_id: str | None = None
    api_key_id: str | None = None
    last_used_at: int | None = None  # an API key's, as read
    dpop_jkt: str | None = None  # a DPoP-bound token's key (RFC 9449: cnf.jkt)
    profile: str = STANDARD_PROFILE  # its domain's security profile
    act: dict[str, Any] | None = None  # a token exchange's actor (RFC 8693 4.1)
    resources: tuple[str, ...] = ()  # a token's resources (RFC 8707) as issued; none: for this service

    @property
    def admin(self) -> bool:
        return bool(self.permissions & Permission.ADMIN)

    @cached_property
    def user(self) -> User:
        """The user as a model, loaded only for the callers that act on it (inspect needs none)."""
        # A live credential's user is there: deleting a user deletes its credentials.
        return cast(User, db.session.get(User, self.claimant.id))


def audience_claim(stored_audience: str | None, host: str) -> str | list[str]:
    """A token's ``aud``: its one resource (RFC 8707), or the list of them; the domain's host without any."""
    if not stored_audience:
        return host
    items = stored_audience.split()
    return items[0] if len(items) == 1 else items


def _claimant(row: presented.Claimant) -> Claimant:
    return Claimant(id=row.id, name=row.name, email=row.email, groups=list(row.groups or []))


def _user_permissions(row: presented.Claimant) -> Permission:
    return Permission.of(support=row.support, admin=row.admin)


# The lookups below need no Flask request: inspect's WSGI fast path
# (authsvc.api.fastpath) calls them too, with the app's readers.


def find_token(value: str, host: str, default_host: str | None, readers: Readers | None = None) -> Credential | None:
    """The live access token ``value`` of the domain of ``host`` (else ``default_host``), or None."""
    row = presented.token_claims(value, host, default_host, readers)
    if row is None or now() >= row.issued_at + row.expires_in:
        return None
    return Credential(
        kind="token",
        claimant=_claimant(row),
        scopes=row.scope.split(),
        issued_at=row.issued_at,
        expires_at=row.issued_at + row.expires_in,
        permissions=_user_permissions(row),
        audience=audience_claim(row.audience, row.aud),
        client_id=row.client_id,
        dpop_jkt=row.dpop_jkt,
        profile=row.profile,
        act=row.act,
        resources=tuple((row.audience or "").split()),
    )


def find_api_key(value: str, host: str, default_host: str | None, readers: Readers | None = None) -> Credential | None:
    """The live API key ``value`` (``<id>.<secret>``) of the domain of ``host`` (else ``default_host``), or None."""
    key_id, _, secret = value.partition(".")
    well_formed = bool(secret) and validation.text_id(key_id)
    row = presented.api_key_claims(key_id, host, default_host, readers) if well_formed else None
    # Compare even when the key is unknown, so that timing does not tell.
    matches = security.digest_matches(secret, row.secret_digest if row else "0" * 64)
    if (
        row is None
        or not matches
        or row.revoked_at is not None
        or (row.expires_at is not None and now() >= row.expires_at)
        or row.disabled
    ):
        return None
    return Credential(
        kind="api_key",
        claimant=_claimant(row),
        scopes=row.scopes.split(),
        issued_at=row.created_at,
        expires_at=row.expires_at,
        permissions=capped_permissions(row.permission, _user_permissions(row)),
        audience=row.aud,
        api_key_id=key_id,
        last_used_at=row.last_used_at,
        profile=row.profile,
    )


def use_to_note(credential: Credential) -> bool:
    """Whether an API key's ``last_used_at`` is due to move (at most once per LAST_USED_RESOLUTION)."""
    last = credential.last_used_at
    return credential.kind == "api_key" and (last is None or last <= now() - LAST_USED_RESOLUTION)


def note_use(credential: Credential) -> None:
    """Record that the API key was used.

    The row just read said a write is due; the UPDATE's own condition settles
    a race between workers, so at most one of them writes.
    """
    moment = now()
    api_keys.note_use(cast(str, credential.api_key_id), moment - LAST_USED_RESOLUTION, moment)
