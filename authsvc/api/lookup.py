"""Credential lookup for API requests: bearer tokens, DPoP-bound tokens and API keys.

RFC 6750 2.1-2.3 places for a bearer token (header, query, cookie; the last as
docs/platform.md#inspect asks); API keys in ``X-API-Key``, ``api-key`` query or cookie.
A token bound to a DPoP key (RFC 9449 7) counts only as ``Authorization: DPoP <token>``
with a proof by that key for this request; anywhere else it is refused.
Nothing is cached: a revoked credential fails on its next use, on every worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from authlib.oauth2.rfc6750 import InvalidTokenError
from flask import request
from sqlalchemy import bindparam, or_, select, update

from authsvc.api import proofs
from authsvc.api.readers import Readers, read_one
from authsvc.core import security, validation
from authsvc.core.database import db, now
from authsvc.core.errors import ApiError
from authsvc.core.models import (
    FAPI2_PROFILE,
    STANDARD_PROFILE,
    ApiKey,
    Application,
    Domain,
    Token,
    User,
    capped_permissions,
)
from authsvc.core.permissions import Permission
from authsvc.core.tenancy import REQUEST_DOMAIN, current_domain, request_domain_parameters, request_host

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

    @property
    def admin(self) -> bool:
        return bool(self.permissions & Permission.ADMIN)

    @cached_property
    def user(self) -> User:
        """The user as a model, loaded only for the callers that act on it (inspect needs none)."""
        # A live credential's user is there: deleting a user deletes its credentials.
        return cast(User, db.session.get(User, self.claimant.id))


def _invalid(description: str) -> InvalidTokenError:
    return InvalidTokenError(description=description, realm="authsvc")


def _presented_token() -> tuple[str, str] | None:
    """The token the request presents, with its scheme: ``("bearer" | "dpop", token)``; None without one."""
    header = request.headers.get("Authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in ("bearer", "dpop") or not value.strip():
            raise _invalid("The Authorization header is not 'Bearer <token>' or 'DPoP <token>'.")
        return scheme.lower(), value.strip()
    elsewhere = request.args.get("bearer_token") or request.cookies.get("bearer_token")
    return ("bearer", elsewhere) if elsewhere else None


def check_binding(dpop_jkt: str | None, scheme: str, token: str, *, nonce: bool = False, fapi2: bool = False) -> None:
    """RFC 9449 7: a token bound to the key ``dpop_jkt`` needs the DPoP scheme and a proof by that key for this
    request (``ath`` its hash); an unbound one is a bearer token. ``nonce``: the endpoint requires server nonces;
    ``fapi2``: the token's domain is under the FAPI 2.0 profile (its proof algorithms only)."""
    if dpop_jkt is None:
        if scheme == "dpop":
            raise _invalid("This access token is not bound to a DPoP key: present it as 'Bearer <token>'.")
        return
    if scheme != "dpop":
        # Not as Bearer, and never from a query string or a cookie: a stolen copy is not enough.
        raise proofs.DPoPError(
            "invalid_token",
            "This access token is bound to a DPoP key: present it as 'Authorization: DPoP <token>' with a DPoP proof.",
            resource=True,
            fapi2=fapi2,
        )
    if proofs.request_proof(access_token=token, jkt=dpop_jkt, resource=True, nonce=nonce, fapi2=fapi2) is None:
        raise proofs.DPoPError("invalid_dpop_proof", "Send a DPoP proof with a DPoP-bound token.", resource=True)


def _presented_api_key() -> str | None:
    return request.headers.get("X-API-Key") or request.args.get("api-key") or request.cookies.get("api-key")


def presented() -> bool:
    """Whether the request carries a bearer token or an API key (valid or not).

    A ``Basic`` Authorization header is a client's, not a user credential.
    """
    header = request.headers.get("Authorization", "")
    if header and not header.lower().startswith("basic "):
        return True
    return bool(request.args.get("bearer_token") or request.cookies.get("bearer_token") or _presented_api_key())


def presented_token(domain: Domain) -> Token | None:
    """The live access token of ``domain`` presented with the request, if any; no error otherwise.

    A DPoP-bound token counts only with the DPoP scheme and a valid proof by its key.
    """
    try:
        presented = _presented_token()
    except InvalidTokenError:
        return None
    if presented is None:
        return None
    scheme, value = presented
    token = Token.find_by_access_token(value)
    if token is None or not token.is_active() or token.application.domain_id != domain.id:
        return None
    try:
        check_binding(token.dpop_jkt, scheme, value, fapi2=domain.fapi2)
    except (InvalidTokenError, proofs.DPoPError):
        return None
    return token


