"""Request rates (Flask-Limiter), counted in Redis under ``authsvc:limits`` so that every
worker and instance shares them. (Lockouts after failed sign-ins: authsvc.auth.lockouts;
the bound on unfinished SSO flows: authsvc.sso.flow.)

Which rates a view counts against, and how the limiter reads its request, is declared on the
view (``@rate_limited``, authsvc.core.policy); this module defines each rate (its setting, key
and when it counts) and puts the declared ones on their views.

- Request rates: password attempts (``/auth/signin``, the sign-in page, the
  password grant) per client address, failed ones per account, token requests
  per client (device authorisation requests and client registrations too; a registration's management
  per the client it names and per address), client registrations per address in a rate of their own, SSO
  starts per client address, and user codes entered at ``/auth/device`` per client address. Over the
  rate, a request gets 429 before any password is checked. Accounts are keyed on the domain's id,
  not on the Host header, so another port or host name for the domain counts
  against the same account.
- Client authentication: a token, PAR or device authorisation request counts against its client
  only once the client has authenticated (a public client: once it was answered), so that nobody
  locks a client out by naming it; the client's rate is tested (and a confidential client's request
  counted) when the client has authenticated, before the grant does anything. A request
  that did not authenticate its client counts against its address; a failed authentication also
  against the client_id it named, in a higher rate past which failures (only) are refused.
- SSO flows: an address may hold at most ``AUTHSVC_SSO_FLOWS_PER_ADDRESS``
  unfinished flows in the store; past that, a start gets 429.
- Lockouts: each failed password attempt counts against the account and the
  client address. At the threshold the account (or address) is locked for
  ``AUTHSVC_LOCKOUT_BASE`` seconds, and every further failure doubles that, up
  to ``AUTHSVC_LOCKOUT_MAX``. While locked, even the right password is refused,
  with the time to wait. A successful sign-in clears the account's count.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, request
from flask_limiter import Limiter
from limits import parse_many

from authsvc.account.blueprint import mail_recipient
from authsvc.app.rate_checks import STRATEGY, Counted, Counter, guarded, ordered
from authsvc.auth import lockouts
from authsvc.core import security, validation
from authsvc.core.policy import Rate, RateLimits, policy_of
from authsvc.core.request_state import part
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
from authsvc.oauth import clients
from authsvc.web.deployment import client_address

# One namespace for every counter of a limit, the lockouts' too.
PREFIX = lockouts.PREFIX
# Each limited endpoint's declaration (authsvc.core.policy.rate_limited), by endpoint: the views' own,
# so the same for every app this process builds. Read by the limits of every limited request: a
# module's dict, not the app's extensions through ``current_app``.
_DECLARED: dict[str, RateLimits] = {}
# The app's counter of rates (authsvc.app.rate_checks).
_COUNTER = "authsvc.limiter.counter"


# Request rates -----------------------------------------------------------


def declared() -> RateLimits | None:
    """What the view serving this request declared (``@rate_limited``), None if it is not limited."""
    return _DECLARED.get(request.endpoint or "")


def endpoint_limits(app: Flask) -> dict[str, tuple[str, ...]]:
    """The scopes of each endpoint's declared limits (not its blueprint's), in the order they are checked."""
    return {endpoint: tuple(limits.rates) for endpoint, limits in _declarations(app)[0].items()}


def _parameter(name: str) -> str | None:
    """A request parameter as the view will read it (its declared reader), or None; never an error."""
    limits = declared()
    return limits.parameter(name) if limits is not None else None


def _attempt(rate: Rate) -> bool:
    """Whether the request tries what ``rate`` counts (a password, a user code): as its view declared."""
    limits = declared()
    return limits is not None and rate in limits.rates and (limits.attempt is None or limits.attempt())


@dataclasses.dataclass
class Attempt:
    """Whether the request tries a password, once decided (authsvc.core.request_state.part)."""

    password: bool | None = None


def _password_attempt() -> bool:
    # Asked by three limits and the domain lookup before them: answered once per request.
    noted = part(Attempt)
    if noted.password is None:
        noted.password = _attempt(Rate.SIGNIN_ADDRESS)
    return noted.password


def _find_the_domain_first() -> None:
    """Look up a password attempt's (or a mail recipient's) domain before the limiter keys on it.

    Here an unknown host is its 404 and a database fault its 503. Raised in a
    key function, either would be swallowed by Flask-Limiter, which would also
    count in memory from then on.
    """
    limits = declared()
    if _password_attempt() or (limits is not None and Rate.ACCOUNT_MAIL_RECIPIENT in limits.rates):
        current_domain()


def _attempted_account() -> str:
    """The account a password attempt tries, as the lockouts count it (the domain found by _find_the_domain_first)."""
    limits = declared()
    email = validation.account_name((_parameter(limits.account) if limits is not None else None) or "")
    return lockouts.account_key(current_domain().id, email) if email else ""


def _refused(response: Response) -> bool:
    """Whether a password attempt failed, for the per-account rate.

    A success does not count: a fleet of workers may sign one service account
    in as often as it needs. A 429 does not either (it checked no password),
    nor a 5xx (our fault, not the client's guess).
    """
    return 400 <= response.status_code < 500 and response.status_code != 429


def authenticates_client() -> bool:
    """Whether the view serving this request authenticates its client (it declared CLIENT_FAILURE_ADDRESS)."""
    limits = declared()
    return limits is not None and limits.authenticates_client


def _counts_for_the_client(response: Response) -> bool:
    """Whether a request counts against the client it names: where the client authenticates, only once it has,
    or, for a public client (which has nothing to prove), once it was answered rather than refused.

    Otherwise anyone could spend a client's rate with its client_id and a wrong secret, or a public
    client's with made-up codes. A registration (RFC 7591) or its management (RFC 7592) counts
    whatever its answer, as it did.
    """
    # The cheapest question first: most requests are answered.
    return response.status_code < 400 or clients.client_authenticated() is True or not authenticates_client()


def _unauthenticated(response: Response) -> bool:
    """Whether a request refused without an authenticated client counts against its address.

    A 429 checked nothing, and a 5xx is our fault, not the client's.
    """
    return clients.client_authenticated() is not True and _refused(response)


def requesting_client() -> str:
    """TOKEN_CLIENT's key: the client the request names (as its view declared), else its address."""
    limits = declared()
    client_id = limits.client() if limits is not None and limits.client is not None else _named_client()
    return f"client:{client_id[:100]}" if client_id else f"address:{client_address()}"


def _named_client() -> str | None:
    """The client a token request names: HTTP Basic's user name, ``client_id``, or an assertion's subject.

    The Basic user name is read as the token endpoint reads it to authenticate the client
    (``clients.basic_client_id``: Authlib's lenient base64, then percent-decoded): read any other
    way, ``%61bc`` or a stray character after the base64 would authenticate as ``abc`` while
    counting in a bucket of its own, a fresh rate each time.
    """
    return clients.basic_client_id(request) or _parameter("client_id") or _assertion_subject()


def _assertion_subject() -> str | None:
    """The ``sub`` of a private_key_jwt assertion, unverified: a claim of who is asking, as ``client_id`` is."""
    assertion = _parameter("client_assertion")
    if not assertion or assertion.count(".") != 2:
        return None
    payload = assertion.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, RecursionError):
        return None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    return subject if isinstance(subject, str) else None


