"""OpenID Connect Back-Channel Logout 1.0: telling applications that a sign-in session ended.

When an application receives an ID token, its session's sid is noted in Redis
(store.remember_relying_party). When the session ends (sign-out, RP-initiated
logout, logout everywhere, a password change, an admin disabling the user or
ending their sessions: auth.sessions announces it), each such application
with a ``backchannel_logout_uri`` gets a Logout Token by POST.

The POSTs run off the request path, on a few threads per process with
bounded queues: a user's sign-out never waits for an application. An ended
session is read from Redis on one thread (``DISPATCHER``), and each of its
logouts is queued by destination (``SENDER``): one thread at most per
destination host and port, the destinations taking turns, so a slow or
stalling receiver delays its own logouts only. Each POST has the outbound
deadline (authsvc.core.outbound), and the receiver's answer body is read and
dropped. Each process
sends the logouts of the requests it served, so stateless instances need no
coordination; taking a session's record from Redis is atomic, so two
instances never both send for one session. A process that dies with logouts
queued loses them: the specification makes delivery best effort, and an
application's own sessions still expire.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import redis
from flask import Flask, current_app
from sqlalchemy import select

from authsvc.auth import sessions
from authsvc.core import audit, clock, store
from authsvc.core.background import BackgroundQueue, KeyedQueue
from authsvc.core.database import db
from authsvc.core.models import Application, Domain
from authsvc.core.settings import settings
from authsvc.oauth import keys

if TYPE_CHECKING:
    import requests

# requests (through core.outbound) is imported where a logout is sent: it costs
# every web worker memory, and most never send one.

log = logging.getLogger(__name__)

EVENT = "http://schemas.openid.net/event/backchannel-logout"
TOKEN_TYPE = "logout+jwt"  # Back-Channel Logout 2.4: the header's typ
TOKEN_TTL = 120  # seconds: the token is signed when its turn comes, and retried for a few seconds
ANSWER_READ_BYTES = 64 * 1024  # of a receiver's answer body, read and dropped (the status says it all)


def remember(sid: str | None, user_id: int, domain: Domain, issuer: str, application: Application) -> None:
    """Note that ``application`` received an ID token in the session ``sid``, for as long as a session lasts."""
    if not sid:
        return
    ttl = domain.session_ttl or settings().session_ttl
    try:
        store.remember_relying_party(sid, user_id, domain.id, issuer, application.id, ttl)
    except redis.RedisError:  # the token answer must not fail for it
        log.warning("application %s was not noted for back-channel logout (Redis)", application.client_id)


def logout_token(application: Application, session: store.RelyingParties) -> str:
    """The Logout Token (Back-Channel Logout 2.4), signed as the application's ID tokens are."""
    at = clock.now()
    claims = {
        "iss": session.iss,
        "sub": str(session.user),
        "aud": application.client_id,
        "iat": at,
        "exp": at + TOKEN_TTL,
        "jti": secrets.token_urlsafe(24),
        "sid": session.sid,
        "events": {EVENT: {}},
    }
    alg = application.id_token_signed_response_alg or keys.DEFAULT_ALGORITHM
    return keys.sign(application.domain, claims, alg, typ=TOKEN_TYPE)


def _post(http: requests.Session, url: str, token: str) -> str | None:
    """POST the token, with retries on what may pass (no answer, 5xx); None when delivered, else why not."""
    from authsvc.core import outbound  # imports requests: see the note at the top

    config = settings()
    attempts = max(1, config.backchannel_attempts)
    reason = "not sent"
    for attempt in range(attempts):
        if attempt:
            time.sleep(config.backchannel_backoff * 2 ** (attempt - 1))
        try:
            response = http.post(
                url,
                data={"logout_token": token},
                timeout=config.backchannel_timeout,
                headers={"Cache-Control": "no-store"},
            )
        except Exception as exc:  # noqa: BLE001 - any failure of the peer is reported, never raised
            if outbound.refused(exc):
                return "refused by the outbound rules"
            reason = exc.__class__.__name__  # DeadlineExceeded: no whole answer within AUTHSVC_OUTBOUND_DEADLINE
            continue
        if 200 <= response.status_code < 300:
            return None
        reason = f"HTTP {response.status_code}"
        if response.status_code < 500:
            return reason  # the application refused this token: sending it again will not help
    return f"{reason} after {attempts} attempts"


