"""Single sign-on through external identity providers (OpenID Connect or plain OAuth 2.0).

The flow: ``start`` keeps state, PKCE verifier and nonce in Redis and sends the
browser to the provider; ``finish`` claims that state once, exchanges the code
with Authlib's client, verifies the ID token (OIDC) or reads the userinfo URL,
maps the profile, links or creates the user, and keeps the provider's tokens
encrypted for ``resource_token``.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc import audit, security, store, validation
from authsvc.database import db, now
from authsvc.models import Domain, ExternalIdentity, SsoProvider, User

if TYPE_CHECKING:
    import requests
    from authlib.integrations.requests_client import OAuth2Session

# requests, Authlib's requests client and joserfc are imported inside the
# functions that talk to a provider: they cost every web worker about 15 MB,
# and only SSO sign-ins and delegated tokens use them.

log = logging.getLogger(__name__)

DEFAULT_MAPPINGS = {
    "uid": ["sub", "id", "oid"],
    "email": ["email", "mail", "userPrincipalName", "preferred_username"],
    "name": ["name", "displayName"],
    "first_name": ["given_name", "givenName"],
    "last_name": ["family_name", "surname"],
}

# SPEC 5.4: the delegated Microsoft Graph permissions the platform needs.
GRAPH_PERMISSIONS = [
    "Place.Read.All",
    "Calendars.ReadWrite",
    "Calendars.ReadWrite.Shared",
    "Contacts.Read",
    "Group.Read.All",
    "User.Read.All",
]
MICROSOFT_GRAPH = "https://graph.microsoft.com/"


def microsoft_preset(tenant: str) -> dict[str, Any]:
    """Microsoft Entra ID (v2.0 endpoints of ``tenant``) with Graph as the profile source."""
    login = f"https://login.microsoftonline.com/{tenant}"
    # Multi-tenant endpoints issue tokens whose issuer names the user's tenant.
    issuer_tenant = "{tenantid}" if tenant in MULTI_TENANT else tenant
    return {
        "kind": "oidc",
        "issuer": f"https://login.microsoftonline.com/{issuer_tenant}/v2.0",
        "authorize_url": f"{login}/oauth2/v2.0/authorize",
        "token_url": f"{login}/oauth2/v2.0/token",
        "userinfo_url": "https://graph.microsoft.com/v1.0/me",
        "jwks_url": f"{login}/discovery/v2.0/keys",
        "scopes": " ".join(["openid", "profile", "email", "offline_access", *GRAPH_PERMISSIONS]),
        "required_scopes": " ".join(["offline_access", *GRAPH_PERMISSIONS]),
        "token_endpoint_auth_method": "client_secret_post",
        "profile_mappings": {
            "uid": ["id", "oid"],
            "email": ["mail", "userPrincipalName"],
            "name": ["displayName", "name"],
            "first_name": ["givenName"],
            "last_name": ["surname"],
        },
        "preset": "microsoft",
        "tenant": tenant,
    }


MULTI_TENANT = ("common", "organizations", "consumers")


def email_trust_problem(tenant: str | None, trust_email: bool, match_rules: dict) -> str | None:
    """Why trusting e-mail would be unsafe for this provider, or None.

    A multi-tenant Entra app accepts any tenant, whose administrators set
    users' ``mail`` as they like: trusting it for linking lets them claim our
    users' accounts unless a ``tid`` match rule pins the tenants.
    """
    if trust_email and tenant in MULTI_TENANT and not match_rules.get("tid"):
        return "a multi-tenant Microsoft tenant needs a tid match rule before e-mail can be trusted"
    return None


# Sent by ``start`` itself: a provider's authorize_params may not replace them
# (a state of its own broke every start; a redirect_uri of its own went to the provider).
RESERVED_AUTHORIZE_PARAMS = frozenset(
    {"state", "nonce", "redirect_uri", "client_id", "response_type", "code_challenge", "code_challenge_method", "scope"}
)


def authorize_params_problem(params: dict) -> str | None:
    """Why ``params`` cannot be a provider's extra authorise parameters, or None."""
    reserved = sorted(name for name in params if str(name).strip().lower() in RESERVED_AUTHORIZE_PARAMS)
    if reserved:
        return f"{', '.join(reserved)} cannot be set: the service sends {'it' if len(reserved) == 1 else 'them'} itself"
    return None


