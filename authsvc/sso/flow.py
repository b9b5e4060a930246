"""Single sign-on through external identity providers (OpenID Connect or plain OAuth 2.0).

The flow: ``start`` keeps state, PKCE verifier and nonce in Redis and sends the
browser to the provider; ``finish`` claims that state once, exchanges the code
with Authlib's client, verifies the ID token (OIDC) or reads the userinfo URL,
maps the profile, links or creates the user, and keeps the provider's tokens
encrypted for ``resource_token``.
"""

from __future__ import annotations

import logging
import math
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from authsvc.core import actors, audit, clock, security, store
from authsvc.core.errors import ProviderFailed, SsoError, SsoExpired, TooManyFlows
from authsvc.core.marks import N_
from authsvc.core.models import Domain, SsoProvider, User
from authsvc.core.settings import settings
from authsvc.sso import flow_state
from authsvc.sso.delegated import save_tokens
from authsvc.sso.linking import check_match_rules, link_identity, link_user, map_profile
from authsvc.sso.providers import (
    METADATA_TTL,
    Endpoints,
    ProviderRefused,
    client_for,
    endpoints,
    fetch_json,
    find_provider,
    http_session,
    reserved_authorize_param,
)
from authsvc.web import metrics
from authsvc.web.deployment import client_address

if TYPE_CHECKING:
    from joserfc.jwk import KeySet, KeySetSerialization

# requests, Authlib's requests client and joserfc are imported inside the
# functions that talk to a provider: they cost every web worker about 15 MB,
# and only SSO sign-ins and delegated tokens use them.

log = logging.getLogger(__name__)


def start(
    provider: SsoProvider,
    callback_url: str,
    continue_url: str,
    browser: str,
    holder: str,
    link_user: User | None = None,
) -> str:
    """Keep the flow's state in Redis, held by address ``holder``, and return the provider's authorisation URL.

    With ``link_user`` (the signed-in user, who asked for it), the callback
    links the provider's account to that user instead of signing someone in.

    ``browser`` is a secret the starting browser keeps in a cookie: the
    callback must come back with it, so nobody can hand a victim a callback
    URL of their own flow (login CSRF, RFC 9700 4.7).
    """
    import requests

    try:
        urls = endpoints(provider)
    except (requests.RequestException, ValueError, KeyError) as exc:
        log.warning("SSO provider %s: discovery failed: %s", provider.id, exc.__class__.__name__)
        raise _unreachable(provider, exc, "cannot be reached. Try again later.") from None
    state = security.new_secret()
    verifier = secrets.token_urlsafe(64)
    nonce = security.new_secret() if provider.kind == "oidc" else None
    flow = flow_state.OAuthFlow(
        provider=provider.id,
        continue_url=continue_url,
        browser=security.digest(browser),
        link_user=link_user.id if link_user is not None else None,
        verifier=verifier,
        nonce=nonce,
        callback=callback_url,
    )
    flow_state.save(state, flow, settings().sso_flow_ttl, holder)
    # Rows saved before reserved names were refused may still hold one: ours win.
    extra = {k: v for k, v in provider.authorize_params.items() if not reserved_authorize_param(k)}
    if nonce:
        extra["nonce"] = nonce
    url, _ = client_for(provider, callback_url).create_authorization_url(
        urls.authorize_url, state=state, code_verifier=verifier, **extra
    )
    return url


def _unreachable(provider: SsoProvider, exc: BaseException, what: str) -> SsoError:
    from authsvc.core import outbound  # imports requests: see the note at the top

    if outbound.refused(exc):
        # Not the provider's fault: its URLs point where this service may not go.
        log.warning("SSO provider %s: destination refused (private address, plain http or a redirect)", provider.id)
        return ProviderFailed(
            N_("Sign-in provider not allowed"),
            f"{provider.name} is at an address this service may not call. Ask your administrator.",
        )
    title = N_("Sign-in provider unavailable") if what.startswith("cannot") else N_("Sign-in provider failed")
    return ProviderFailed(title, f"{provider.name} {what}")


@dataclass
class SignedIn:
    user: User
    continue_url: str
    # A SAML sign-in's NameID and SessionIndex, kept with the session for Single Logout (saml_slo).
    saml: dict[str, Any] | None = None


