"""Sign-in sessions (the ``user`` cookie, kept in Redis) and ending a user's sessions, grants and tokens.

A user's ``sessions_valid_after`` is the watermark of everything granted through
a session: the sessions themselves, authorisation codes not yet exchanged and
device approvals not yet polled. ``invalidate_sessions`` moves it, and
``granted_since_invalidation`` is the one comparison every reader makes
(docs/security.md#ending-what-a-user-holds).

Whenever sessions end, ``sessions_ended`` is sent with their sids (the names ID
tokens carry), so that the applications signed in through them can be told
(OpenID Connect Back-Channel Logout, authsvc.oauth.backchannel).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import redis
from blinker import Namespace
from flask import Flask, Response, current_app, has_request_context, request
from sqlalchemy import event
from sqlalchemy.orm import Session

from authsvc.auth import ldap_signin, session_record
from authsvc.auth.session_record import SignInSession
from authsvc.core import actors, audit, clock, security, store
from authsvc.core.database import db
from authsvc.core.models import Domain, User
from authsvc.core.readers import entities
from authsvc.core.request_state import part
from authsvc.core.settings import settings
from authsvc.tokens import revocation
from authsvc.web import i18n

log = logging.getLogger(__name__)

SESSION_COOKIE = "user"

# Sent (sender: the app) with ``sids``, a list of the ended sessions' sids,
# once the sessions have ended: at once for a signed-out session, after the
# commit for a user's every session (a rolled-back change ends none).
sessions_ended = Namespace().signal("sessions-ended")
# Sent (sender: the app) with ``domain``, ``record`` (the signed-out session's)
# and ``continue_url`` when a user signs out here (GET /auth/logout). A receiver
# that must tell the user's identity provider (SAML Single Logout) returns the
# URL to send the browser to instead of ``continue_url``; others return None.
signing_out = Namespace().signal("signing-out")
# Sent (sender: the app) with ``response``, ``user`` and ``domain`` when a person signs in (a new session that
# replaces none of the same sign-in): the account's new-device notice (authsvc.account.devices) listens.
signed_in = Namespace().signal("signed-in")
_ENDED = "authsvc_sessions_ended"


def _sender() -> Flask:
    """The app behind ``current_app``: a signal's receivers are connected for the app itself, not its proxy."""
    # Flask annotates current_app as the app, so the proxy's own method is unknown to the type checker.
    app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    return app


def _announce(sids: list[str]) -> None:
    if sids:
        sessions_ended.send(_sender(), sids=sids)


@event.listens_for(Session, "after_commit")
def _announce_committed(session: Session) -> None:
    _announce(session.info.pop(_ENDED, []))


@event.listens_for(Session, "after_rollback")
def _forget_ended(session: Session) -> None:
    session.info.pop(_ENDED, None)


def _ended_session(record: SignInSession | None) -> None:
    if record and record.sid:
        _announce([record.sid])


def now() -> int:
    """The clock sign-in times are recorded and judged by, in seconds (authsvc.core.clock: tests move it)."""
    return clock.now()


def start_session(
    response: Response,
    user: User,
    domain: Domain,
    amr: list[str] | None = None,
    auth_time: int | None = None,
    saml: dict[str, Any] | None = None,
) -> str:
    """Start a new session for ``user``, set the ``user`` cookie on ``response`` and return the session id.

    ``amr``: how the user signed in (OpenID Connect's values; ``pwd`` unless given).
    ``auth_time``: when; now unless given (a session replacing one without a sign-in keeps its time).
    ``saml``: a SAML sign-in's NameID and SessionIndex, for Single Logout (session_record.SignInSession).
    """
    config = settings()
    previous = request.cookies.get(SESSION_COOKIE)
    if previous:
        # Signing in again replaces the session the browser had, not adds to it.
        _ended_session(session_record.take(previous))
    ttl = domain.session_ttl or config.session_ttl
    session_id = session_record.create(
        user.id,
        user.domain_id,
        ttl,
        amr,
        now() if auth_time is None else auth_time,
        saml,
        agent=request.headers.get("User-Agent"),
        address=request.remote_addr,
    )
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        max_age=ttl,
        httponly=True,
        secure=config.cookie_secure,
        samesite=config.cookie_samesite,
        path="/",
    )
    if auth_time is None:
        signed_in.send(_sender(), response=response, user=user, domain=domain)
    return session_id


def keep_only_this(response: Response, user: User, domain: Domain) -> None:
    """End every other session of ``user`` (and what was granted through them) and give this browser a new
    session of the same sign-in (its ``amr`` and ``auth_time``); the caller's changes commit here."""
    record = current_session(domain)
    amr = (record.amr if record else None) or ["pwd"]
    invalidate_sessions(user)
    db.session.commit()
    start_session(response, user, domain, amr=amr, auth_time=record.auth_time if record else now())


def live_sessions(user: User) -> list[session_record.Listed]:
    """``user``'s sessions that still let them in (of their domain, started after the last ``invalidate_sessions``)."""
    return [
        listed
        for listed in session_record.of_user(user.id)
        if listed.record.domain == user.domain_id and granted_since_invalidation(user, listed.record.created)
    ]


def current_digest() -> str | None:
    """The digest of the request's session id (what ``live_sessions`` names it by), if there is a cookie."""
    session_id = request.cookies.get(SESSION_COOKIE)
    return security.digest(session_id) if session_id else None