def _bearer_credential() -> str:
    """A request's bearer credential, as a digest: each API key or token has its own count."""
    return security.digest(request.headers.get("Authorization", ""))


def _limits(app: Flask) -> dict[Rate, tuple[Counted, ...]]:
    """Every rate limit by its scope (its Redis key's name).

    Each rate is the setting's value when the app is built, parsed then (``limits.parse_many``: a
    setting may hold several, ``30 per minute; 500/day``), not on every request. Whether a limit
    applies to an endpoint is declared on its view (authsvc.core.policy.rate_limited); what is left
    in ``exempt_when`` depends on the request itself.
    """
    rates = settings(app)

    def limit(
        rate: Rate, value: str, key: Callable[[], str] = client_address, **when: Any
    ) -> tuple[Rate, tuple[Counted, ...]]:
        return rate, tuple(Counted(rate.value, item, key, **when) for item in parse_many(value))

    return dict(
        [
            limit(Rate.SIGNIN_ADDRESS, rates.signin_rate_limit, exempt_when=lambda: not _password_attempt()),
            limit(
                Rate.SIGNIN_ACCOUNT,
                rates.signin_account_rate_limit,
                _attempted_account,
                exempt_when=lambda: not _password_attempt() or not _attempted_account(),
                # Only failures are counted; a request over the rate is refused all the same.
                deduct_when=_refused,
            ),
            limit(
                Rate.TOKEN_CLIENT,
                rates.token_rate_limit,
                requesting_client,
                deduct_when=_counts_for_the_client,
                # Where the view authenticates its client: settled once it knows the client (_client_known).
                until_client=authenticates_client,
            ),
            limit(Rate.CLIENT_FAILURE_ADDRESS, rates.client_failure_rate_limit, deduct_when=_unauthenticated),
            limit(Rate.CLIENT_NAMING_ADDRESS, rates.token_rate_limit),
            limit(Rate.SSO_START_ADDRESS, rates.sso_start_rate_limit),
            limit(Rate.MFA_ADDRESS, rates.signin_rate_limit),
            limit(Rate.PASSKEY_OPTIONS_ADDRESS, rates.signin_rate_limit),
            limit(
                Rate.DEVICE_VERIFY_ADDRESS,
                rates.device_verify_rate_limit,
                exempt_when=lambda: not _attempt(Rate.DEVICE_VERIFY_ADDRESS),
            ),
            limit(Rate.REGISTRATION_ADDRESS, rates.registration_rate_limit),
            limit(Rate.SCIM_CREDENTIAL, rates.scim_rate_limit, _bearer_credential),
            limit(Rate.ACCOUNT_MAIL_ADDRESS, rates.account_mail_client_rate_limit),
            limit(Rate.ACCOUNT_MAIL_RECIPIENT, rates.account_mail_rate_limit, mail_recipient),
        ]
    )


