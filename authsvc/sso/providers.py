"""Upstream identity providers (OpenID Connect or plain OAuth 2.0): presets, discovery, endpoints.

Outbound HTTP to a provider follows authsvc.core.outbound's destination rules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast
from urllib.parse import urlencode, urlsplit

from sqlalchemy import select

from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.models import Domain, ExternalIdentity, SsoProvider
from authsvc.core.settings import settings

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

# docs/platform.md#delegated-permissions: the delegated Microsoft Graph permissions the platform needs.
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
    issuer_tenant = "{tenantid}" if tenant.lower() in MULTI_TENANT else tenant
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
MICROSOFT_LOGIN_HOSTS = ("login.microsoftonline.com", "login.microsoft.com")
PROVIDER_URL_FIELDS = ("issuer", "authorize_url", "token_url", "userinfo_url", "jwks_url")


def multi_tenant_microsoft(state: Mapping[str, Any]) -> bool:
    """Whether the provider ``state`` describes accepts accounts of any Entra tenant.

    Told by the tenant (in any case), and by the URLs themselves, so a provider
    registered without the preset is judged the same: an issuer with
    ``{tenantid}``, or a login.microsoftonline.com URL under a multi-tenant path.
    """
    if str(state.get("tenant") or "").strip().lower() in MULTI_TENANT:
        return True
    for name in PROVIDER_URL_FIELDS:
        url = str(state.get(name) or "")
        if "{tenantid}" in url.lower():
            return True
        parts = urlsplit(url.lower())
        if parts.hostname in MICROSOFT_LOGIN_HOSTS and parts.path.strip("/").split("/")[0] in MULTI_TENANT:
            return True
    return False


def email_trust_problem(state: Mapping[str, Any]) -> str | None:
    """Why trusting e-mail would be unsafe for the provider ``state`` describes, or None.

    ``state``: the provider's fields as they would be saved (``tenant``,
    ``trust_email``, ``match_rules`` and the URLs). A multi-tenant Entra app
    accepts any tenant, whose administrators set users' ``mail`` as they like:
    trusting it for linking lets them claim our users' accounts unless a
    ``tid`` match rule pins the tenants.
    """
    if state.get("trust_email") and multi_tenant_microsoft(state) and not (state.get("match_rules") or {}).get("tid"):
        return "a multi-tenant Microsoft tenant needs a tid match rule before e-mail can be trusted"
    return None


# Sent by ``start`` itself: a provider's authorize_params may not replace them
# (a state of its own broke every start; a redirect_uri of its own went to the provider).
# request, request_uri (RFC 9101) and response_mode would replace them from elsewhere or change how they come back.
RESERVED_AUTHORIZE_PARAMS = frozenset(
    {
        "state",
        "nonce",
        "redirect_uri",
        "client_id",
        "response_type",
        "code_challenge",
        "code_challenge_method",
        "scope",
        "request",
        "request_uri",
        "response_mode",
    }
)


def reserved_authorize_param(name: object) -> bool:
    """Whether ``name`` is a reserved authorise parameter, however it is spaced or cased."""
    return str(name).strip().lower() in RESERVED_AUTHORIZE_PARAMS


def authorize_params_problem(params: dict) -> str | None:
    """Why ``params`` cannot be a provider's extra authorise parameters, or None."""
    reserved = sorted(name for name in params if reserved_authorize_param(name))
    if reserved:
        return f"{', '.join(reserved)} cannot be set: the service sends {'it' if len(reserved) == 1 else 'them'} itself"
    return None


def private_networks_allowed(provider: SsoProvider) -> bool:
    """Whether requests for ``provider`` may reach loopback, private networks and plain http.

    Only for a provider a system admin (or the command line) allowed, or every
    provider when the operator says so (AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS).
    """
    return bool(provider.allow_private_network or settings().sso_allow_private_networks)


def http_session(provider: SsoProvider, session: requests.Session | None = None) -> requests.Session:
    """``session`` (or a new one) under the outbound rules (authsvc.core.outbound) for ``provider``."""
    from authsvc.core import outbound  # imports requests: see the note at the top

    return outbound.guard(
        session,
        allow_private=private_networks_allowed(provider),
        seconds=settings().outbound_deadline,
    )


def admin_consent_url(provider: SsoProvider, callback_url: str) -> str | None:
    """Where a tenant administrator grants the permissions for the whole tenant."""
    if provider.preset != "microsoft":
        return None
    query = urlencode(
        {"client_id": provider.client_id, "redirect_uri": callback_url, "scope": f"{MICROSOFT_GRAPH}.default"}
    )
    return f"https://login.microsoftonline.com/{provider.tenant}/v2.0/adminconsent?{query}"


class ProviderRefused(Exception):
    """The provider said no (an OAuth error answer); ``error`` is its code."""

    def __init__(self, error: str):
        super().__init__(error)
        self.error = error


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
METADATA_TTL = 3600


def fetch_json(provider: SsoProvider, url: str, *, fresh: bool = False) -> dict:
    key = (url, private_networks_allowed(provider))
    cached = _metadata_cache.get(key)
    if cached and cached[0] > time.monotonic() and not fresh:
        return cached[1]
    with http_session(provider) as session:
        response = session.get(url, timeout=settings().sso_timeout)
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    _metadata_cache[key] = (time.monotonic() + METADATA_TTL, data)
    return data


@dataclass
class Endpoints:
    authorize_url: str | None
    token_url: str | None
    userinfo_url: str | None
    jwks_url: str | None
    issuer: str | None


def endpoints(provider: SsoProvider) -> Endpoints:
    """The provider's URLs: as configured, completed from OIDC discovery where missing."""
    found = Endpoints(
        provider.authorize_url, provider.token_url, provider.userinfo_url, provider.jwks_url, provider.issuer
    )
    if provider.kind == "oidc" and not (found.authorize_url and found.token_url and found.jwks_url):
        # An OpenID Connect provider is one made with its issuer (admin.sso_providers).
        issuer = cast(str, provider.issuer)
        meta = fetch_json(provider, issuer.rstrip("/") + "/.well-known/openid-configuration")
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


def missing_scopes(provider: SsoProvider, granted: str) -> list[str]:
    have = {s.lower() for s in granted.split()}
    return [s for s in provider.required_scopes.split() if s.lower() not in have]


class ScopeCheck(TypedDict):
    """``check``'s answer (``sso check`` and the admin API's ``missing_scopes``): None before any sign-in."""

    id: str
    required: list[str]
    granted: list[str] | None
    missing: list[str] | None
    note: NotRequired[str]  # before any sign-in
    checked_at: NotRequired[int]  # the latest sign-in's time


def check(provider: SsoProvider) -> ScopeCheck:
    """What the latest sign-in through ``provider`` was granted, against what is required."""
    latest = db.session.scalar(
        select(ExternalIdentity)
        .where(ExternalIdentity.provider_id == provider.id, ExternalIdentity.access_token_encrypted.is_not(None))
        .order_by(ExternalIdentity.updated_at.desc(), ExternalIdentity.id.desc())
    )
    required = provider.required_scopes.split()
    if latest is None:
        return {
            "id": provider.id,
            "required": required,
            "granted": None,
            "missing": None,
            "note": "nobody has signed in through this provider yet",
        }
    return {
        "id": provider.id,
        "required": required,
        "granted": latest.granted_scopes.split(),
        "missing": missing_scopes(provider, latest.granted_scopes),
        "checked_at": latest.updated_at,
    }