def end_session(response: Response) -> SignInSession | None:
    """End the request's session, if any, and delete its cookie; return the ended session's record."""
    session_id = request.cookies.get(SESSION_COOKIE)
    record = session_record.take(session_id) if session_id else None
    _ended_session(record)
    config = settings()
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        httponly=True,
        secure=config.cookie_secure,
        samesite=config.cookie_samesite,
    )
    return record


def end_named_sessions(session_digests: list[str]) -> list[SignInSession]:
    """End the sessions whose ids have these digests, announcing them; return the records of those still live."""
    ended = [record for record in map(session_record.take_named, session_digests) if record]
    _announce([record.sid for record in ended if record.sid])
    return ended


def signed_out_elsewhere(domain: Domain, record: SignInSession | None, continue_url: str) -> str | None:
    """Where the browser goes instead of ``continue_url`` after signing out of ``record`` (see ``signing_out``)."""
    if not record or record.domain != domain.id:
        return None
    results = signing_out.send(_sender(), domain=domain, record=record, continue_url=continue_url)
    return next((url for _, url in results if url), None)


@dataclass
class SessionRequest:
    """The request's session cookie, as read once (authsvc.core.request_state.part)."""

    read: bool = False
    user: User | None = None
    # The live session's record; None when the cookie names no live session of a user allowed in.
    record: SignInSession | None = None


def current_session(domain: Domain) -> SignInSession | None:
    """The record of the request's live session of ``domain``."""
    return part(SessionRequest).record if session_user(domain) is not None else None


def session_user(domain: Domain) -> User | None:
    """The user of the request's ``user`` session cookie, if it is live and of ``domain``."""
    noted = part(SessionRequest)
    if noted.read:
        return noted.user
    user = None
    session_id = request.cookies.get(SESSION_COOKIE)
    session = session_record.get(session_id) if session_id else None
    if session_id and session and session.domain == domain.id:
        # On a reader (authsvc.core.readers.entities): a request that goes on to write one row can do it in autocommit.
        candidate = entities.user(session.user)
        if (
            candidate is not None
            and not candidate.disabled
            and candidate.domain_id == domain.id
            and granted_since_invalidation(candidate, session.created)
            and directory_allows(candidate)
        ):
            user = candidate
            session_record.touch(session_id, session, request.remote_addr)
    noted.read, noted.user, noted.record = True, user, session if user is not None else None
    # The account's language, for the pages of this request (authsvc.web.i18n).
    i18n.note_saved(user.locale if user is not None else None)
    # Who acts when no credential says: the audit records of the request name them.
    audit.acting_for(user.id if user is not None else None)
    return user


def directory_allows(user: User) -> bool:
    """Whether ``user``'s LDAP directory still lets them in (asked at most every AUTHSVC_LDAP_RECHECK s).

    When it no longer does (entry gone, disabled, directory disabled), every
    session and token of the user ends here: a session or a refresh is how
    deprovisioning reaches someone who already signed in.
    """
    if ldap_signin.still_allowed(user):
        return True
    end_everything(user, via="directory_deprovisioned", actor="ldap")
    db.session.commit()
    return False


def granted_since_invalidation(user: User, granted_ms: int) -> bool:
    """Whether what ``user`` was granted at ``granted_ms`` (a session's start, a code's issue, a device
    approval; milliseconds, clock.now_ms) came after the last ``invalidate_sessions`` of the user."""
    return granted_ms >= user.sessions_valid_after


def invalidate_sessions(user: User) -> None:
    """Refuse every session ``user`` has now, and every grant made through one that is not yet a token (a
    code not yet exchanged, a device approval not yet polled); the sessions' ends are announced once the
    caller commits. Every event that ends what a user holds comes here (``end_everything``, ``enable``)."""
    user.sessions_valid_after = clock.now_ms() + 1
    try:
        # The sids now, not after the commit: a session started meanwhile is not ended.
        sids = store.user_sids(user.id)
    except redis.RedisError:
        # Ending the sessions must not fail for it; their applications are not told.
        log.warning("the sessions of user %s ended, but Redis did not name them for back-channel logout", user.id)
        return
    db.session.info.setdefault(_ENDED, []).extend(sids)


def end_everything(user: User, via: str = "end_sessions", actor: str | None = None) -> int:
    """Refuse every session of ``user`` and revoke every token; return how many tokens were live.

    Called whenever a user's password changes or the user is disabled: what
    was granted under the old state must not outlive it. The caller commits,
    and the audit record goes with that commit.
    """
    invalidate_sessions(user)
    revoked = revocation.revoke_of_user(user.id)
    if revoked:
        audit.record(
            "token.revoked",
            domain_id=user.domain_id,
            actor=actor or (audit.actor_of() if has_request_context() else "cli"),
            target=actors.of_user(user.id),
            details={"count": revoked, "via": via},
            commit=False,
        )
    return revoked


def change_password(user: User, password: str, actor: str | None = None) -> int:
    user.set_password(password)
    return end_everything(user, "password_changed", actor)


def disable(user: User, actor: str | None = None) -> int:
    user.disabled = True
    return end_everything(user, "user_disabled", actor)


def enable(user: User) -> None:
    """Let a disabled ``user`` in again. Nothing granted before counts again: the watermark moves once
    more, in case the account was disabled by a path that did not move it (a row changed by hand)."""
    user.disabled = False
    invalidate_sessions(user)
