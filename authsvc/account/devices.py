"""The browsers a user signed in from, to tell them of a sign-in from one not seen before.

A browser is known by a long-lived random cookie (``authsvc_device``, HTTP-only,
one per browser whoever signs in with it); each user's known browsers are kept
as digests of the cookie's value with the user's id (two users of one browser
are not linked by it), at most ``KNOWN_PER_USER`` of them, the least recently
seen dropped first. A sign-in from a browser unknown to the user mails them a
notice, where the domain has ``new_device_notice`` on (the default); the very
first browser of a user is only remembered (nothing to compare it with).
docs/account.md#notices.
"""

from __future__ import annotations

from flask import Flask, Response, request
from sqlalchemy import BigInteger, ForeignKey, String, UniqueConstraint, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.account import agents, notices
from authsvc.auth import sessions
from authsvc.core import clock, security
from authsvc.core.database import Model, db
from authsvc.core.models import Domain, User
from authsvc.core.settings import settings

COOKIE = "authsvc_device"
# 400 days: the longest a browser keeps a cookie (RFC 6265bis 5.5).
COOKIE_AGE = 400 * 86400
KNOWN_PER_USER = 20


class KnownDevice(Model):
    __tablename__ = "known_device"
    __table_args__ = (UniqueConstraint("user_id", "digest", name="uq_known_device_user_digest"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"))
    digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[int] = mapped_column(BigInteger)
    seen_at: Mapped[int] = mapped_column(BigInteger)


def init_app(app: Flask) -> None:
    sessions.signed_in.connect(_signed_in)  # once: blinker keeps one connection per receiver


def _digest(user: User, secret: str) -> str:
    return security.digest(f"{user.id}:{secret}")


def _signed_in(app: Flask, response: Response, user: User, domain: Domain) -> None:
    if domain.new_device_notice:
        note(response, user, domain)


def note(response: Response, user: User, domain: Domain) -> None:
    """Remember the request's browser for ``user`` (setting its cookie if it has none) and, if the user
    had other browsers but not this one, queue the notice; commits."""
    secret = request.cookies.get(COOKIE, "")
    if not secret or len(secret) > 100:
        secret = security.new_secret()
    digest = _digest(user, secret)
    known = list(
        db.session.scalars(select(KnownDevice).where(KnownDevice.user_id == user.id).order_by(KnownDevice.seen_at))
    )
    moment = clock.now()
    this = next((device for device in known if device.digest == digest), None)
    if this is not None:
        this.seen_at = moment
    else:
        db.session.add(KnownDevice(user_id=user.id, digest=digest, created_at=moment, seen_at=moment))
        stale = known[: max(0, len(known) - KNOWN_PER_USER + 1)]
        if stale:
            db.session.execute(delete(KnownDevice).where(KnownDevice.id.in_([device.id for device in stale])))
        if known:
            browser = agents.describe(request.headers.get("User-Agent"))
            notices.new_device(domain, user, browser, request.remote_addr, moment)
    try:
        db.session.commit()
    except IntegrityError:
        # The same browser's other sign-in remembered it a moment ago.
        db.session.rollback()
    config = settings()
    response.set_cookie(
        COOKIE,
        secret,
        max_age=COOKIE_AGE,
        httponly=True,
        secure=config.cookie_secure,
        samesite=config.cookie_samesite,
        path="/",
    )
