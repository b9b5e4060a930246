"""SAML 2.0 sign-in: start (AuthnRequest out), the ACS (the IdP's POST), finish (the browser's own GET).

The IdP's page posts the response to the ACS from its own site: the browser
sends no SameSite=Lax cookie with it, so the ACS cannot tell which browser is
posting. It verifies the response against the pending request named by
``RelayState`` (our flow state's id, never a URL), keeps the verified result
under a one-time handoff id, and redirects. That second, top-level GET carries
the flow cookie the start set: ``finish`` signs in only the browser that began
the flow, so a response captured or made for someone else's flow signs
nobody in here (login CSRF).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from authsvc.core import actors, audit, clock, records, security, store
from authsvc.core.database import db
from authsvc.core.errors import ProviderUnavailable, SsoExpired
from authsvc.core.marks import N_
from authsvc.core.models import Domain, SsoProvider, User
from authsvc.core.settings import settings
from authsvc.sso import flow_state, saml, saml_setup, saml_slo
from authsvc.sso.flow import SignedIn
from authsvc.sso.linking import Profile, check_match_rules, link_identity, link_user
from authsvc.sso.providers import ProviderRefused, find_provider

log = logging.getLogger(__name__)

# How long a verified response waits for the browser's GET: one redirect.
HANDOFF_TTL = 120
# The store's kind of record (authsvc.core.store): a verified response, under the digest of its handoff id.
HANDOFF_KIND = "saml-handoff"


@dataclass(frozen=True)
class Handoff:
    """A verified response, waiting for the browser's GET (``finish``): whom it names and the flow it answered."""

    provider: str
    subject: str
    attributes: dict[str, list[str]]
    # Stored as "continue": records written before a deploy are still read after it.
    continue_url: str = field(metadata=records.stored_as("continue"))
    browser: str | None  # the digest of the starting browser's secret; None when unsolicited
    link_user: int | None = None
    name_id: dict[str, Any] | None = None
    session_index: str | None = None


def start(
    domain: Domain, provider: SsoProvider, continue_url: str, browser: str, holder: str, link_user: User | None = None
) -> str:
    """Keep the flow (our AuthnRequest's id) in Redis and return the IdP URL with the signed AuthnRequest."""
    refresh_if_stale(provider)
    state = security.new_secret()
    try:
        request_id, url = saml.authn_request(provider, domain.host, relay_state=state)
    except saml.SamlError as exc:
        raise ProviderUnavailable(N_("Sign-in provider unavailable"), exc.message) from None
    flow = flow_state.SamlFlow(
        provider=provider.id,
        continue_url=continue_url,
        browser=security.digest(browser),
        link_user=link_user.id if link_user is not None else None,
        request_id=request_id,
    )
    flow_state.save(state, flow, settings().sso_flow_ttl, holder)
    return url


def refresh_if_stale(provider: SsoProvider) -> None:
    """Refetch the IdP metadata when older than AUTHSVC_SAML_METADATA_MAX_AGE; a failure keeps the copy held.

    One worker tries per provider per AUTHSVC_SSO_JWKS_REFETCH_INTERVAL: an IdP
    whose metadata URL hangs costs one sign-in a timeout, not every sign-in.
    """
    interval = settings().sso_jwks_refetch_interval
    if not saml_setup.metadata_stale(provider) or not store.claim_jwks_refetch(f"saml:{provider.id}", interval):
        return
    try:
        changed = saml_setup.refresh_metadata(provider)
    except saml.SamlError as exc:
        db.session.rollback()
        log.warning("SAML provider %s: metadata refresh failed: %s", provider.id, exc.reason)
        return
    audit.record(
        "saml.metadata_refreshed",
        domain_id=provider.domain_id,
        actor=f"sso:{provider.id}",
        target=f"sso:{provider.id}",
        details={"after": {"changed": changed, "fetched_at": provider.saml_metadata_fetched_at}, "scheduled": True},
        commit=False,
    )
    db.session.commit()


def consume(domain: Domain, provider: SsoProvider, saml_response: str | None, relay_state: str | None) -> str:
    """Verify the IdP's POST to the ACS; return the handoff id the browser's GET finishes with.

    SamlError (audited as ``saml.refused``) when the response is refused.
    """
    try:
        return _consume(domain, provider, saml_response or "", relay_state or "")
    except saml.SamlError as exc:
        refused(provider, exc.reason)
        raise


