"""SAML 2.0 Single Logout, service provider side (SAML 2.0 Profiles 4.4): which sessions end, and when.

- At a SAML sign-in the session keeps the NameID and SessionIndex the
  assertion named, and an index in Redis (beside the session, with its TTL)
  maps the provider and NameID to the digests of the sessions it started.
- A signed LogoutRequest from the provider's IdP ends the sessions the index
  names (those of its SessionIndex values, or all of the NameID's when it names
  none), which sends the OpenID Connect back-channel logouts as any sign-out
  does, and is answered with our signed LogoutResponse. Its id is kept as long
  as a request is accepted: the same request twice is refused.
- Signing out here (GET /auth/logout) of such a session sends the browser to
  the IdP with our signed LogoutRequest, when the IdP's metadata names a single
  logout service; its LogoutResponse comes back to our SLO endpoint, which
  continues to the ``continue`` the sign-out was given (checked then).

The protocol messages themselves are authsvc.sso.saml_logout's.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any, cast

import redis
from flask import Flask

from authsvc.auth import sessions
from authsvc.auth.session_record import SignInSession
from authsvc.core import actors, audit, security, store
from authsvc.core.models import Domain, SsoProvider
from authsvc.core.settings import settings
from authsvc.sso import saml_logout
from authsvc.sso.providers import find_provider
from authsvc.sso.saml import SamlError

log = logging.getLogger(__name__)


def _sessions_key(provider_id: str, name_id: str) -> str:
    return f"{store.PREFIX}saml-sessions:{provider_id}:{security.digest(name_id)}"


def _seen_key(provider_id: str, request_id: str) -> str:
    return f"{store.PREFIX}saml-slo-seen:{provider_id}:{security.digest(request_id)}"


def _pending_key(relay_state: str) -> str:
    return f"{store.PREFIX}saml-slo-pending:{security.digest(relay_state)}"


def session_record(provider: SsoProvider, name_id: dict[str, str | None], session_index: str | None) -> dict:
    """What a session from a SAML sign-in keeps for Single Logout (its ``saml`` field)."""
    return {"provider": provider.id, "name_id": name_id, "session_index": session_index}


def remember(domain: Domain, session_id: str, saml: dict[str, Any]) -> None:
    """Index the new session ``session_id`` under its provider and NameID, for as long as a session lasts."""
    name_id = (saml.get("name_id") or {}).get("text")
    if not name_id:
        return
    ttl = domain.session_ttl or settings().session_ttl
    key = _sessions_key(saml["provider"], name_id)
    try:
        pipe = store.client().pipeline(transaction=False)
        pipe.hset(key, security.digest(session_id), saml.get("session_index") or "")
        pipe.expire(key, ttl)
        pipe.execute()
    except redis.RedisError:  # the sign-in must not fail for it; the IdP's logout will not reach this session
        log.warning("SAML provider %s: a session was not indexed for single logout (Redis)", saml["provider"])


def idp_logout(domain: Domain, provider: SsoProvider, binding: str, fields: dict[str, str]) -> dict[str, Any] | None:
    """Act on the IdP's LogoutRequest: end the sessions it names and return our answer (saml_logout.logout_response).

    None when the IdP's metadata names nowhere to answer (the sessions are ended all the same).
    SamlError when the request is refused: unsigned, badly signed, of another issuer, replayed, stale.
    """
    request = saml_logout.read_logout_request(provider, domain.host, binding, fields)
    skew = provider.saml_clock_skew
    seen_ttl = saml_logout.MAX_MESSAGE_AGE + 2 * skew
    if not store.client().set(_seen_key(provider.id, request.id), "1", nx=True, ex=seen_ttl):
        raise SamlError("replayed", "This LogoutRequest was already received.")
    key = _sessions_key(provider.id, request.name_id)
    # The store is a synchronous client (decode_responses): the hash maps session digests to SessionIndexes.
    indexed = cast(dict[str, str], store.client().hgetall(key))
    wanted = set(request.session_indexes)
    # Core 3.7.3.2: without SessionIndex, every session of the principal from this IdP ends.
    digests = [digest for digest, index in indexed.items() if not wanted or index in wanted]
    ended = sessions.end_named_sessions(digests)
    if digests:
        store.client().hdel(key, *digests)
    for user_id in sorted({record.user for record in ended}):
        audit.record(
            "saml.logout",
            domain_id=domain.id,
            actor=f"sso:{provider.id}",
            target=actors.of_user(user_id),
            details={"provider": provider.id, "initiated_by": "idp", "sessions": len(ended)},
        )
    try:
        return saml_logout.logout_response(provider, domain.host, request, binding, fields.get("RelayState"))
    except SamlError as exc:
        if exc.reason != "no_slo":
            raise
        return None


@sessions.signing_out.connect
def _signing_out(app: Flask, domain: Domain, record: SignInSession, continue_url: str) -> str | None:
    """The IdP URL with our LogoutRequest, for a session from a SAML sign-in whose IdP has an SLO endpoint."""
    saml = record.saml
    if not isinstance(saml, dict):
        return None
    provider = find_provider(domain, saml.get("provider") or "")
    if provider is None or provider.kind != "saml":
        return None
    relay_state = security.new_secret()
    try:
        built = saml_logout.logout_request(
            provider, domain.host, saml.get("name_id") or {}, saml.get("session_index"), relay_state
        )
        if built is None:
            return None
        request_id, url = built
        pending = {"provider": provider.id, "request_id": request_id, "continue": continue_url}
        store.client().set(_pending_key(relay_state), json.dumps(pending), ex=settings(app).sso_flow_ttl)
    except (SamlError, redis.RedisError) as exc:
        # Signed out here all the same; the IdP's session ends when it expires.
        log.warning("SAML provider %s: no LogoutRequest sent (%s)", provider.id, exc.__class__.__name__)
        return None
    audit.record(
        "saml.logout",
        domain_id=domain.id,
        actor=actors.of_user(record.user),
        target=actors.of_user(record.user),
        details={"provider": provider.id, "initiated_by": "sp", "sessions": 1},
    )
    return url


def idp_answered(domain: Domain, provider: SsoProvider, binding: str, fields: dict[str, str]) -> str:
    """Check the IdP's LogoutResponse to our pending LogoutRequest; where the browser continues."""
    relay_state = fields.get("RelayState") or ""
    raw = cast(str | None, store.client().getdel(_pending_key(relay_state))) if 0 < len(relay_state) <= 200 else None
    pending = json.loads(raw) if raw else None
    if pending is None or pending["provider"] != provider.id:
        raise SamlError("unsolicited", "This LogoutResponse answers no pending sign-out here.")
    answer = saml_logout.read_logout_response(provider, domain.host, binding, fields)
    if not hmac.compare_digest(answer.in_response_to or "", pending["request_id"]):
        raise SamlError("in_response_to", "This LogoutResponse answers another request.")
    if answer.status != "Success":
        log.info("SAML provider %s: the IdP answered our LogoutRequest with %s", provider.id, answer.status)
    return pending["continue"]


def refused(provider: SsoProvider, reason: str) -> None:
    """Audit a refused Single Logout message (committed at once)."""
    audit.record(
        "saml.logout_refused",
        domain_id=provider.domain_id,
        actor=f"sso:{provider.id}",
        target=f"sso:{provider.id}",
        details={"provider": provider.id, "reason": reason},
    )
