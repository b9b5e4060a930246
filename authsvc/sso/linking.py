"""Linking an account at a provider to a user: profile mapping, match rules, first sign-in, explicit links."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc.core import actors, audit, validation
from authsvc.core.database import db
from authsvc.core.errors import ProviderFailed, SsoConflict
from authsvc.core.marks import N_
from authsvc.core.models import ExternalIdentity, SsoProvider, User
from authsvc.sso.providers import DEFAULT_MAPPINGS, ProviderRefused

# requests, Authlib's requests client and joserfc are imported inside the
# functions that talk to a provider: they cost every web worker about 15 MB,
# and only SSO sign-ins and delegated tokens use them.

log = logging.getLogger(__name__)


def _first(claims: dict, names: list[str]) -> str | None:
    for name in names:
        value = claims.get(name)
        if isinstance(value, (str, int)) and str(value).strip():
            return str(value).strip()
    return None


@dataclass(frozen=True)
class Profile:
    """Who signed in at the provider, in our terms: its account's id, the address and name it gave."""

    uid: str
    email: str | None
    name: str


def map_profile(provider: SsoProvider, claims: dict) -> Profile:
    """The profile the provider's claims give, by its mappings (DEFAULT_MAPPINGS where it names none)."""
    mappings = {**DEFAULT_MAPPINGS, **provider.profile_mappings}
    found = {field: _first(claims, names) for field, names in mappings.items()}
    uid, email, name = found.get("uid"), found.get("email"), found.get("name")
    if not uid:
        raise ProviderFailed(N_("Sign-in provider failed"), f"{provider.name} did not say who you are.")
    if not name:
        name = " ".join(p for p in (found.get("first_name"), found.get("last_name")) if p)
    return Profile(uid=uid, email=email.lower() if email else email, name=name)


def check_match_rules(provider: SsoProvider, claims: dict, profile: Profile) -> None:
    for claim, allowed in provider.match_rules.items():
        allowed = [str(v).lower() for v in (allowed if isinstance(allowed, list) else [allowed])]
        if claim == "email_domain":
            value = (profile.email or "").rpartition("@")[2]
        else:
            value = str(claims.get(claim, "")).lower()
        if value not in allowed:
            raise ProviderRefused("not_allowed")


def link_user(provider: SsoProvider, profile: Profile, claims: dict) -> User:
    """The user this external account signs in as: linked, matched by e-mail, or new."""
    for _ in range(2):
        identity = db.session.scalar(
            select(ExternalIdentity).where(
                ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == profile.uid
            )
        )
        if identity is not None:
            # A link's user is there: deleting a user deletes their links first (admin.users).
            user = cast(User, db.session.get(User, identity.user_id))
            if user.disabled:
                raise ProviderRefused("account_disabled")
            if not user.email_verified and profile.email == user.email and email_asserted(provider, claims):
                # The provider vouches now for the address it did not vouch for before.
                user.email_verified = True
                db.session.commit()
            if identity.via in AUTOMATIC and privileged(user):
                # Promoted since the first sign-in linked them (or linked before
                # this rule): what a provider asserts must not reach a privileged
                # account until its holder (or a system admin) links it.
                _audit_link(provider, "sso.link_refused", user, actor=f"sso:{provider.id}", reason="automatic_link")
                db.session.commit()
                raise ProviderRefused("link_required")
            return user
        try:
            return _link_new_identity(provider, profile, claims)
        except IntegrityError:
            # A concurrent callback for the same account won the race; use its result.
            db.session.rollback()
    raise SsoConflict(N_("Sign-in conflict"), N_("Your account is being set up elsewhere; try again."))


# How a first sign-in links by itself; "user" and "system_admin" are explicit steps.
AUTOMATIC = ("new_user", "email")


def privileged(user: User) -> bool:
    """Whether ``user`` holds a privilege an SSO provider's assertion alone may never reach."""
    return user.privileged