def finish(
    domain: Domain,
    state: str | None,
    code: str | None,
    error: str | None,
    browser: str | None,
    session_user: User | None = None,
) -> SignedIn:
    """Complete the flow for the callback's ``state`` and ``code`` (or the provider's ``error``).

    ``browser`` is the flow cookie's value: a callback in another browser than
    the one that started the flow is refused. ``session_user`` is who the
    browser is signed in as: a linking flow links to them, and only if they
    are still the user who started it.
    """
    import requests
    from authlib.integrations.requests_client import OAuthError
    from joserfc.errors import JoseError

    flow = flow_state.claim(state) if state and len(state) <= 200 else None
    if not isinstance(flow, flow_state.OAuthFlow) or not browser or not security.digest_matches(browser, flow.browser):
        raise SsoExpired(N_("Sign-in expired"), N_("This sign-in link is invalid, was already used, or has expired."))
    provider = find_provider(domain, flow.provider)
    if provider is None:
        raise SsoExpired(N_("Sign-in expired"), N_("This sign-in link does not belong to this site."))
    linking = flow.link_user
    if linking is not None and (session_user is None or session_user.id != linking):
        raise SsoExpired(N_("Sign-in expired"), N_("Sign in to your account again, then link it."))
    # The signed-in user the flow links to (checked above to be the one who started it); None for a sign-in.
    linked_to = session_user if linking is not None else None
    if error or not code:
        raise ProviderRefused(error or "invalid_request")
    try:
        urls = endpoints(provider)
        token = client_for(provider, flow.callback).fetch_token(
            urls.token_url, code=code, code_verifier=flow.verifier, timeout=settings().sso_timeout
        )
        claims = _claims(provider, urls, token, flow.nonce)
    except OAuthError as exc:
        raise ProviderRefused(exc.error or "server_error") from None
    except (requests.RequestException, ValueError, KeyError, TypeError, JoseError) as exc:
        # Unreachable, slow, or answering garbage: the provider's fault, logged without its data.
        log.warning("SSO provider %s: sign-in failed: %s", provider.id, exc.__class__.__name__)
        raise _unreachable(provider, exc, "did not answer properly. Try again later.") from None
    profile = map_profile(provider, claims)
    check_match_rules(provider, claims, profile)
    if linked_to is not None:
        user = link_identity(provider, profile.uid, linked_to, actor=actors.of_user(linked_to.id), via="user")
    else:
        user = link_user(provider, profile, claims)
    # Stored with the provider's tokens, in their transaction.
    audit.record(
        "sso.signin",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_user(user.id),
        details={"provider": provider.id},
        commit=False,
    )
    save_tokens(provider, user, profile.uid, token)
    return SignedIn(user=user, continue_url=flow.continue_url)


def _claims(provider: SsoProvider, urls: Endpoints, token: dict, nonce: str | None) -> dict:
    claims: dict = {}
    if provider.kind == "oidc":
        claims.update(verify_id_token(provider, urls, token.get("id_token"), nonce))
    if urls.userinfo_url:
        with http_session(provider) as session:
            response = session.get(
                urls.userinfo_url,
                headers={"Authorization": f"Bearer {token['access_token']}", "Accept": "application/json"},
                timeout=settings().sso_timeout,
            )
        response.raise_for_status()
        userinfo = response.json()
        if not isinstance(userinfo, dict):
            raise ValueError("userinfo is not a JSON object")
        if provider.kind == "oidc" and "sub" in userinfo and userinfo["sub"] != claims.get("sub"):
            # OIDC Core 5.3.2: a userinfo answer for someone else is not to be trusted.
            raise ValueError("userinfo sub differs from the ID token's")
        claims = {**userinfo, **claims}
    return claims