def authenticate(domain: Domain | None = None, *, dpop_nonce: bool = False) -> Credential:
    """The credential presented with the request, valid for its domain; else InvalidTokenError (401).

    ``domain``: the request's, when the caller has it already. Without it (inspect)
    the domain is matched by the request's host in the credential's own statement,
    which saves a round trip; an unknown host is still a 404.
    ``dpop_nonce``: a DPoP proof must carry the server's nonce (UserInfo; RFC 9449 9).
    """
    if domain is not None:
        host, default_host = domain.host, None
    else:
        host, default_host = request_host(), request_domain_parameters()["default_host"]
    try:
        presented = _presented_token()
    except InvalidTokenError:
        if domain is None:
            current_domain()  # an unknown host is a 404 whatever the header
        raise
    if presented:
        scheme, value = presented
        credential = find_token(value, host, default_host)
        if credential is None:
            raise _refuse(domain, "The access token is invalid, expired or revoked.")
        # Where it came from first: a FAPI 2.0 domain's token in the query is refused for that (400), bound or not.
        _require_header(credential, "Authorization")
        check_binding(credential.dpop_jkt, scheme, value, nonce=dpop_nonce, fapi2=credential.profile == FAPI2_PROFILE)
        return credential
    api_key = _presented_api_key()
    if api_key:
        credential = find_api_key(api_key, host, default_host)
        if credential is None:
            raise _refuse(domain, "The API key is invalid, expired or revoked.")
        _require_header(credential, "X-API-Key")
        if use_to_note(credential):
            _note_use(credential)
        return credential
    if domain is None:
        current_domain()
    # RFC 6750 3.1: a request with no credential gets no error code in the challenge.
    raise ApiError(
        401,
        "invalid_token",
        "No bearer token or API key was presented.",
        headers={"WWW-Authenticate": 'Bearer realm="authsvc"'},
    )


# The FAPI 2.0 profile's rule (5.3.4: no access token in the query string), decided by the credential's
# own domain; authsvc.oauth.profile has the profile's other rules.
HEADER_ONLY = (
    "FAPI 2.0 profile: credentials are accepted in a header only, never in the query string or a cookie "
    "(docs/fapi.md#no-secrets-in-urls)."
)


def _require_header(credential: Credential, header: str) -> None:
    """Refuse a credential of a FAPI 2.0 domain that came in the query string or a cookie: 400
    ``invalid_request`` (RFC 6750 3.1), though the credential is valid."""
    if credential.profile == FAPI2_PROFILE and not request.headers.get(header):
        raise ApiError(
            400,
            "invalid_request",
            HEADER_ONLY,
            headers={"WWW-Authenticate": 'Bearer realm="authsvc", error="invalid_request"'},
        )


def require_scopes(credential: Credential, *needed: str) -> None:
    """Refuse a credential that lacks any of the ``needed`` scopes: 403 ``insufficient_scope`` (RFC 6750 3.1).

    A token or API key acts only within its scopes, whatever its user may do:
    an admin's token granted ``public`` is no admin credential.
    """
    if set(needed) <= set(credential.scopes):
        return
    scope = " ".join(needed)
    raise ApiError(
        403,
        "insufficient_scope",
        f"This needs a token or API key with the scope '{scope}'.",
        headers={"WWW-Authenticate": f'Bearer realm="authsvc", error="insufficient_scope", scope="{scope}"'},
        extra={"scope": scope},
    )


def _refuse(domain: Domain | None, description: str) -> InvalidTokenError:
    # No row: an unknown host is told apart (404) only now, off the path of valid credentials.
    if domain is None:
        current_domain()
    return _invalid(description)


def audience_claim(stored_audience: str | None, host: str) -> str | list[str]:
    """A token's ``aud``: its one resource (RFC 8707), or the list of them; the domain's host without any."""
    if not stored_audience:
        return host
    items = stored_audience.split()
    return items[0] if len(items) == 1 else items