def private_networks_allowed(provider: SsoProvider) -> bool:
    """Whether requests for ``provider`` may reach loopback, private networks and plain http.

    Only for a provider a system admin (or the command line) allowed, or every
    provider when the operator says so (AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS).
    """
    return bool(provider.allow_private_network or current_app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"])


def http_session(provider: SsoProvider, session: requests.Session | None = None) -> requests.Session:
    """``session`` (or a new one) with the destination rules for ``provider`` (see authsvc.outbound)."""
    from authsvc import outbound

    return outbound.guard(session, allow_private=private_networks_allowed(provider))


def admin_consent_url(provider: SsoProvider, callback_url: str) -> str | None:
    """Where a tenant administrator grants the permissions for the whole tenant."""
    if provider.preset != "microsoft":
        return None
    from urllib.parse import urlencode

    query = urlencode(
        {"client_id": provider.client_id, "redirect_uri": callback_url, "scope": f"{MICROSOFT_GRAPH}.default"}
    )
    return f"https://login.microsoftonline.com/{provider.tenant}/v2.0/adminconsent?{query}"


class SsoError(Exception):
    """The sign-in cannot go on. ``status`` 400: the browser's fault; 502: the provider's."""

    def __init__(self, status: int, title: str, message: str):
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


class ProviderRefused(Exception):
    """The provider said no (an OAuth error answer); ``error`` is its code."""

    def __init__(self, error: str):
        super().__init__(error)
        self.error = error


def providers_of(domain: Domain) -> list[SsoProvider]:
    return list(
        db.session.scalars(select(SsoProvider).where(SsoProvider.domain_id == domain.id).order_by(SsoProvider.name))
    )


def well_formed_id(provider_id: str | None) -> bool:
    """Whether ``provider_id`` could be a provider's id (hex, ``sso create``)."""
    return validation.text_id(provider_id)


def find_provider(domain: Domain, provider_id: str | None) -> SsoProvider | None:
    if not well_formed_id(provider_id):
        return None
    provider = db.session.get(SsoProvider, provider_id)
    return provider if provider is not None and provider.domain_id == domain.id else None


# Provider metadata (OIDC discovery, JWKS) is fetched once per process and kept a
# while, per URL and per destination rule (a provider allowed on private
# networks must not fill the cache of one that is not).
_metadata_cache: dict[tuple[str, bool], tuple[float, dict]] = {}
_METADATA_TTL = 3600


def _fetch_json(provider: SsoProvider, url: str, *, fresh: bool = False) -> dict:
    key = (url, private_networks_allowed(provider))
    cached = _metadata_cache.get(key)
    if cached and cached[0] > time.monotonic() and not fresh:
        return cached[1]
    with http_session(provider) as session:
        response = session.get(url, timeout=current_app.config["AUTHSVC_SSO_TIMEOUT"])
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    _metadata_cache[key] = (time.monotonic() + _METADATA_TTL, data)
    return data


@dataclass
class Endpoints:
    authorize_url: str
    token_url: str
    userinfo_url: str | None
    jwks_url: str | None
    issuer: str | None


def endpoints(provider: SsoProvider) -> Endpoints:
    """The provider's URLs: as configured, completed from OIDC discovery where missing."""
    found = Endpoints(
        provider.authorize_url, provider.token_url, provider.userinfo_url, provider.jwks_url, provider.issuer
    )
    if provider.kind == "oidc" and not (found.authorize_url and found.token_url and found.jwks_url):
        meta = _fetch_json(provider, provider.issuer.rstrip("/") + "/.well-known/openid-configuration")
        found.authorize_url = found.authorize_url or meta["authorization_endpoint"]
        found.token_url = found.token_url or meta["token_endpoint"]
        found.jwks_url = found.jwks_url or meta["jwks_uri"]
        found.userinfo_url = found.userinfo_url or meta.get("userinfo_endpoint")
    return found


def client_for(provider: SsoProvider, redirect_uri: str | None = None, **kwargs: Any) -> OAuth2Session:
    """Authlib's OAuth 2.0 client for ``provider``, with PKCE S256 and the destination rules."""
    from authlib.integrations.requests_client import OAuth2Session

    client = OAuth2Session(
        client_id=provider.client_id,
        client_secret=security.decrypt(provider.client_secret_encrypted),
        scope=provider.scopes,
        redirect_uri=redirect_uri,
        token_endpoint_auth_method=provider.token_endpoint_auth_method,
        code_challenge_method="S256",
        **kwargs,
    )
    http_session(provider, client)
    return client


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
    store.save_flow_state(
        state,
        {
            "provider": provider.id,
            "verifier": verifier,
            "nonce": nonce,
            "continue": continue_url,
            "callback": callback_url,
            "browser": security.digest(browser),
            "link_user": link_user.id if link_user is not None else None,
        },
        current_app.config["AUTHSVC_SSO_FLOW_TTL"],
        holder,
    )
    # Rows saved before reserved names were refused may still hold one: ours win.
    extra = {k: v for k, v in provider.authorize_params.items() if k.lower() not in RESERVED_AUTHORIZE_PARAMS}
    if nonce:
        extra["nonce"] = nonce
    url, _ = client_for(provider, callback_url).create_authorization_url(
        urls.authorize_url, state=state, code_verifier=verifier, **extra
    )
    return url


def _unreachable(provider: SsoProvider, exc: BaseException, what: str) -> SsoError:
    from authsvc import outbound

    if outbound.refused(exc):
        # Not the provider's fault: its URLs point where this service may not go.
        log.warning("SSO provider %s: destination refused (private address, plain http or a redirect)", provider.id)
        return SsoError(
            502,
            "Sign-in provider not allowed",
            f"{provider.name} is at an address this service may not call. Ask your administrator.",
        )
    title = "Sign-in provider unavailable" if what.startswith("cannot") else "Sign-in provider failed"
    return SsoError(502, title, f"{provider.name} {what}")


@dataclass
class SignedIn:
    user: User
    continue_url: str


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

    flow = store.claim_flow_state(state) if state and len(state) <= 200 else None
    if flow is None or not browser or not security.digest_matches(browser, flow["browser"]):
        raise SsoError(400, "Sign-in expired", "This sign-in link is invalid, was already used, or has expired.")
    provider = find_provider(domain, flow["provider"])
    if provider is None:
        raise SsoError(400, "Sign-in expired", "This sign-in link does not belong to this site.")
    linking = flow.get("link_user")
    if linking is not None and (session_user is None or session_user.id != linking):
        raise SsoError(400, "Sign-in expired", "Sign in to your account again, then link it.")
    if error or not code:
        raise ProviderRefused(error or "invalid_request")
    try:
        urls = endpoints(provider)
        token = client_for(provider, flow["callback"]).fetch_token(
            urls.token_url, code=code, code_verifier=flow["verifier"], timeout=current_app.config["AUTHSVC_SSO_TIMEOUT"]
        )
        claims = _claims(provider, urls, token, flow["nonce"])
    except OAuthError as exc:
        raise ProviderRefused(exc.error or "server_error") from None
    except (requests.RequestException, ValueError, KeyError, TypeError, JoseError) as exc:
        # Unreachable, slow, or answering garbage: the provider's fault, logged without its data.
        log.warning("SSO provider %s: sign-in failed: %s", provider.id, exc.__class__.__name__)
        raise _unreachable(provider, exc, "did not answer properly. Try again later.") from None
    profile = map_profile(provider, claims)
    check_match_rules(provider, claims, profile)
    if linking is not None:
        user = link_identity(provider, profile["uid"], session_user, actor=f"user:{session_user.id}", via="user")
    else:
        user = link_user(provider, profile, claims)
    # Stored with the provider's tokens, in their transaction.
    audit.record(
        "sso.signin",
        domain_id=domain.id,
        actor=f"user:{user.id}",
        target=f"user:{user.id}",
        details={"provider": provider.id},
        commit=False,
    )
    save_tokens(provider, user, profile["uid"], token)
    return SignedIn(user=user, continue_url=flow["continue"])


def _claims(provider: SsoProvider, urls: Endpoints, token: dict, nonce: str | None) -> dict:
    claims: dict = {}
    if provider.kind == "oidc":
        claims.update(verify_id_token(provider, urls, token.get("id_token"), nonce))
    if urls.userinfo_url:
        with http_session(provider) as session:
            response = session.get(
                urls.userinfo_url,
                headers={"Authorization": f"Bearer {token['access_token']}", "Accept": "application/json"},
                timeout=current_app.config["AUTHSVC_SSO_TIMEOUT"],
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
    from joserfc import jwt

    if not id_token or not isinstance(id_token, str):
        raise ValueError("no id_token in the token response")
    keys = _signing_keys(provider, urls.jwks_url, id_token)
    decoded = jwt.decode(id_token, keys, algorithms=["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"])
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
        nonce={"essential": True, "value": nonce},
    ).validate(claims)
    # OIDC Core 3.1.3.7: a token for several audiences names the party it was
    # issued to; it must be us, or another audience's token is replayed here.
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != provider.client_id:
        raise ValueError("the ID token's azp is not our client id")
    return claims


def _signing_keys(provider: SsoProvider, jwks_url: str, id_token: str) -> Any:
    """The provider's key set, refetched once when the token's kid is not in the cached one.

    A provider that rotates its keys signs with a kid our cache has not seen.
    One worker per provider per interval refetches (a claim in Redis), so
    tokens with made-up kids cannot make us hammer the provider; it shares
    what it fetched, which the other workers read instead of their stale copy.
    """
    from joserfc import jws
    from joserfc.jwk import KeySet

    kid = jws.extract_compact(id_token.encode()).headers().get("kid")
    keys = KeySet.import_key_set(_fetch_json(provider, jwks_url))
    if kid is None or kid in {key.kid for key in keys.keys}:
        return keys
    shared = store.load_jwks(provider.id, jwks_url)
    if shared is not None and kid in {key.get("kid") for key in shared.get("keys", []) if isinstance(key, dict)}:
        return KeySet.import_key_set(shared)
    if store.claim_jwks_refetch(provider.id, current_app.config["AUTHSVC_SSO_JWKS_REFETCH_INTERVAL"]):
        log.info("SSO provider %s: unknown key id, refetching its JWKS", provider.id)
        fresh = _fetch_json(provider, jwks_url, fresh=True)
        store.save_jwks(provider.id, jwks_url, fresh, _METADATA_TTL)
        keys = KeySet.import_key_set(fresh)
    return keys


def _first(claims: dict, names: list[str]) -> str | None:
    for name in names:
        value = claims.get(name)
        if isinstance(value, (str, int)) and str(value).strip():
            return str(value).strip()
    return None


def map_profile(provider: SsoProvider, claims: dict) -> dict[str, str | None]:
    mappings = {**DEFAULT_MAPPINGS, **provider.profile_mappings}
    profile = {field: _first(claims, names) for field, names in mappings.items()}
    if not profile.get("uid"):
        raise SsoError(502, "Sign-in provider failed", f"{provider.name} did not say who you are.")
    if profile.get("email"):
        profile["email"] = profile["email"].lower()
    if not profile.get("name"):
        profile["name"] = " ".join(p for p in (profile.get("first_name"), profile.get("last_name")) if p) or ""
    return profile


def check_match_rules(provider: SsoProvider, claims: dict, profile: dict) -> None:
    for claim, allowed in provider.match_rules.items():
        allowed = [str(v).lower() for v in (allowed if isinstance(allowed, list) else [allowed])]
        if claim == "email_domain":
            value = (profile.get("email") or "").rpartition("@")[2]
        else:
            value = str(claims.get(claim, "")).lower()
        if value not in allowed:
            raise ProviderRefused("not_allowed")


def link_user(provider: SsoProvider, profile: dict, claims: dict) -> User:
    """The user this external account signs in as: linked, matched by e-mail, or new."""
    for _ in range(2):
        identity = db.session.scalar(
            select(ExternalIdentity).where(
                ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == profile["uid"]
            )
        )
        if identity is not None:
            user = db.session.get(User, identity.user_id)
            if user.disabled:
                raise ProviderRefused("account_disabled")
            return user
        try:
            return _link_new_identity(provider, profile, claims)
        except IntegrityError:
            # A concurrent callback for the same account won the race; use its result.
            db.session.rollback()
    raise SsoError(409, "Sign-in conflict", "Your account is being set up elsewhere; try again.")


def _link_new_identity(provider: SsoProvider, profile: dict, claims: dict) -> User:
    email = profile.get("email")
    if not email:
        raise ProviderRefused("no_email")
    user = db.session.scalar(select(User).where(User.domain_id == provider.domain_id, User.email == email))
    if user is not None:
        refusal = _automatic_link_refusal(provider, user, claims)
        if refusal:
            code, reason = refusal
            _audit_link(provider, "sso.link_refused", user, actor=f"sso:{provider.id}", reason=reason)
            db.session.commit()
            raise ProviderRefused(code)
        via = "email"
    else:
        user = User(domain_id=provider.domain_id, email=email, name=profile.get("name") or "")
        db.session.add(user)
        db.session.flush()
        via = "new_user"
    db.session.add(ExternalIdentity(provider_id=provider.id, user_id=user.id, subject=profile["uid"]))
    _audit_link(provider, "sso.linked", user, actor=f"sso:{provider.id}", via=via)
    db.session.commit()
    return user


def _automatic_link_refusal(provider: SsoProvider, user: User, claims: dict) -> tuple[str, str] | None:
    """Why a first sign-in may not be linked to ``user`` (found by e-mail): (error code, audited reason)."""
    if not (claims.get("email_verified") is True or provider.trust_email):
        # Linking on an unverified address would let anyone who can set
        # that address at the provider take over the account.
        return "email_in_use", "email_not_verified"
    if user.disabled:
        return "account_disabled", "account_disabled"
    if user.system_admin or user.admin or user.support or user.service_account:
        # Whoever runs a provider (a domain admin can register one) controls
        # what it asserts: an e-mail claim must never be a way into a
        # privileged account. Such a link is the account holder's own step.
        return "link_required", "privileged_account"
    other = db.session.scalar(
        select(ExternalIdentity.id).where(
            ExternalIdentity.user_id == user.id, ExternalIdentity.provider_id != provider.id
        )
    )
    if other is not None:
        # The account already trusts another provider; this one's e-mail claim does not decide for it.
        return "link_required", "linked_to_another_provider"
    return None


def link_identity(provider: SsoProvider, subject: str, user: User, *, actor: str, via: str) -> User:
    """Link ``provider``'s account ``subject`` to ``user`` by an explicit step (the user, or a system admin).

    An account of the provider already linked to someone else stays theirs
    (ProviderRefused "identity_in_use"); linking it again to the same user is a no-op.
    """
    identity = db.session.scalar(
        select(ExternalIdentity).where(ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == subject)
    )
    if identity is not None:
        if identity.user_id == user.id:
            return user
        _audit_link(provider, "sso.link_refused", user, actor=actor, reason="identity_in_use", via=via)
        db.session.commit()
        raise ProviderRefused("identity_in_use")
    db.session.add(ExternalIdentity(provider_id=provider.id, user_id=user.id, subject=subject))
    _audit_link(provider, "sso.linked", user, actor=actor, via=via)
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise ProviderRefused("identity_in_use") from None
    return user


def _audit_link(provider: SsoProvider, event: str, user: User, *, actor: str, **details: str) -> None:
    audit.record(
        event,
        domain_id=provider.domain_id,
        actor=actor,
        target=f"user:{user.id}",
        details={"provider": provider.id, **details},
        commit=False,
    )


def _granted_scopes(provider: SsoProvider, token: dict) -> str:
    scope = token.get("scope")
    granted = (scope if isinstance(scope, str) else provider.scopes).split()
    granted = [s.removeprefix(MICROSOFT_GRAPH) for s in granted]
    if token.get("refresh_token") and "offline_access" not in granted:
        # Providers do not echo offline_access; a refresh token is the proof of it.
        granted.append("offline_access")
    return " ".join(dict.fromkeys(granted))


def save_tokens(provider: SsoProvider, user: User, subject: str, token: dict) -> None:
    identity = db.session.scalar(
        select(ExternalIdentity).where(ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == subject)
    )
    store_token(identity, provider, token)
    db.session.commit()
    missing = missing_scopes(provider, identity.granted_scopes)
    if missing:
        log.warning("SSO provider %s: permissions not granted: %s", provider.id, " ".join(missing))


def store_token(identity: ExternalIdentity, provider: SsoProvider, token: dict) -> None:
    """Keep a provider token answer on ``identity``, encrypted."""
    identity.access_token_encrypted = security.encrypt(token["access_token"])
    if token.get("refresh_token"):
        identity.refresh_token_encrypted = security.encrypt(token["refresh_token"])
    identity.expires_at = _expiry(token)
    identity.granted_scopes = _granted_scopes(provider, token)
    identity.needs_reauth = False
    identity.updated_at = now()


def _expiry(token: dict) -> int | None:
    """When the provider's access token expires, if the answer says so in a usable form."""
    for value, base in ((token.get("expires_in"), now()), (token.get("expires_at"), 0)):
        try:
            seconds = int(value)
        except (TypeError, ValueError):
            continue
        if 0 < seconds < 10 * 365 * 24 * 3600 or (base == 0 and seconds > 0):
            return base + seconds
    return None


def missing_scopes(provider: SsoProvider, granted: str) -> list[str]:
    have = {s.lower() for s in granted.split()}
    return [s for s in provider.required_scopes.split() if s.lower() not in have]


def check(provider: SsoProvider) -> dict[str, Any]:
    """What the latest sign-in through ``provider`` was granted, against what is required."""
    latest = db.session.scalar(
        select(ExternalIdentity)
        .where(ExternalIdentity.provider_id == provider.id, ExternalIdentity.access_token_encrypted.is_not(None))
        .order_by(ExternalIdentity.updated_at.desc(), ExternalIdentity.id.desc())
    )
    required = provider.required_scopes.split()
    if latest is None:
        return {"id": provider.id, "required": required, "granted": None, "missing": None,
                "note": "nobody has signed in through this provider yet"}  # fmt: skip
    return {
        "id": provider.id,
        "required": required,
        "granted": latest.granted_scopes.split(),
        "missing": missing_scopes(provider, latest.granted_scopes),
        "checked_at": latest.updated_at,
    }
