"""What a view (or a whole blueprint) declares about itself beside its route, as ``@no_store`` does.

- ``@rate_limited(Rate..., ...)``: the request rates it counts against (authsvc.app.limits applies
  them); on a blueprint, rates every one of its requests counts against, checked before the
  blueprint's own ``before_request`` (SCIM's per-credential rate, checked before it authenticates).
- ``@cross_site``: other origins call it by design and it takes no cookie credential, so the guard
  against forged cross-site requests (authsvc.web.deployment) lets their POSTs through.
- ``@unbudgeted``: its statements keep the per-statement timeout instead of sharing one database
  budget per request (authsvc.core.budget); on a blueprint, every path under its URL prefix.
- ``@shows_pages``: it answers people with pages, so a refusal the app's error handlers answer for it
  (a path value no record can hold, authsvc.app.errors) is a page, not JSON.
- ``@writes_errors(writer)``: its refusals have a format of their own (Shared Signals' ``{"err",
  "description"}``), so a refusal the app's error handlers answer for it (a path value no record can
  hold, a method the route has not, a malformed query string) is written by ``writer``.

A declaration is kept on the function (or blueprint) itself, the way Flask keeps
``provide_automatic_options``: the wrappers views get (``functools.wraps``) copy it along, and
nothing outside the view names its endpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from flask import Response, request

_ATTRIBUTE = "authsvc_policy"

Target = TypeVar("Target")
# A surface's refusal: its status, error code and description, written in the surface's own format.
ErrorWriter = Callable[[int, str, str], Response]


class Rate(StrEnum):
    """A request rate, named by its scope (its Redis key's name); its value is a setting (docs/security.md)."""

    # Password attempts per client address and, failed ones, per account tried: they count only
    # the requests the view's ``attempt`` says try a password.
    SIGNIN_ADDRESS = "signin-address"
    SIGNIN_ACCOUNT = "signin-account"
    # Requests per client: once it authenticated, where a view declares CLIENT_FAILURE_ADDRESS.
    TOKEN_CLIENT = "token-client"
    # Declared where the client authenticates: requests that did not authenticate it count per address.
    CLIENT_FAILURE_ADDRESS = "client-failure-address"
    # Every request per address, whatever client it names: a view keyed per named client declares it too,
    # so that made-up client_ids share one budget (RFC 7592's registration management).
    CLIENT_NAMING_ADDRESS = "client-naming-address"
    SSO_START_ADDRESS = "sso-start-address"
    MFA_ADDRESS = "mfa-address"
    # Passkey sign-ins started (each keeps a challenge in Redis for minutes) per client address: a
    # count of its own, as every sign-in page a browser shows starts one (conditional UI).
    PASSKEY_OPTIONS_ADDRESS = "passkey-options-address"
    # User codes entered (RFC 8628 5.1: they can be guessed): only the requests ``attempt`` says enter one.
    DEVICE_VERIFY_ADDRESS = "device-verify-address"
    SCIM_CREDENTIAL = "scim-credential"
    # Client registrations (RFC 7591) per address: each one writes an application, with or without an
    # initial access token (a domain's open registration takes none).
    REGISTRATION_ADDRESS = "registration-address"
    # Links sent by e-mail on request (a forgotten password, a verification link again): per client
    # address, and per recipient (whose domain the limiter finds first, as for a password attempt).
    ACCOUNT_MAIL_ADDRESS = "account-mail-address"
    ACCOUNT_MAIL_RECIPIENT = "account-mail-recipient"


def read_form_then_query(name: str) -> str | None:
    """A parameter as most views read it, or None, never an error: the body (JSON or form), then the query.

    Limits run before the view, on input nobody has validated yet: a body the view will refuse
    must not make the limiter fail.
    """
    try:
        if request.mimetype == "application/json":
            body = request.get_json(silent=True)
            value = body.get(name) if isinstance(body, dict) else None
        else:
            value = request.form.get(name)
        if value is None:
            value = request.args.get(name)
    except Exception:  # noqa: BLE001 - malformed input is the view's to refuse
        return None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class RateLimits:
    """The rates a view counts against, and how the limiter reads its requests (as the view does)."""

    rates: tuple[Rate, ...]
    # Whether a request tries what SIGNIN_* and DEVICE_VERIFY_ADDRESS count; None: every request does.
    attempt: Callable[[], bool] | None = None
    # The parameter that names the account a password attempt tries.
    account: str = "email"
    # The client a request names (TOKEN_CLIENT's key), None for none: then its address counts.
    client: Callable[[], str | None] | None = None
    # A request parameter as the view reads it, or None; never an error.
    parameter: Callable[[str], str | None] = read_form_then_query
    # Whether the view authenticates its client: it declared CLIENT_FAILURE_ADDRESS (read per request:
    # a field, not a property).
    authenticates_client: bool = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "authenticates_client", Rate.CLIENT_FAILURE_ADDRESS in self.rates)


@dataclass(frozen=True)
class Policy:
    limits: RateLimits | None = None
    cross_site: bool = False
    budgeted: bool = True
    pages: bool = False
    errors: ErrorWriter | None = None


NONE = Policy()


def policy_of(target: object) -> Policy:
    """What ``target`` (a view function or a blueprint) declared; the defaults if nothing."""
    declared = getattr(target, _ATTRIBUTE, NONE)
    return declared if isinstance(declared, Policy) else NONE


def _declare(target: Target, **changes: Any) -> Target:
    setattr(target, _ATTRIBUTE, dataclasses.replace(policy_of(target), **changes))
    return target


def rate_limited(
    *rates: Rate,
    attempt: Callable[[], bool] | None = None,
    account: str = "email",
    client: Callable[[], str | None] | None = None,
    parameter: Callable[[str], str | None] = read_form_then_query,
) -> Callable[[Target], Target]:
    """Count the view's (or blueprint's) requests against ``rates``, in that order."""
    limits = RateLimits(rates, attempt=attempt, account=account, client=client, parameter=parameter)
    return lambda target: _declare(target, limits=limits)


def cross_site(view: Target) -> Target:
    """Other origins' pages or servers call this view by design; it takes no cookie credential."""
    return _declare(view, cross_site=True)


def unbudgeted(target: Target) -> Target:
    """Administration and listings, whose statements may legitimately run long: the per-statement timeout."""
    return _declare(target, budgeted=False)


def shows_pages(target: Target) -> Target:
    """Its answers are pages for people: a refusal answered for it by the app's error handlers is one too."""
    return _declare(target, pages=True)


def writes_errors(writer: ErrorWriter) -> Callable[[Target], Target]:
    """Its refusals are written by ``writer`` (status, error code, description): a refusal answered for it by
    the app's error handlers is too, instead of JSON ``{"error", "error_description"}``."""
    return lambda target: _declare(target, errors=writer)


def posted() -> bool:
    """An ``attempt`` for a view that shows a form on GET and tries what is entered on POST."""
    return request.method == "POST"
