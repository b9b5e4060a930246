"""The account page's API for single-page apps: /api/engine/v2/me, /me/sessions, /me/applications.

The caller is the user of the session cookie, or of an access token issued to
them with the ``openid`` scope (the scope an application asks for to act as a
signed-in person; an API key, or a token without it, is refused 403
``insufficient_scope``). Errors are the API's JSON (``error``,
``error_description``). A DELETE that rides on the session cookie is guarded
as every cookie-borne write is (authsvc.web.deployment: another origin's page
cannot make it). docs/api.md#your-account.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from authsvc.account import agents, changes
from authsvc.api import lookup
from authsvc.auth import approvals, sessions
from authsvc.auth.mfa import factors
from authsvc.auth.session_record import Listed
from authsvc.core import actors
from authsvc.core.database import db
from authsvc.core.errors import ApiError
from authsvc.core.headers import no_store
from authsvc.core.models import Domain, User
from authsvc.core.policy import unbudgeted
from authsvc.core.tenancy import current_domain

# Beside the admin API, under its prefix: with its per-statement timeout, as the approvals' JSON (authsvc.core.policy).
bp = unbudgeted(Blueprint("me", __name__, url_prefix="/api/engine/v2/me"))

SCOPE = "openid"


def _caller() -> tuple[User, Domain, bool]:
    """The user, their domain, and whether the request came with the session cookie (not a token)."""
    domain = current_domain()
    if lookup.presented():
        credential = lookup.authenticate(domain)
        if credential.kind != "token":
            raise ApiError(
                403, "insufficient_scope", "This needs the user's session or an access token issued to the user."
            )
        lookup.require_scopes(credential, SCOPE)
        return credential.user, domain, False
    user = sessions.session_user(domain)
    if user is None:
        raise ApiError(401, "login_required", "Sign in, or present an access token issued to you.")
    return user, domain, True


@bp.get("")
@no_store
def me() -> Response:
    user, _, _ = _caller()
    return jsonify(
        id=str(user.id),
        email=user.email,
        email_verified=user.email_verified,
        pending_email=changes.pending_email(user),
        name=user.name,
        domain=str(user.domain_id),
        has_password=bool(user.password_hash),
        factors=[{"id": str(f.id), "kind": f.kind, "name": f.name} for f in factors.confirmed_factors(user)],
    )


@bp.get("/sessions")
@no_store
def my_sessions() -> Response:
    user, _, by_cookie = _caller()
    current = sessions.current_digest() if by_cookie else None
    return jsonify(sessions=[_session(listed, current) for listed in sessions.live_sessions(user)])


def _session(listed: Listed, current: str | None) -> dict[str, Any]:
    record = listed.record
    return {
        "id": changes.public_id(listed),
        "device": str(agents.describe(record.agent)),
        "user_agent": record.agent,
        "address": record.address,
        "method": str(agents.method(record.amr)),
        "amr": record.amr or ["pwd"],
        "signed_in_at": record.auth_time,
        "last_seen_at": record.seen,
        "current": listed.digest == current,
    }


@bp.delete("/sessions/<session_id>")
@no_store
def end_my_session(session_id: str) -> Response:
    user, domain, _ = _caller()
    if not changes.end_session(user, domain, session_id[:64]):
        raise ApiError(404, "not_found", "You have no such session.")
    db.session.commit()
    return jsonify(id=session_id, ended=True)


@bp.get("/applications")
@no_store
def my_applications() -> Response:
    user, _, _ = _caller()
    return jsonify(
        applications=[
            {
                "client_id": c.client_id,
                "name": c.name,
                "scopes": c.scopes,
                "approved_at": c.approved_at,
                "since": c.since,
            }
            for c in approvals.connections(user)
        ]
    )


@bp.delete("/applications/<client_id>")
@no_store
def disconnect_my_application(client_id: str) -> Response:
    user, domain, _ = _caller()
    try:
        revoked = approvals.disconnect(user, domain, client_id, actors.of_user(user.id))
    except approvals.NotConnected:
        db.session.rollback()
        raise ApiError(404, "not_found", "This application is not connected to your account.") from None
    db.session.commit()
    return jsonify(client_id=client_id, revoked_tokens=revoked)
