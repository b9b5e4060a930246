"""The service's errors: ``ApiError`` (an answer with an RFC 6749 shape), and what features raise.

A feature says what happened (``LockedOut``, ``UnknownDomain``, ``SsoExpired``, the admin rules'
``NotFound``...), not how to answer it. ``ANSWERS``, below, is the one table from those to an
answer: authsvc.app.errors sends it as JSON, SCIM's handlers (authsvc.scim.handlers) as a SCIM
error, an HTML view that catches one (the console's pages, sign-in) shows a page with its status,
text and heading (``answer(exc)``, ``title``), and a ``flask`` command prints its text
(authsvc.cli.common): no surface words a refusal itself. OAuth errors stay Authlib's (one class
per RFC error), answered by Authlib's own rules. ``ApiError`` itself is for an answer that is not
an event: a request a view refuses as malformed, and RFC 6750's challenges to a presented
credential (authsvc.api.lookup), whose ``WWW-Authenticate`` is decided where it is read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import redis.exceptions
from flask import Response, jsonify
from sqlalchemy import exc as sql

from authsvc.core import clock
from authsvc.core.headers import uncached
from authsvc.core.marks import N_
from authsvc.core.settings import settings

# What "the session store is down" looks like to redis-py: refused, reset,
# timed out, still loading after a restart, or a replica after a failover.
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.ReadOnlyError)


class ApiError(Exception):
    """An error answered as ``{"error", "error_description"}`` JSON (plus ``extra`` fields)."""

    def __init__(
        self,
        status: int,
        error: str,
        description: str,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.headers = headers or {}
        self.extra = extra or {}


def json_error(
    status: int,
    error: str,
    description: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    response = jsonify(error=error, error_description=description, **(extra or {}))
    response.status_code = status
    uncached(response)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def too_many_requests(error: str, description: str, retry_after: int) -> Response:
    """429 with the wait in ``Retry-After`` and in the body, for clients that read only one."""
    retry_after = max(1, int(retry_after))
    return json_error(429, error, description, {"Retry-After": str(retry_after)}, {"retry_after": retry_after})


def outage(exc: BaseException) -> str | None:
    """What to tell a client when ``exc`` says Redis or the database is down (503: it may retry), else None.

    Every surface answers an outage by this rule, each in its own format: authsvc.app.errors as
    JSON, SCIM's handlers as a SCIM error.
    """
    if isinstance(exc, REDIS_DOWN):
        # Sessions, codes and SSO state live in Redis: without it these
        # requests cannot be answered, but nothing was half-done either.
        return "The session store is unreachable. Try again shortly."
    if isinstance(exc, sql.TimeoutError):  # every pooled connection is in use, or hanging on a dead server
        return "The database is busy or unreachable. Try again shortly."
    if isinstance(exc, sql.OperationalError) or (isinstance(exc, sql.DBAPIError) and exc.connection_invalidated):
        return "The database is unreachable. Try again shortly."
    return None


def unavailable(description: str) -> Response:
    """503 for a dependency that is down: the client may retry, and is told when."""
    retry_after = str(settings().retry_after)
    return json_error(503, "temporarily_unavailable", description, {"Retry-After": retry_after})


# ----------------------------------------------------------------- what features raise


class UnknownDomain(Exception):
    """No domain is configured for the request's host (and no default domain either)."""


class Forbidden(Exception):
    """The admin rules refuse this actor this change (authsvc.admin.actors)."""


class NotFound(Exception):
    """No such record, or not one the actor may see."""


class ValidationFailed(Exception):
    """Input that cannot be saved; ``fields`` says why, per field."""

    def __init__(self, fields: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in fields.items()))
        self.fields = fields


class Conflict(Exception):
    """The change would break a rule that holds across records (duplicates, dependants)."""


