"""Delegated provider tokens (``offline_access``; docs/platform.md): what lets the platform act for a user later.

SSO sign-in stores the provider's tokens on the user's ExternalIdentity,
encrypted; here they are handed out, refreshed near expiry, and cleared. When one cannot be
handed out, ``resource_token`` raises what happened (authsvc.core.errors: ``NoResourceToken``,
``ResourceSignInRequired``, ``ResourceProviderDown``), which the error table answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import false, select

from authsvc.core import security
from authsvc.core.database import db, now
from authsvc.core.errors import NoResourceToken, ResourceProviderDown, ResourceSignInRequired
from authsvc.core.models import ExternalIdentity, SsoProvider, User
from authsvc.core.settings import settings
from authsvc.sso import providers
from authsvc.sso.providers import MICROSOFT_GRAPH, missing_scopes

log = logging.getLogger(__name__)

# A delegated token this close to expiry is refreshed before it is handed out.
REFRESH_MARGIN = 300


@dataclass(frozen=True)
class ResourceToken:
    """A provider's access token for its user, in clear, and when it expires (None: the provider did not say)."""

    token: str
    expires: int | None

    def as_json(self) -> dict[str, Any]:
        return {"token": self.token, "expires": self.expires}


def resource_token(user: User, provider_id: str | None = None) -> ResourceToken:
    """A valid provider access token for ``user``, refreshed when within 5 minutes of expiry."""
    query = select(ExternalIdentity).where(
        ExternalIdentity.user_id == user.id, ExternalIdentity.access_token_encrypted.is_not(None)
    )
    if provider_id:
        # An id no provider can have (NUL, which PostgreSQL refuses, included) matches no identity.
        known = providers.well_formed_id(provider_id)
        query = query.where(ExternalIdentity.provider_id == provider_id if known else false())
    # The row lock makes concurrent refreshes of one identity take turns, so a
    # provider that rotates refresh tokens never sees a spent one from us.
    identity = db.session.scalar(
        query.order_by(ExternalIdentity.updated_at.desc(), ExternalIdentity.id.desc())
        .limit(1)
        .with_for_update(of=ExternalIdentity)
    )
    if identity is None:
        db.session.rollback()
        raise NoResourceToken()
    if identity.needs_reauth:
        db.session.rollback()
        raise ResourceSignInRequired("The provider refused a refresh; the user must sign in again.")
    if identity.expires_at is None or identity.expires_at - now() > REFRESH_MARGIN:
        answer = ResourceToken(token=_access_token(identity), expires=identity.expires_at)
        db.session.rollback()
        return answer
    _refresh(identity)
    answer = ResourceToken(token=_access_token(identity), expires=identity.expires_at)
    db.session.commit()
    return answer


def _access_token(identity: ExternalIdentity) -> str:
    # resource_token reads only an identity that holds an access token, and a refresh replaces it with another.
    return security.decrypt(cast(str, identity.access_token_encrypted))


def _refresh(identity: ExternalIdentity) -> None:
    # Imported here, not at the top: see authsvc/providers.py.
    import requests
    from authlib.integrations.requests_client import OAuthError

    provider = identity.provider
    if not identity.refresh_token_encrypted:
        identity.needs_reauth = True
        db.session.commit()
        raise ResourceSignInRequired("No refresh token is stored; the user must sign in again.")
    try:
        token = providers.client_for(provider).refresh_token(
            providers.endpoints(provider).token_url,
            refresh_token=security.decrypt(identity.refresh_token_encrypted),
            timeout=settings().sso_timeout,
        )
    except OAuthError as exc:
        log.warning(
            "SSO provider %s refused a refresh (%s); identity %s needs a new sign-in",
            provider.id,
            exc.error,
            identity.id,
        )
        identity.needs_reauth = True
        db.session.commit()
        raise ResourceSignInRequired("The provider refused the refresh; the user must sign in again.") from None
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        db.session.rollback()
        log.warning("SSO provider %s: refresh failed: %s", provider.id, exc.__class__.__name__)
        raise ResourceProviderDown() from None
    store_token(identity, provider, token)


def clear_tokens(user: User) -> int:
    """Forget every stored provider token of ``user``; return how many identities held some."""
    cleared = 0
    for identity in db.session.scalars(select(ExternalIdentity).where(ExternalIdentity.user_id == user.id)):
        if identity.access_token_encrypted or identity.refresh_token_encrypted:
            cleared += 1
        identity.access_token_encrypted = identity.refresh_token_encrypted = None
        identity.expires_at = None
    db.session.commit()
    return cleared


def _granted_scopes(provider: SsoProvider, token: dict) -> str:
    scope = token.get("scope")
    granted = (scope if isinstance(scope, str) else provider.scopes).split()
    granted = [s.removeprefix(MICROSOFT_GRAPH) for s in granted]
    if token.get("refresh_token") and "offline_access" not in granted:
        # Providers do not echo offline_access; a refresh token is the proof of it.
        granted.append("offline_access")
    return " ".join(dict.fromkeys(granted))


def save_tokens(provider: SsoProvider, user: User, subject: str, token: dict) -> None:
    # The sign-in that got ``token`` has just linked ``subject``, in this transaction: the row is there.
    identity = cast(
        ExternalIdentity,
        db.session.scalar(
            select(ExternalIdentity).where(
                ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == subject
            )
        ),
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
    candidates: tuple[tuple[Any, int], ...] = ((token.get("expires_in"), now()), (token.get("expires_at"), 0))
    for value, base in candidates:
        try:
            seconds = int(value)
        except (TypeError, ValueError):
            continue
        if 0 < seconds < 10 * 365 * 24 * 3600 or (base == 0 and seconds > 0):
            return base + seconds
    return None