def _consume(domain: Domain, provider: SsoProvider, saml_response: str, relay_state: str) -> str:
    found = flow_state.peek(relay_state) if relay_state and len(relay_state) <= 200 else None
    if found is not None and (not isinstance(found, flow_state.SamlFlow) or found.provider != provider.id):
        raise saml.SamlError("relay_state")
    flow = found if isinstance(found, flow_state.SamlFlow) else None
    if flow is None and not provider.saml_allow_unsolicited:
        # No pending request of ours: IdP-initiated, expired, already used, or someone else's.
        raise saml.SamlError("unsolicited")
    verified = saml.verify_response(provider, domain.host, saml_response, flow.request_id if flow else None)
    if not verified.subject:
        raise saml.SamlError("no_subject")
    if flow is not None and flow_state.claim(relay_state) is None:
        raise saml.SamlError("replayed")  # a concurrent POST of the same flow won
    lifetime = verified.not_on_or_after - clock.now() if verified.not_on_or_after else 0
    ttl = max(lifetime, settings().sso_flow_ttl) + provider.saml_clock_skew
    # An assertion id is accepted once, kept until the assertion expires (SAML 2.0 Profiles 4.1.4.5).
    if not store.claim_once(f"saml-seen:{provider.id}:{security.digest(verified.assertion_id)}", ttl):
        raise saml.SamlError("replayed")
    handoff = security.new_secret()
    verified_handoff = Handoff(
        provider=provider.id,
        subject=verified.subject,
        attributes=verified.attributes,
        continue_url=flow.continue_url if flow else "",
        browser=flow.browser if flow else None,
        link_user=flow.link_user if flow else None,
        name_id=verified.name_id,
        session_index=verified.session_index,
    )
    store.put(HANDOFF_KIND, handoff, records.dump(verified_handoff), HANDOFF_TTL)
    return handoff


def finish(domain: Domain, handoff: str | None, browser: str | None, session_user: User | None) -> SignedIn:
    """Sign in (or link) the account a verified response named, in the browser that started its flow."""
    taken = store.take(HANDOFF_KIND, handoff) if handoff and len(handoff) <= 200 else None
    data = records.load(Handoff, taken) if taken else None
    provider = find_provider(domain, data.provider) if data else None
    if data is None or provider is None:
        raise SsoExpired(N_("Sign-in expired"), N_("This sign-in link is invalid, was already used, or has expired."))
    if data.browser is not None and not (browser and security.digest_matches(browser, data.browser)):
        refused(provider, "browser")
        raise SsoExpired(N_("Sign-in expired"), N_("This sign-in was started in another browser."))
    claims = profile_claims(provider, data.subject, data.attributes)
    profile = Profile(uid=data.subject, email=claims.get("email"), name=claims.get("name") or "")
    try:
        check_match_rules(provider, claims, profile)
        linking = data.link_user
        if linking is not None:
            if session_user is None or session_user.id != linking:
                raise SsoExpired(N_("Sign-in expired"), N_("Sign in to your account again, then link it."))
            user = link_identity(provider, data.subject, session_user, actor=actors.of_user(linking), via="user")
        else:
            user = link_user(provider, profile, claims)
    except ProviderRefused as exc:
        refused(provider, exc.error)
        raise
    groups = _groups(provider, data.attributes)
    if groups is not None and linking is None:
        user.groups = groups
    audit.record(
        "saml.signin",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details={"provider": provider.id, "solicited": data.browser is not None},
        commit=False,
    )
    db.session.commit()
    # Linking starts no session: there is nothing for the IdP's logout to end.
    saml = None
    if linking is None:
        saml = saml_slo.session_record(provider, data.name_id or {}, data.session_index)
    return SignedIn(user=user, continue_url=data.continue_url, saml=saml)


def profile_claims(provider: SsoProvider, subject: str, attributes: dict[str, list[str]]) -> dict[str, Any]:
    """The response's attributes as claims (first values), with ``email`` and ``name`` read through the mapping."""
    claims: dict[str, Any] = {name: values[0] for name, values in attributes.items() if values}
    claims["sub"] = subject
    for field_name in ("email", "name"):
        value = next((claims[n] for n in saml.attribute_names(provider, field_name) if claims.get(n)), None)
        if value:
            claims[field_name] = value.strip().lower() if field_name == "email" else value.strip()
    return claims


def _groups(provider: SsoProvider, attributes: dict[str, list[str]]) -> list[str] | None:
    for name in saml.attribute_names(provider, "groups"):
        if name in attributes:
            return sorted({g.strip() for g in attributes[name] if g and g.strip() and len(g) <= 200})[:200]
    return None


def refused(provider: SsoProvider, reason: str) -> None:
    """Audit a refused SAML sign-in (committed at once: the refusal stands whatever follows)."""
    audit.record(
        "saml.refused",
        domain_id=provider.domain_id,
        actor=f"sso:{provider.id}",
        target=f"sso:{provider.id}",
        details={"provider": provider.id, "reason": reason},
    )