def _declarations(app: Flask) -> tuple[dict[str, RateLimits], dict[str, tuple[Rate, ...]]]:
    """The limits each view and each blueprint declared, by endpoint and by blueprint name."""
    views = {
        endpoint: limits
        for endpoint, view in app.view_functions.items()
        if (limits := policy_of(view).limits) is not None
    }
    blueprints = {
        name: limits.rates
        for name, blueprint in app.blueprints.items()
        if (limits := policy_of(blueprint).limits) is not None
    }
    return views, blueprints


def init_app(app: Flask) -> None:
    """Build the limiter's store and put each view's (and blueprint's) declared limits on it.

    Flask-Limiter makes the store (Redis, or memory without it) and its ``reset``; its request hooks
    are taken off again: authsvc.app.rate_checks checks each request against rates parsed once,
    and only the endpoints that declared some.
    """
    url = settings(app).redis_url
    options: dict[str, Any] = {}
    storage = "memory://"
    if url or settings(app).redis_sentinels:
        # The store's connection pool, with its short timeouts; with Sentinels, the pool that
        # follows the primary they name (limits' redis storage then uses the pool, not the URL).
        options = {"connection_pool": app.extensions["authsvc.redis"].connection_pool, "key_prefix": PREFIX}
        storage = url or "redis://"
    every = _limits(app)
    views, blueprints = _declarations(app)
    _DECLARED.update(views)
    limiter = Limiter(
        key_func=client_address,
        storage_uri=storage,
        storage_options=options,
        strategy=STRATEGY,
        in_memory_fallback_enabled=True,
        swallow_errors=True,
    )
    # One shape for the three hook tables (Flask types each by its own kind of callable).
    registries: tuple[dict[str | None, list[Any]], ...] = (
        app.before_request_funcs,
        app.after_request_funcs,
        app.teardown_request_funcs,
    )
    before = [list(registry.get(None, ())) for registry in registries]
    limiter.init_app(app)
    for registry, earlier in zip(registries, before, strict=True):
        registry[None] = earlier
    counter = Counter(limiter.storage)
    app.extensions["authsvc.limiter"] = limiter
    app.extensions[_COUNTER] = counter
    clients.when_identified(_client_known)
    # Only endpoints of these blueprints are limited: every other request meets none of this.
    # A blueprint's rates (SCIM's per credential) are checked before its own before_request
    # (SCIM's authenticates); the rates counted only for some answers are counted after the
    # blueprint's own after_request hooks (and before the per-client failures' count).
    limited = {endpoint.split(".")[0] for endpoint in views} | set(blueprints)
    for blueprint in limited:
        hooks: list[Callable[[], Any]] = [_find_the_domain_first]
        if blueprint in blueprints:
            hooks.append(_blueprint_check(counter, ordered([c for rate in blueprints[blueprint] for c in every[rate]])))
        app.before_request_funcs.setdefault(blueprint, [])[:0] = hooks
        app.after_request_funcs.setdefault(blueprint, []).insert(0, counter.count_answered)
    _limit_views(app, counter, every, views)


def _blueprint_check(counter: Counter, limits: tuple[Counted, ...]) -> Callable[[], None]:
    def check_blueprint_rates() -> None:
        counter.check(limits)

    return check_blueprint_rates


def _limit_views(
    app: Flask, counter: Counter, every: dict[Rate, tuple[Counted, ...]], views: dict[str, RateLimits]
) -> None:
    """Put each endpoint's declared limits on its view.

    They are checked when the view is called: after the before_request hooks, and before the view
    does anything. One view served at several endpoints gets one wrapper.
    """
    wrapped: dict[Callable[..., Any], Callable[..., Any]] = {}
    for endpoint in sorted(views):
        view = app.view_functions[endpoint]
        if view not in wrapped:
            limits = ordered([counted for rate in views[endpoint].rates for counted in every[rate]])
            wrapped[view] = guarded(counter, limits, app.ensure_sync(view))
        app.view_functions[endpoint] = wrapped[view]


def _client_known(confidential: bool) -> None:
    """The view knows its client (authsvc.oauth.clients.identified): the client's rate, settled (rate_checks)."""
    current_app.extensions[_COUNTER].settle_client(confidential)


def client_authenticating_blueprints(app: Flask) -> list[str]:
    """The blueprints with a view that authenticates its client (for the per-client failure count)."""
    views = _declarations(app)[0]
    return sorted({endpoint.split(".")[0] for endpoint, limits in views.items() if limits.authenticates_client})


def retry_after() -> int:
    """Seconds until the rate limit this request broke lets a request through again."""
    try:
        reset_at = current_app.extensions[_COUNTER].reset_at()
        return max(1, math.ceil(reset_at - time.time()))
    except Exception:  # noqa: BLE001 - the counter may be unreachable; a minute is a safe answer
        return 60