def claims(credential: Credential, issuer: str) -> dict[str, Any]:
    """What inspect answers about ``credential``: the claims shape PlaceOS clients read."""
    user = credential.claimant
    answer: dict[str, Any] = {
        "iss": issuer,
        "iat": credential.issued_at,
        "exp": credential.expires_at,
        "aud": credential.audience,
        "sub": str(user.id),
        "scope": credential.scopes,
        "u": {"n": user.name, "e": user.email, "p": int(credential.permissions), "r": list(user.groups)},
    }
    if credential.kind == "token":
        answer["client_id"] = credential.client_id
        if credential.dpop_jkt:
            # RFC 9449 6.1: an API server checks that a proof made for its own URL is by this key.
            answer["cnf"] = {"jkt": credential.dpop_jkt}
    else:
        answer["api_key"] = credential.api_key_id
    return answer


# One statement per credential, on the tables (no ORM entities): the token or
# key, the columns of the claims, the user, who must be enabled, and the
# domain, chosen as tenancy.current_domain chooses it: the one whose host is
# the request's, else the configured default. Expiry is checked here against
# the clock of this request; nothing is cached.
_token, _application, _user, _api_key = Token.__table__, Application.__table__, User.__table__, ApiKey.__table__
_domain = Domain.__table__
_USER_COLUMNS = (_user.c.id, _user.c.name, _user.c.email, _user.c.groups, _user.c.admin, _user.c.support)
_TOKEN_CLAIMS = (
    select(
        _token.c.scope,
        _token.c.issued_at,
        _token.c.expires_in,
        _token.c.dpop_jkt,
        _token.c.audience,
        _application.c.client_id,
        _domain.c.host.label("aud"),
        _domain.c.profile,
        *_USER_COLUMNS,
    )
    .select_from(
        _token.join(_application, _application.c.id == _token.c.application_id)
        .join(_domain, _domain.c.id == _application.c.domain_id)
        .join(_user, _user.c.id == _token.c.user_id)
    )
    .where(
        _token.c.access_token_digest == bindparam("digest"),
        _token.c.revoked_at.is_(None),
        REQUEST_DOMAIN,
        _user.c.disabled.is_(False),
    )
)
_API_KEY_CLAIMS = (
    select(
        _api_key.c.secret_digest,
        _api_key.c.scopes,
        _api_key.c.created_at,
        _api_key.c.expires_at,
        _api_key.c.revoked_at,
        _api_key.c.permission,
        _api_key.c.last_used_at,
        _domain.c.host.label("aud"),
        _domain.c.profile,
        _user.c.disabled,
        *_USER_COLUMNS,
    )
    .select_from(
        _api_key.join(_user, _user.c.id == _api_key.c.user_id).join(_domain, _domain.c.id == _api_key.c.domain_id)
    )
    .where(_api_key.c.id == bindparam("key_id"), REQUEST_DOMAIN)
)


def _claimant(row: Any) -> Claimant:
    return Claimant(id=row.id, name=row.name, email=row.email, groups=list(row.groups or []))


def _user_permissions(row: Any) -> Permission:
    return Permission.of(support=row.support, admin=row.admin)


# The lookups below need no Flask request: inspect's WSGI fast path
# (authsvc.api.fastpath) calls them too, with the app's readers.


def find_token(value: str, host: str, default_host: str | None, readers: Readers | None = None) -> Credential | None:
    """The live access token ``value`` of the domain of ``host`` (else ``default_host``), or None."""
    row = read_one(
        _TOKEN_CLAIMS, {"digest": security.digest(value), "host": host, "default_host": default_host}, readers
    )
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
    )


def find_api_key(value: str, host: str, default_host: str | None, readers: Readers | None = None) -> Credential | None:
    """The live API key ``value`` (``<id>.<secret>``) of the domain of ``host`` (else ``default_host``), or None."""
    key_id, _, secret = value.partition(".")
    well_formed = bool(secret) and validation.text_id(key_id)
    parameters = {"key_id": key_id, "host": host, "default_host": default_host}
    row = read_one(_API_KEY_CLAIMS, parameters, readers) if well_formed else None
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


def _note_use(credential: Credential) -> None:
    """Record that the API key was used.

    The row just read said a write is due; the UPDATE's own condition settles
    a race between workers, so at most one of them writes.
    """
    moment = now()
    stale = moment - LAST_USED_RESOLUTION
    db.session.execute(
        update(ApiKey)
        .where(
            ApiKey.id == credential.api_key_id,
            or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at <= stale),
        )
        .values(last_used_at=moment)
    )
    db.session.commit()
