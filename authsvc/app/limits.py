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

from authsvc.core import security, store
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
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
# Nothing else is rate limited, so nothing else depends on the limiter's storage
# (inspect must keep answering from SQL while Redis is down).
LIMITED_ENDPOINTS = (
    PASSWORD_ENDPOINTS
    | DEVICE_VERIFY_ENDPOINTS
    | MFA_ENDPOINTS
    | REGISTRATION_ENDPOINTS
    | SCIM_ENDPOINTS
    | {TOKEN_ENDPOINT, SSO_START_ENDPOINT, DEVICE_AUTHORIZATION_ENDPOINT, PAR_ENDPOINT}
)
TOKEN_RATE_ENDPOINTS = REGISTRATION_ENDPOINTS | {TOKEN_ENDPOINT, DEVICE_AUTHORIZATION_ENDPOINT, PAR_ENDPOINT}

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
    if _password_attempt():
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


def _requesting_client() -> str:
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


def _setting(name: str) -> Callable[[], str]:
    """A rate that Flask-Limiter reads on each request: the setting ``name`` of Settings."""
    return lambda: getattr(settings(), name)


def _limits() -> list[Limit]:
    return [
        Limit(
            _setting("signin_rate_limit"),
            key_function=client_address,
            scope="signin-address",
            shared=True,
            exempt_when=lambda: not _password_attempt(),
        ),
        Limit(
            _setting("signin_account_rate_limit"),
            key_function=_attempted_account,
            scope="signin-account",
            shared=True,
            exempt_when=lambda: not _password_attempt() or not _attempted_account(),
            # Only failures are counted; a request over the rate is refused all the same.
            deduct_when=_refused,
        ),
        Limit(
            _setting("token_rate_limit"),
            key_function=_requesting_client,
            scope="token-client",
            shared=True,
            exempt_when=lambda: request.endpoint not in TOKEN_RATE_ENDPOINTS,
        ),
        Limit(
            _setting("sso_start_rate_limit"),
            key_function=client_address,
            scope="sso-start-address",
            shared=True,
            exempt_when=lambda: request.endpoint != SSO_START_ENDPOINT,
        ),
        Limit(
            _setting("signin_rate_limit"),
            key_function=client_address,
            scope="mfa-address",
            shared=True,
            exempt_when=lambda: request.endpoint not in MFA_ENDPOINTS,
        ),
        Limit(
            _setting("device_verify_rate_limit"),
            key_function=client_address,
            scope="device-verify-address",
            shared=True,
            exempt_when=lambda: not _user_code_entry(),
        ),
        Limit(
            _setting("scim_rate_limit"),
            key_function=_scim_credential,
            scope="scim-credential",
            shared=True,
            exempt_when=lambda: request.endpoint not in SCIM_ENDPOINTS,
        ),
    ]


def init_app(app: Flask) -> None:
    url = settings(app).redis_url
    options: dict[str, Any] = {}
    storage = "memory://"
    if url or settings(app).redis_sentinels:
        # The store's connection pool, with its short timeouts; with Sentinels, the pool that
        # follows the primary they name (limits' redis storage then uses the pool, not the URL).
        options = {"connection_pool": app.extensions["authsvc.redis"].connection_pool, "key_prefix": PREFIX}
        storage = url or "redis://"
    limiter = Limiter(
        key_func=client_address,
        default_limits=_limits(),
        storage_uri=storage,
        storage_options=options,
        strategy="sliding-window-counter",
        # Redis down: count in this process instead, and never fail a request
        # because the counter could not be reached.
        in_memory_fallback_enabled=True,
        swallow_errors=True,
    )
    limiter.request_filter(lambda: request.endpoint not in LIMITED_ENDPOINTS)
    registries = (app.before_request_funcs, app.after_request_funcs, app.teardown_request_funcs)
    before = [list(registry.get(None, ())) for registry in registries]
    limiter.init_app(app)
    # Flask-Limiter hooks into every request of the app (it has no per-blueprint
    # init), and its hooks cost about 50 us of CPU per request (measured in
    # process, a no-op route: 202 -> 253 us; bench/README.md, "Public APIs on
    # the hot path"). Only endpoints of these blueprints are limited, so its
    # hooks move to them: every other request skips them.
    blueprints = {endpoint.split(".")[0] for endpoint in LIMITED_ENDPOINTS}
    for registry, earlier in zip(registries, before, strict=True):
        added = [hook for hook in registry.get(None, ()) if hook not in earlier]
        registry[None] = earlier
        if registry is app.before_request_funcs:
            added.insert(0, _find_the_domain_first)
        for blueprint in blueprints:
            registry[blueprint].extend(added)
    app.extensions["authsvc.limiter"] = limiter


def retry_after() -> int:
    """Seconds until the rate limit this request broke lets a request through again."""
    try:
        breached = current_app.extensions["authsvc.limiter"].current_limit
        return max(1, math.ceil(breached.reset_at - time.time()))
    except Exception:  # noqa: BLE001 - the counter may be unreachable; a minute is a safe answer
        return 60