class LockedOut(Exception):
    """Too many failed sign-ins (or user codes) for this account or address: none is tried before ``retry_after`` s."""

    def __init__(self, retry_after: int, attempts: str = "sign-in attempts") -> None:
        until = datetime.fromtimestamp(clock.time() + retry_after, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.retry_after = retry_after
        self.description = f"Too many failed {attempts}. Retry in {retry_after} s (after {until})."
        super().__init__(self.description)


class AddressUnconfirmed(Exception):
    """The right password of an account made by sign-up whose address is not confirmed yet: no session."""

    description = N_(
        "Confirm your e-mail address first: follow the link in the message we sent to it. No message? Sign up "
        "again with the same address for a new link."
    )


class DirectoryUnavailable(Exception):
    """An LDAP directory could not answer (``why``, for the log); the password was not checked."""

    description = N_("The directory that checks this account's password cannot be reached. Try again shortly.")

    def __init__(self, directory: Any, why: str) -> None:
        super().__init__(why)
        self.directory = directory
        self.why = why


class TooManyFlows(Exception):
    """This address holds as many unfinished SSO sign-ins as it may; the first ends in ``retry_after`` s."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class SsoError(Exception):
    """A single sign-on cannot go on: ``title`` and ``message`` say why, to the person signing in."""

    def __init__(self, title: str, message: str) -> None:
        super().__init__(message)
        self.title = title
        self.message = message


class SsoExpired(SsoError):
    """The browser's sign-in is stale, used, or not this browser's."""


class SsoConflict(SsoError):
    """Another sign-in of the same account is setting it up at this moment."""


class ProviderFailed(SsoError):
    """The identity provider did not answer as it must, or is where this service may not go."""


class ProviderUnavailable(SsoError):
    """The identity provider could not be asked (its metadata is unusable)."""


class MfaRefused(Exception):
    """The second step of a sign-in failed; ``str(exc)`` says why, to the person signing in."""


class PendingSignInGone(MfaRefused):
    """The sign-in waiting for its second factor expired, was used, or never was."""


class WrongCode(MfaRefused):
    """The second factor's code (or passkey) was not right."""


class PasskeyRefused(Exception):
    """A sign-in with a passkey alone failed: an unknown passkey, a bad signature, an expired or used
    challenge, a disabled account. One answer for all, as for a wrong password."""


class SignInFailed(Exception):
    """The e-mail address and password name no account that may sign in (which of them is wrong is not told)."""


class SignInRequired(Exception):
    """The request needs a signed-in user and has none; ``str(exc)`` says how to be one."""


class ReauthenticationRequired(Exception):
    """The change needs a recent sign-in (authsvc.auth.reauth); ``reauth_uri`` signs in again and comes back."""

    def __init__(self, reauth_uri: str) -> None:
        super().__init__(reauth_uri)
        self.reauth_uri = reauth_uri


class NotStaff(Exception):
    """The credential's user is neither an admin nor support staff: the admin API is not for it."""


class CrossSiteRefused(Exception):
    """Another site's page sent a request that changes something; ``str(exc)`` says which and why."""


class ResourceTokenUnavailable(Exception):
    """A provider's token for the user cannot be handed out (authsvc.sso.delegated); ``str(exc)`` says why."""


class NoResourceToken(ResourceTokenUnavailable):
    """The user holds no provider token: never signed in through SSO, or it was cleared."""


class ResourceSignInRequired(ResourceTokenUnavailable):
    """The provider refused a refresh, or none is stored: the user must sign in through SSO again."""


class ResourceProviderDown(ResourceTokenUnavailable):
    """The provider did not answer the refresh of its token."""


class UnknownApplication(Exception):
    """No application of the request's domain has the client_id the user named."""


class NoApproval(Exception):
    """The application holds no approval (consent) and no token of the user's."""


class UnknownSamlProvider(Exception):
    """No SAML provider of the request's domain has the id in the URL."""


class SamlUnavailable(Exception):
    """SAML cannot work on this server at all (its XML signature tool is missing); ``str(exc)`` says so."""


class SamlLogoutRefused(Exception):
    """The identity provider's Single Logout message was refused; ``str(exc)`` says why."""


def _retry_after(exc: LockedOut | TooManyFlows) -> dict[str, Any]:
    return {"headers": {"Retry-After": str(exc.retry_after)}, "extra": {"retry_after": exc.retry_after}}


def _unavailable(exc: DirectoryUnavailable) -> ApiError:
    retry_after = str(settings().retry_after)
    return ApiError(503, "directory_unavailable", exc.description, headers={"Retry-After": retry_after})


# The one table: each feature exception, and how it is answered (the nearest class in its MRO wins).
ANSWERS: dict[type[Exception], Callable[[Any], ApiError]] = {
    UnknownDomain: lambda exc: ApiError(404, "unknown_domain", "No domain is configured for this host."),
    Forbidden: lambda exc: ApiError(403, "forbidden", "Your credential may not make this change."),
    NotFound: lambda exc: ApiError(404, "not_found", "No such record."),
    Conflict: lambda exc: ApiError(409, "conflict", str(exc)),
    ValidationFailed: lambda exc: ApiError(
        422, "invalid_input", "Some fields are not valid.", extra={"fields": exc.fields}
    ),
    LockedOut: lambda exc: ApiError(429, "too_many_attempts", exc.description, **_retry_after(exc)),
    DirectoryUnavailable: _unavailable,
    AddressUnconfirmed: lambda exc: ApiError(403, "email_unverified", exc.description),
    TooManyFlows: lambda exc: ApiError(
        429,
        "too_many_flows",
        f"Too many sign-ins in progress from this address. Retry in {exc.retry_after} s.",
        **_retry_after(exc),
    ),
    SsoExpired: lambda exc: ApiError(400, "sso_expired", exc.message),
    SsoConflict: lambda exc: ApiError(409, "sso_conflict", exc.message),
    ProviderFailed: lambda exc: ApiError(502, "provider_failed", exc.message),
    ProviderUnavailable: lambda exc: ApiError(503, "provider_unavailable", exc.message),
    PendingSignInGone: lambda exc: ApiError(401, "invalid_mfa_token", str(exc)),
    WrongCode: lambda exc: ApiError(401, "invalid_mfa_code", str(exc)),
    PasskeyRefused: lambda exc: ApiError(
        401, "invalid_credentials", N_("The passkey was not recognised. Try again, or sign in with your password.")
    ),
    SignInFailed: lambda exc: ApiError(401, "invalid_credentials", N_("The e-mail address or password is incorrect.")),
    SignInRequired: lambda exc: ApiError(401, "login_required", str(exc)),
    ReauthenticationRequired: lambda exc: ApiError(
        401,
        "reauthentication_required",
        "This change needs a recent sign-in: sign in again, then repeat it.",
        extra={"reauth_uri": exc.reauth_uri},
    ),
    NotStaff: lambda exc: ApiError(403, "forbidden", "An admin or support credential is needed."),
    CrossSiteRefused: lambda exc: ApiError(403, "cross_site_request", str(exc)),
    NoResourceToken: lambda exc: ApiError(
        404, "no_resource_token", "The user has no stored provider token; sign in through SSO."
    ),
    UnknownApplication: lambda exc: ApiError(404, "not_found", "No such application."),
    NoApproval: lambda exc: ApiError(404, "not_found", "This application holds no approval of yours."),
    UnknownSamlProvider: lambda exc: ApiError(404, "not_found", "No SAML provider with this id here."),
    SamlUnavailable: lambda exc: ApiError(503, "saml_unavailable", str(exc)),
    SamlLogoutRefused: lambda exc: ApiError(400, "saml_logout_refused", str(exc)),
    ResourceSignInRequired: lambda exc: ApiError(409, "reauthentication_required", str(exc)),
    ResourceProviderDown: lambda exc: ApiError(
        502, "provider_unavailable", "The identity provider did not answer; try again later."
    ),
}


def answer(exc: Exception) -> ApiError:
    """How the feature exception ``exc`` is answered (``ANSWERS``)."""
    return next(ANSWERS[cls](exc) for cls in type(exc).__mro__ if cls in ANSWERS)


# A page's heading for an answer, by its status (the console's pages of a refusal).
TITLES = {
    400: "Not accepted",
    401: "Not signed in",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    422: "Not valid",
    429: "Too many attempts",
    502: "Not answered",
    503: "Unavailable",
}


def title(refusal: ApiError) -> str:
    """The heading of a page that shows ``refusal`` (``TITLES``)."""
    return TITLES.get(refusal.status, "Refused")