def verify_id_token(provider: SsoProvider, urls: Endpoints, id_token: str | None, nonce: str | None) -> dict:
    """Signature (provider's JWKS), issuer, audience, azp, nonce and expiry, or ValueError/JoseError."""
    from joserfc import jws, jwt
    from joserfc.errors import BadSignatureError

    if not id_token or not isinstance(id_token, str):
        raise ValueError("no id_token in the token response")
    kid = jws.extract_compact(id_token.encode()).headers().get("kid")
    # endpoints() completes an OpenID Connect provider's jwks_uri, and only those send ID tokens.
    jwks_url = cast(str, urls.jwks_url)
    keys = _signing_keys(provider, jwks_url, kid)
    try:
        decoded = jwt.decode(id_token, keys, algorithms=UPSTREAM_ID_TOKEN_ALGORITHMS)
    except BadSignatureError:
        # A token without kid names no key to look for: a signature that fails
        # against the cached keys may just as well be the provider's rotation.
        fresh = _refetched_keys(provider, jwks_url, kid) if kid is None else None
        if fresh is None:
            raise
        decoded = jwt.decode(id_token, fresh, algorithms=UPSTREAM_ID_TOKEN_ALGORITHMS)
    claims = decoded.claims
    issuer = urls.issuer or ""
    if "{tenantid}" in issuer:
        issuer = issuer.replace("{tenantid}", str(claims.get("tid", "")))
    jwt.JWTClaimsRegistry(
        leeway=60,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": provider.client_id},
        sub={"essential": True},
        exp={"essential": True},
        # An OpenID Connect flow always has its nonce (start).
        nonce={"essential": True, "value": cast(str, nonce)},
    ).validate(claims)
    # OIDC Core 3.1.3.7: a token for several audiences names the party it was
    # issued to; it must be us, or another audience's token is replayed here.
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != provider.client_id:
        raise ValueError("the ID token's azp is not our client id")
    return claims


# What an upstream provider may sign the ID tokens it sends us with (OpenID Connect Core 1.0,
# section 3.1.3.7); asymmetric algorithms only, checked against the provider's jwks_uri.
UPSTREAM_ID_TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"]


def _key_set(document: dict[str, Any]) -> KeySet:
    """A provider's JWKS document as a key set (joserfc raises on a document that is none)."""
    from joserfc.jwk import KeySet

    return KeySet.import_key_set(cast("KeySetSerialization", document))


def _signing_keys(provider: SsoProvider, jwks_url: str, kid: str | None) -> Any:
    """The provider's key set, refetched once when the token's kid is not in the cached one."""
    keys = _key_set(fetch_json(provider, jwks_url))
    if kid is None or kid in {key.kid for key in keys.keys}:
        return keys
    return _refetched_keys(provider, jwks_url, kid) or keys


def _refetched_keys(provider: SsoProvider, jwks_url: str, kid: str | None) -> Any:
    """The provider's newer key set (with ``kid`` when one is named), or None when none may be fetched now.

    A provider that rotates its keys signs with a key our cache has not seen.
    One worker per provider per interval refetches (a claim in Redis), so
    tokens with made-up kids or bad signatures cannot make us hammer the
    provider; it shares what it fetched, which the other workers read instead
    of their stale copy.
    """
    shared = store.load_jwks(provider.id, jwks_url)
    if shared is not None:
        shared_kids = {key.get("kid") for key in shared.get("keys", []) if isinstance(key, dict)}
        if kid in shared_kids or (kid is None and shared != fetch_json(provider, jwks_url)):
            return _key_set(shared)
    if store.claim_jwks_refetch(provider.id, settings().sso_jwks_refetch_interval):
        log.info("SSO provider %s: unknown key, refetching its JWKS", provider.id)
        fresh = fetch_json(provider, jwks_url, fresh=True)
        store.save_jwks(provider.id, jwks_url, fresh, METADATA_TTL)
        return _key_set(fresh)
    return None


def refuse_if_holding_too_many_flows() -> None:
    """Raise TooManyFlows while the client address holds its share of unfinished SSO flows.

    Each start keeps a flow state in Redis for ``AUTHSVC_SSO_FLOW_TTL``; the
    rate alone would let one address keep rate x TTL of them. A finished flow
    gives its place back. Concurrent starts may pass this check together; the
    start rate bounds by how many.
    """
    bound = settings().sso_flows_per_address
    if bound <= 0:
        return
    held, first_expiry = flow_state.held(client_address())
    if held >= bound:
        metrics.RATE_LIMITED.labels(reason="sso_flows").inc()
        raise TooManyFlows(max(1, math.ceil(first_expiry - clock.time())))
