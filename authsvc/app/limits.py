"""Request rates (Flask-Limiter), counted in Redis under ``authsvc:limits`` so that every
worker and instance shares them. (Lockouts after failed sign-ins: authsvc.auth.lockouts;
the bound on unfinished SSO flows: authsvc.sso.flow.)

- Request rates: password attempts (``/auth/signin``, the sign-in page, the
  password grant) per client address, failed ones per account, token requests
  per client (device authorisation requests and client registrations too), SSO starts per client
  address, and user codes entered at ``/auth/device`` per client address. Over the rate, a request gets
  429 before any password is checked. Accounts are keyed on the domain's id,
  not on the Host header, so another port or host name for the domain counts
  against the same account.
- Client authentication: a token, PAR or device authorisation request counts against its client
  only once the client has authenticated (a public client: once it was answered), so that nobody
  locks a client out by naming it. A request
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
import json
import math
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, request
from flask_limiter import Limit, Limiter

from authsvc.account.blueprint import mail_recipient
from authsvc.core import security, store
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
from authsvc.oauth import clients
from authsvc.oauth.parameters import QUERY_PARAMETERS
from authsvc.scim.views import ENDPOINTS as SCIM_ENDPOINTS
from authsvc.web.deployment import client_address

# Endpoints where a password is checked.
PASSWORD_ENDPOINTS = {"auth.signin", "auth.login"}
TOKEN_ENDPOINT = "oauth.token"
SSO_START_ENDPOINT = "sso.start"
# Counted with the token requests, per client.
DEVICE_AUTHORIZATION_ENDPOINT = "oauth.device_authorization"
# Pushed authorisation requests (RFC 9126): counted with the token requests, per client.
PAR_ENDPOINT = "oauth.par"
# Dynamic client registration (RFC 7591, RFC 7592): counted with the token requests, per address
# when registering, per client when managing a registration.
REGISTRATION_ENDPOINTS = {"oauth.register", "oauth.client_configuration"}
# Where a person enters a device's user code (RFC 8628 5.1: user codes can be guessed).
DEVICE_VERIFY_ENDPOINTS = {"device.verify", "device.decide"}
# Where a second factor is tried (codes can be guessed too; the account's lockout also counts them).
MFA_ENDPOINTS = {"mfa.signin_mfa", "mfa.login_mfa", "mfa.login_enrol", "mfa.signin_webauthn_options"}
# Where a link is sent by e-mail on request (a forgotten password, a new verification link).
ACCOUNT_MAIL_ENDPOINTS = {"account.forgot_submit", "account.resend"}
# Nothing else is rate limited, so nothing else depends on the limiter's storage
# (inspect must keep answering from SQL while Redis is down).
LIMITED_ENDPOINTS = (
    PASSWORD_ENDPOINTS
    | DEVICE_VERIFY_ENDPOINTS
    | MFA_ENDPOINTS
    | REGISTRATION_ENDPOINTS
    | ACCOUNT_MAIL_ENDPOINTS
    | SCIM_ENDPOINTS
    | {TOKEN_ENDPOINT, SSO_START_ENDPOINT, DEVICE_AUTHORIZATION_ENDPOINT, PAR_ENDPOINT}
)
TOKEN_RATE_ENDPOINTS = REGISTRATION_ENDPOINTS | {TOKEN_ENDPOINT, DEVICE_AUTHORIZATION_ENDPOINT, PAR_ENDPOINT}
# Where the client authenticates (the authorisation server's authenticate_client).
CLIENT_AUTHENTICATION_ENDPOINTS = {TOKEN_ENDPOINT, DEVICE_AUTHORIZATION_ENDPOINT, PAR_ENDPOINT}

PREFIX = f"{store.PREFIX}limits"


# Request rates -----------------------------------------------------------


def _parameter(name: str) -> str | None:
    """A request parameter as the views will read it, or None; never an error.

    Same precedence as the views: the body first, then the query string; at
    the token endpoint only the names it reads from the query. Otherwise a
    decoy ``?username=`` would be counted while the body's account is tried.
    Limits run before the view, on input nobody has validated yet: a body the
    view will refuse must not make the limiter fail.
    """
    try:
        if request.mimetype == "application/json":
            body = request.get_json(silent=True)
            value = body.get(name) if isinstance(body, dict) else None
        else:
            value = request.form.get(name)
        if value is None and (request.endpoint != TOKEN_ENDPOINT or name in QUERY_PARAMETERS):
            value = request.args.get(name)
    except Exception:  # noqa: BLE001 - malformed input is the view's to refuse
        return None
    return value if isinstance(value, str) else None


_PASSWORD_ATTEMPT = "authsvc.password_attempt"


def _password_attempt() -> bool:
    # Asked by three limits and the domain lookup before them: answered once per request.
    answer = request.environ.get(_PASSWORD_ATTEMPT)
    if answer is None:
        if request.endpoint in PASSWORD_ENDPOINTS:
            answer = request.method == "POST"
        else:
            answer = request.endpoint == TOKEN_ENDPOINT and _parameter("grant_type") == "password"
        request.environ[_PASSWORD_ATTEMPT] = answer
    return answer


def _user_code_entry() -> bool:
    """Whether the request tries a user code: only a form posted (a GET with ``user_code`` fills the form in)."""
    return request.endpoint in DEVICE_VERIFY_ENDPOINTS and request.method == "POST"


def _find_the_domain_first() -> None:
    """Look up a password attempt's domain before the limiter keys the account on it.

    Here an unknown host is its 404 and a database fault its 503. Raised in a
    key function, either would be swallowed by Flask-Limiter, which would also
    count in memory from then on.
    """
    if _password_attempt() or request.endpoint in ACCOUNT_MAIL_ENDPOINTS:
        current_domain()


def _attempted_account() -> str:
    name = "username" if request.endpoint == TOKEN_ENDPOINT else "email"
    email = (_parameter(name) or "").strip().lower()
    # A digest keeps e-mail addresses out of Redis. The domain's id (found by
    # _find_the_domain_first), not the Host header, keeps domains apart: a
    # port or another name that reaches the same domain is the same account.
    return security.digest(f"{current_domain().id} {email}") if email else ""


def _refused(response: Response) -> bool:
    """Whether a password attempt failed, for the per-account rate.

    A success does not count: a fleet of workers may sign one service account
    in as often as it needs. A 429 does not either (it checked no password),
    nor a 5xx (our fault, not the client's guess).
    """
    return 400 <= response.status_code < 500 and response.status_code != 429


def _counts_for_the_client(response: Response) -> bool:
    """Whether a request counts against the client it names: where the client authenticates, only once it has,
    or, for a public client (which has nothing to prove), once it was answered rather than refused.

    Otherwise anyone could spend a client's rate with its client_id and a wrong secret, or a public
    client's with made-up codes. A registration (RFC 7591) or its management (RFC 7592) counts
    whatever its answer, as it did.
    """
    return (
        request.endpoint not in CLIENT_AUTHENTICATION_ENDPOINTS
        or clients.client_authenticated() is True
        or response.status_code < 400
    )


def _unauthenticated(response: Response) -> bool:
    """Whether a request refused without an authenticated client counts against its address.

    A 429 checked nothing, and a 5xx is our fault, not the client's.
    """
    return clients.client_authenticated() is not True and _refused(response)


def requesting_client() -> str:
    if request.endpoint == "oauth.register":
        return f"address:{client_address()}"
    if request.endpoint == "oauth.client_configuration":
        return f"client:{(request.view_args or {}).get('client_id', '')[:100]}"
    try:
        basic = request.authorization
    except Exception:  # noqa: BLE001 - a garbled header is the view's to refuse
        basic = None
    if basic is not None and basic.type == "basic" and basic.username:
        client_id = basic.username
    else:
        client_id = _parameter("client_id") or _assertion_subject()
    return f"client:{client_id[:100]}" if client_id else f"address:{client_address()}"


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


def _scim_credential() -> str:
    """A SCIM request's bearer credential, as a digest: each API key or token has its own count."""
    return security.digest(request.headers.get("Authorization", ""))


def _limits(app: Flask) -> dict[str, Limit]:
    """Every rate limit by its scope (its Redis key's name), in the order a request checks them.

    Each rate is the setting's value when the app is built: a string, parsed by Flask-Limiter, not a
    callable it would ask on every request. Whether a limit applies to an endpoint is where it is
    declared (``ENDPOINT_LIMITS``); what is left in ``exempt_when`` depends on the request itself.
    """
    rates = settings(app)
    return {
        "signin-address": Limit(
            rates.signin_rate_limit,
            key_function=client_address,
            scope="signin-address",
            shared=True,
            exempt_when=lambda: not _password_attempt(),
        ),
        "signin-account": Limit(
            rates.signin_account_rate_limit,
            key_function=_attempted_account,
            scope="signin-account",
            shared=True,
            exempt_when=lambda: not _password_attempt() or not _attempted_account(),
            # Only failures are counted; a request over the rate is refused all the same.
            deduct_when=_refused,
        ),
        "token-client": Limit(
            rates.token_rate_limit,
            key_function=requesting_client,
            scope="token-client",
            shared=True,
            deduct_when=_counts_for_the_client,
        ),
        "client-failure-address": Limit(
            rates.client_failure_rate_limit,
            key_function=client_address,
            scope="client-failure-address",
            shared=True,
            deduct_when=_unauthenticated,
        ),
        "sso-start-address": Limit(
            rates.sso_start_rate_limit, key_function=client_address, scope="sso-start-address", shared=True
        ),
        "mfa-address": Limit(rates.signin_rate_limit, key_function=client_address, scope="mfa-address", shared=True),
        "device-verify-address": Limit(
            rates.device_verify_rate_limit,
            key_function=client_address,
            scope="device-verify-address",
            shared=True,
            exempt_when=lambda: not _user_code_entry(),
        ),
        "account-mail-address": Limit(
            rates.account_mail_client_rate_limit, key_function=client_address, scope="account-mail-address", shared=True
        ),
        "account-mail-recipient": Limit(
            rates.account_mail_rate_limit, key_function=mail_recipient, scope="account-mail-recipient", shared=True
        ),
        "scim-credential": Limit(
            rates.scim_rate_limit,
            key_function=_scim_credential,
            scope="scim-credential",
            shared=True,
            exempt_when=lambda: request.endpoint not in SCIM_ENDPOINTS,
        ),
    }


def _endpoint_limits() -> dict[str, tuple[str, ...]]:
    """The limits of each limited endpoint but SCIM's, by scope, in the order of ``_limits``."""
    table: dict[str, tuple[str, ...]] = {}
    for endpoint in LIMITED_ENDPOINTS - SCIM_ENDPOINTS:
        scopes = []
        if endpoint in PASSWORD_ENDPOINTS or endpoint == TOKEN_ENDPOINT:
            scopes += ["signin-address", "signin-account"]
        if endpoint in TOKEN_RATE_ENDPOINTS:
            scopes.append("token-client")
        if endpoint in CLIENT_AUTHENTICATION_ENDPOINTS:
            scopes.append("client-failure-address")
        if endpoint == SSO_START_ENDPOINT:
            scopes.append("sso-start-address")
        if endpoint in MFA_ENDPOINTS:
            scopes.append("mfa-address")
        if endpoint in DEVICE_VERIFY_ENDPOINTS:
            scopes.append("device-verify-address")
        if endpoint in ACCOUNT_MAIL_ENDPOINTS:
            scopes += ["account-mail-address", "account-mail-recipient"]
        table[endpoint] = tuple(scopes)
    return table


ENDPOINT_LIMITS = _endpoint_limits()

# The limits, kept on the app from init_app (the limiter) to limit_views (the views).
_PENDING = "authsvc.limiter.pending"


def init_app(app: Flask) -> None:
    url = settings(app).redis_url
    options: dict[str, Any] = {}
    storage = "memory://"
    if url or settings(app).redis_sentinels:
        # The store's connection pool, with its short timeouts; with Sentinels, the pool that
        # follows the primary they name (limits' redis storage then uses the pool, not the URL).
        options = {"connection_pool": app.extensions["authsvc.redis"].connection_pool, "key_prefix": PREFIX}
        storage = url or "redis://"
    every = _limits(app)
    limiter = Limiter(
        key_func=client_address,
        # SCIM's limit is the only default one: its blueprint's own before_request (which
        # authenticates) must come after it, and only a default limit is checked that early.
        default_limits=[every["scim-credential"]],
        storage_uri=storage,
        storage_options=options,
        strategy="sliding-window-counter",
        # Redis down: count in this process instead, and never fail a request
        # because the counter could not be reached.
        in_memory_fallback_enabled=True,
        swallow_errors=True,
    )
    registries = (app.before_request_funcs, app.after_request_funcs, app.teardown_request_funcs)
    before = [list(registry.get(None, ())) for registry in registries]
    limiter.init_app(app)
    # Flask-Limiter hooks into every request of the app (it has no per-blueprint
    # init), and its hooks cost about 50 us of CPU per request (measured in
    # process, a no-op route: 202 -> 253 us; bench/README.md, "Public APIs on
    # the hot path"). Only endpoints of these blueprints are limited, so its
    # hooks move to them: every other request skips them. Its before_request
    # (the default limits) goes to SCIM's blueprint only; limit_views puts the
    # other limits on their views.
    blueprints = {endpoint.split(".")[0] for endpoint in LIMITED_ENDPOINTS}
    for registry, earlier in zip(registries, before, strict=True):
        added = [hook for hook in registry.get(None, ()) if hook not in earlier]
        registry[None] = earlier
        for blueprint in blueprints:
            hooks = list(added)
            if registry is app.before_request_funcs:
                hooks = [_find_the_domain_first] + (hooks if blueprint == "scim" else [])
            registry[blueprint].extend(hooks)
    app.extensions["authsvc.limiter"] = limiter
    app.extensions[_PENDING] = every


def limit_views(app: Flask) -> None:
    """Declare each endpoint's limits on its view (once the blueprints are registered).

    Flask-Limiter resolves and filters its default limits on every request it sees (all seven
    here, each parsed from its string and hashed, then all but one or two exempted: about 1,300
    Python calls per token request); a view's declared limits are only its own. They are checked
    when the view is called: after the before_request hooks, as the default limits were (these
    blueprints have none of their own), and before the view does anything.
    """
    limiter: Limiter = app.extensions["authsvc.limiter"]
    every: dict[str, Limit] = app.extensions.pop(_PENDING)
    declared = {
        scope: limiter.shared_limit(
            limit.limit_provider,
            scope,
            key_func=limit.key_function,
            exempt_when=limit.exempt_when,
            deduct_when=limit.deduct_when,
        )
        for scope, limit in every.items()
    }
    wrapped: dict[Callable[..., Any], tuple[tuple[str, ...], Callable[..., Any]]] = {}
    for endpoint in sorted(ENDPOINT_LIMITS):
        view = app.view_functions[endpoint]  # a KeyError: the table names an endpoint that is gone
        scopes = ENDPOINT_LIMITS[endpoint]
        if view not in wrapped:
            # Flask-Limiter keeps a view's limits by its name, and the wrapper of any one of them
            # checks them all, in the order they were declared: one wrapper is kept, not a stack of
            # them (each would cost the view's call through ensure_sync again).
            limited = [declared[scope](view) for scope in scopes]
            wrapped[view] = (scopes, limited[0])
        # Limits are kept by the view's name: two endpoints of one view must have the same ones.
        if wrapped[view][0] != scopes:
            raise RuntimeError(f"{endpoint} shares its view with an endpoint of other limits")
        app.view_functions[endpoint] = wrapped[view][1]


def retry_after() -> int:
    """Seconds until the rate limit this request broke lets a request through again."""
    try:
        breached = current_app.extensions["authsvc.limiter"].current_limit
        return max(1, math.ceil(breached.reset_at - time.time()))
    except Exception:  # noqa: BLE001 - the counter may be unreachable; a minute is a safe answer
        return 60