def deliver(sid: str) -> None:
    """Queue the Logout Tokens of the ended session ``sid``, by destination (in an app context)."""
    session = store.take_relying_parties(sid)
    if session is None:
        return
    applications = db.session.scalars(
        select(Application).where(
            Application.id.in_(session.applications),
            Application.domain_id == session.domain,
            Application.backchannel_logout_uri.is_not(None),
        )
    ).all()
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    for application in applications:
        # Grouped by domain: one domain's slow receivers cannot fill the queue that every domain shares.
        SENDER.put(
            # Only applications with a URI were read.
            destination(cast(str, application.backchannel_logout_uri)),
            (app, session, application.id),
            str(session.domain),
        )


def destination(url: str) -> str:
    """Where ``url`` sends to, as the sender's queues are keyed: the host and port."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{(parts.hostname or '').lower()}:{port or (80 if parts.scheme == 'http' else 443)}"


def send(session: store.RelyingParties, application_id: int) -> None:
    """POST the Logout Token of ``session`` to the application's URI; log and audit a failure."""
    from authsvc.core import outbound  # imports requests: see the note at the top

    application = db.session.get(Application, application_id)
    if application is None or not application.backchannel_logout_uri:
        return  # removed, or its URI cleared, since the session ended
    config = settings()
    with outbound.guard(
        None,
        allow_private=config.backchannel_allow_private_networks,
        seconds=config.outbound_deadline,
        max_bytes=ANSWER_READ_BYTES,
        keep_body=False,
    ) as http:
        problem = _post(http, application.backchannel_logout_uri, logout_token(application, session))
    if problem is None:
        log.info("back-channel logout delivered to application %s", application.client_id)
        return
    # No token, sid or user in the log line: what failed, and where.
    log.warning("back-channel logout to application %s failed: %s", application.client_id, problem)
    audit.record(
        "backchannel_logout.failed",
        domain_id=application.domain_id,
        actor="system",
        target=f"application:{application.id}",
        details={"uri": application.backchannel_logout_uri, "reason": problem},
    )


def _deliver_in(item: tuple[Flask, str]) -> None:
    app, sid = item
    with app.app_context():
        try:
            deliver(sid)
        finally:
            db.session.remove()


def _send_in(item: tuple[Flask, store.RelyingParties, int]) -> None:
    app, session, application_id = item
    with app.app_context():
        try:
            send(session, application_id)
        finally:
            db.session.remove()


def flush(timeout: float = 2.0) -> None:
    """Wait (at most about ``timeout`` seconds) until the logouts of the sessions ended so far are sent."""
    DISPATCHER.flush(timeout)
    SENDER.flush(timeout)


# One thread per process reads ended sessions (Redis and the database only); at most 1000 wait, then they are logged.
DISPATCHER: BackgroundQueue[tuple[Flask, str]] = BackgroundQueue(
    "authsvc-backchannel",
    _deliver_in,
    threads=1,
    on_full=lambda item: log.warning(
        "a session ended but its applications are not told: the back-channel logout queue is full"
    ),
    on_error=lambda item, exc: log.error("back-channel logout failed", exc_info=exc),
)

# Four threads per process POST the logouts, at most one on a destination at a time.
SENDER: KeyedQueue[tuple[Flask, store.RelyingParties, int]] = KeyedQueue(
    "authsvc-backchannel-send",
    _send_in,
    threads=4,
    per_key=1,
    group_bound=1000,
    on_full=lambda item: log.warning(
        "application %s is not told of a logout: too many of its logouts are waiting", item[2]
    ),
    on_error=lambda item, exc: log.error("back-channel logout failed", exc_info=exc),
)


def _sessions_ended(app: Flask, sids: list[str]) -> None:
    for sid in sids:
        DISPATCHER.put((app, sid))


def init_app(app: Flask) -> None:
    """Have every ended session's applications told, in every worker: also one that never issued an ID token.

    Connected when the app is built, not when this module is first imported: ID tokens (and this module with
    them) load at a worker's first use of ``openid``, and the worker that ends a session may not have had one.
    """
    sessions.sessions_ended.connect(_sessions_ended)  # once: blinker keeps one connection per receiver