def privileged_link(provider: SsoProvider) -> bool:
    """Whether a privileged account (``User.privileged``) signs in through ``provider``: then only a
    system admin may change whom the provider asserts (its identity settings, a SAML IdP's metadata)."""
    found = db.session.scalar(
        select(ExternalIdentity.id)
        .join(User, User.id == ExternalIdentity.user_id)
        .where(ExternalIdentity.provider_id == provider.id, User.privileged)
        .limit(1)
    )
    return found is not None


def _link_new_identity(provider: SsoProvider, profile: Profile, claims: dict) -> User:
    if not profile.email:
        raise ProviderRefused("no_email")
    try:
        # The service's one e-mail rule: an address no other surface would take makes no user here either.
        email = validation.email(profile.email)
    except validation.Invalid:
        raise ProviderRefused("invalid_email") from None
    user = db.session.scalar(select(User).where(User.domain_id == provider.domain_id, User.email == email))
    if user is not None:
        refusal = _automatic_link_refusal(provider, user, claims)
        if refusal:
            code, reason = refusal
            _audit_link(provider, "sso.link_refused", user, actor=f"sso:{provider.id}", reason=reason)
            db.session.commit()
            raise ProviderRefused(code)
        via = "email"
        user.email_verified = True  # _automatic_link_refusal let it through only on an address the provider vouched for
    else:
        user = User(
            domain_id=provider.domain_id,
            email=email,
            name=profile.name or "",
            email_verified=email_asserted(provider, claims),
        )
        db.session.add(user)
        db.session.flush()
        via = "new_user"
    db.session.add(ExternalIdentity(provider_id=provider.id, user_id=user.id, subject=profile.uid, via=via))
    _audit_link(provider, "sso.linked", user, actor=f"sso:{provider.id}", via=via)
    db.session.commit()
    return user


def email_asserted(provider: SsoProvider, claims: dict) -> bool:
    """Whether ``provider`` vouches for the address it sends: an ``email_verified`` claim of JSON true, or trust_email.

    A SAML attribute is text, never JSON true: only trust_email vouches for a SAML provider's address.
    """
    return claims.get("email_verified") is True or provider.trust_email


def _automatic_link_refusal(provider: SsoProvider, user: User, claims: dict) -> tuple[str, str] | None:
    """Why a first sign-in may not be linked to ``user`` (found by e-mail): (error code, audited reason)."""
    if not email_asserted(provider, claims):
        # Linking on an unverified address would let anyone who can set
        # that address at the provider take over the account.
        return "email_in_use", "email_not_verified"
    if user.disabled:
        return "account_disabled", "account_disabled"
    if privileged(user):
        # Whoever runs a provider (a domain admin can register one) controls
        # what it asserts: an e-mail claim must never be a way into a
        # privileged account. Such a link is the account holder's own step.
        return "link_required", "privileged_account"
    other = db.session.scalar(select(ExternalIdentity.provider_id).where(ExternalIdentity.user_id == user.id).limit(1))
    if other is not None:
        # The account already signs in through some account at a provider (another
        # one's, or another account at this one): an e-mail claim does not add one.
        reason = "already_linked" if other == provider.id else "linked_to_another_provider"
        return "link_required", reason
    return None


def link_identity(provider: SsoProvider, subject: str, user: User, *, actor: str, via: str) -> User:
    """Link ``provider``'s account ``subject`` to ``user`` by an explicit step (the user, or a system admin).

    An account of the provider already linked to someone else stays theirs
    (ProviderRefused "identity_in_use"); linking it again to the same user
    makes an automatic link an explicit one (``via``), so a user promoted
    since can sign in through it again.
    """
    identity = db.session.scalar(
        select(ExternalIdentity).where(ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == subject)
    )
    if identity is not None:
        if identity.user_id == user.id:
            if identity.via in AUTOMATIC:
                identity.via = via
                _audit_link(provider, "sso.linked", user, actor=actor, via=via)
                db.session.commit()
            return user
        _audit_link(provider, "sso.link_refused", user, actor=actor, reason="identity_in_use", via=via)
        db.session.commit()
        raise ProviderRefused("identity_in_use")
    db.session.add(ExternalIdentity(provider_id=provider.id, user_id=user.id, subject=subject, via=via))
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
        target=actors.of_user(user.id),
        details={"provider": provider.id, **details},
        commit=False,
    )
