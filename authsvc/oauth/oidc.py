"""OpenID Connect Core: what an ID token and the UserInfo endpoint state of a user and of a sign-in.

The ID tokens themselves (Authlib's ``OpenIDCode`` and ``OpenIDToken``, with
the domain's keys and the issuer) are authsvc.oauth.id_tokens', loaded at the
first grant that may carry one (authsvc.oauth.server).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from authsvc.auth.mfa import factors
from authsvc.core.branding import brand_of
from authsvc.core.database import db
from authsvc.core.models import Domain, User

if TYPE_CHECKING:
    from authlib.oidc.core import UserInfo


class SignInClaims:
    """What an ID token states of the sign-in behind a grant, under Authlib's AuthorizationCodeMixin names."""

    nonce: str | None
    auth_time: int | None
    amr: list[str] | None

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int | None:
        return self.auth_time

    def get_amr(self) -> list[str] | None:
        return self.amr

    def get_acr(self) -> str | None:
        # "mfa" when the sign-in passed a second factor (what acr_values=mfa asks for); else no claim.
        return factors.MFA_ACR if "mfa" in (self.amr or []) else None


@dataclass
class SignIn(SignInClaims):
    """The sign-in behind a refresh token (its grant's code is long spent)."""

    auth_time: int | None
    amr: list[str] | None
    sid: str | None
    nonce: str | None = None


def user_claims(user: User, scope: str) -> UserInfo:
    """The claims ``scope`` allows: ``sub`` always; ``profile``, ``email``, ``groups`` by scope."""
    # Authlib's OIDC package loads joserfc and cryptography (about 10 MB): not with the app.
    from authlib.oidc.core import UserInfo

    scopes = scope.split()
    claims = UserInfo(sub=str(user.id))
    if "profile" in scopes:
        claims["name"] = user.name
        locale = _locale_of(user)
        if locale:
            claims["locale"] = locale
    if "email" in scopes:
        claims["email"] = user.email
        # What is stored: an admin or the provider that created the user vouched for the address, or nobody did.
        claims["email_verified"] = bool(user.email_verified)
    if "groups" in scopes:
        claims["groups"] = list(user.groups or [])
    return claims


def _locale_of(user: User) -> str | None:
    """Core 5.1's ``locale`` (a BCP 47 tag such as ``pt-BR``): the user's chosen language, else the domain's
    default (its branding); None when neither says (docs/translations.md)."""
    chosen = user.locale
    if not chosen:
        # The domain is in the session already (the client's, the request's): no statement.
        domain = db.session.get(Domain, user.domain_id)
        chosen = brand_of(domain).default_locale
    return chosen.replace("_", "-") if chosen else None
