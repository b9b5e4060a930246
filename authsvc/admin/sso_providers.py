"""SSO providers of a domain, and linking a user's account at one (a system admin's step)."""

from __future__ import annotations

import secrets
from typing import Any, cast

from flask import has_request_context, url_for
from sqlalchemy import delete, select

from authsvc.admin.actors import (
    Actor,
    audit_change,
    private_network_problems,
    require_change,
    save_change,
    save_new,
)
from authsvc.admin.saml_providers import create_saml_provider, saml_json, update_saml_provider
from authsvc.admin.schemas import read, target_domain
from authsvc.admin.users import user_domain
from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.errors import Conflict, Forbidden, ValidationFailed
from authsvc.core.models import ExternalIdentity, SsoProvider, User
from authsvc.core.settings import settings
from authsvc.sso import linking, providers


def sso_json(provider: SsoProvider) -> dict[str, Any]:
    """The provider, with the URLs an operator registers at the provider and what consent is missing."""
    if provider.kind == "saml":
        return saml_json(provider)
    out = provider.as_json()
    if has_request_context():
        out["callback_url"] = url_for("sso.callback", _external=True)
        consent = providers.admin_consent_url(provider, out["callback_url"])
        if consent:
            out["admin_consent_url"] = consent
    if provider.required_scopes:
        out["missing_scopes"] = providers.check(provider)["missing"]
    return out


SSO_URL_FIELDS = providers.PROVIDER_URL_FIELDS
# What decides who an account at the provider is: changed, the same subject may be someone else's.
SSO_IDENTITY_FIELDS = (*SSO_URL_FIELDS, "client_id", "profile_mappings")


def _check_sso_state(problems: dict[str, str], state: dict[str, Any]) -> None:
    """Rules over the whole provider as it would be saved, on create and on every update alike."""
    allowed = state.get("allow_private_network") or settings().sso_allow_private_networks
    if not allowed:
        for name in SSO_URL_FIELDS:
            problem = validation.public_url_problem(state[name]) if state.get(name) else None
            if problem:
                problems.setdefault(name, problem)
    problem = providers.email_trust_problem(state)
    if problem:
        problems["trust_email"] = problem


def _preset_base(
    problems: dict[str, str], values: dict[str, Any], preset: str | None, tenant: str | None
) -> dict[str, Any]:
    """What the preset, or the URLs given, make of the provider: its kind, and a preset's endpoints and mappings."""
    if preset == "microsoft":
        # As the CLI's: ASCII letters, digits, dots and dashes (str.isalnum() also takes "ᾢ").
        if not tenant or not all(c in ".-" or (c.isascii() and c.isalnum()) for c in tenant):
            problems["tenant"] = "a Microsoft tenant id or domain is needed"
            return {}
        return providers.microsoft_preset(tenant)
    if values.get("issuer"):
        return {"kind": "oidc"}
    if all(values.get(n) for n in ("authorize_url", "token_url", "userinfo_url")):
        return {"kind": "oauth2"}
    problems["issuer"] = "give issuer, or authorize_url, token_url and userinfo_url, or a preset"
    return {}


def create_sso_provider(actor: Actor, data: Any) -> SsoProvider:
    from authsvc.admin.schemas.sso import OidcSsoProviderCreate

    if isinstance(data, dict) and data.get("protocol") == "saml":
        return create_saml_provider(actor, data)
    domain = target_domain(actor, data)
    values = read(OidcSsoProviderCreate, data).given()
    values.pop("domain", None)
    secret = values.pop("client_secret")
    preset, tenant = values.pop("preset", None), values.pop("tenant", None)
    problems = private_network_problems(values, actor, "a provider")
    base = _preset_base(problems, values, preset, tenant)
    _check_sso_state(problems, {**base, **values, "tenant": tenant})
    if problems:
        raise ValidationFailed(problems)
    merged = {**base, **values}
    merged["profile_mappings"] = {**base.get("profile_mappings", {}), **values.get("profile_mappings", {})}
    merged.setdefault("scopes", "openid email profile" if merged["kind"] == "oidc" else "email profile")
    provider = SsoProvider(
        id=secrets.token_hex(8),
        domain_id=domain.id,
        client_secret_encrypted=security.encrypt(secret),
        **merged,
    )
    save_new(actor, provider, "sso", domain.id, "that SSO provider")
    return provider


def update_sso_provider(actor: Actor, provider: SsoProvider, data: Any) -> SsoProvider:
    from authsvc.admin.schemas.sso import OidcSsoProviderChange

    if provider.kind == "saml":
        return update_saml_provider(actor, provider, data)
    require_change(actor, provider.domain_id)
    before = provider.as_json()
    values = read(OidcSsoProviderChange, data).given()
    secret = values.pop("client_secret", None)
    problems = private_network_problems(values, actor, "a provider")
    if not actor.system_admin and any(name in values for name in SSO_URL_FIELDS):
        # Where an on-premises provider may be reached was a system admin's
        # decision for the URLs they saw; new URLs from anyone else lose it.
        values["allow_private_network"] = False
    if not actor.system_admin:
        _refuse_identity_changes_over_privileged_links(problems, provider, values)
    state = ("tenant", "trust_email", "match_rules", "allow_private_network", *SSO_URL_FIELDS)
    _check_sso_state(problems, {**{name: getattr(provider, name) for name in state}, **values})
    if problems:
        raise ValidationFailed(problems)
    if secret:
        values["client_secret_encrypted"] = security.encrypt(secret)
    save_change(actor, provider, "sso", before, values, {"client_secret_changed": True} if secret else None)
    return provider


def _refuse_identity_changes_over_privileged_links(
    problems: dict[str, str], provider: SsoProvider, values: dict[str, Any]
) -> None:
    """Refuse new identity settings while a privileged user signs in through ``provider``.

    Whoever points the provider at an IdP of their own decides which subject
    it asserts: with a system admin's subject, the link would sign them in as
    that system admin. Only a system admin may make such a change.
    """
    changed = [name for name in SSO_IDENTITY_FIELDS if name in values and values[name] != getattr(provider, name)]
    if not changed:
        return
    if linking.privileged_link(provider):
        for name in changed:
            problems[name] = (
                "only a system admin may change this while a privileged account (system admin, admin, support "
                "or service account) signs in through this provider"
            )


def delete_sso_provider(actor: Actor, provider: SsoProvider) -> None:
    require_change(actor, provider.domain_id)
    before = provider.as_json()
    db.session.execute(delete(ExternalIdentity).where(ExternalIdentity.provider_id == provider.id))
    db.session.delete(provider)
    audit_change(actor, "sso.deleted", provider.domain_id, f"sso:{provider.id}", before=before)
    db.session.commit()


def link_identity(actor: Actor, user: User, data: Any) -> ExternalIdentity:
    """Link an account at one of the user's domain's SSO providers to ``user``: a system admin's step.

    A first SSO sign-in never links itself to a privileged account, or to one
    that already trusts another provider; the account holder (signed in, at
    /auth/oauth2/link) or a system admin does it.
    """
    from authsvc.admin.schemas.sso import IdentityLink

    if not actor.system_admin:
        raise Forbidden()
    link = read(IdentityLink, data)
    provider = providers.find_provider(user_domain(user), link.provider)
    if provider is None:
        raise ValidationFailed({"provider": "no such SSO provider in the user's domain"})
    try:
        linking.link_identity(provider, link.subject, user, actor=actor.name, via="system_admin")
    except providers.ProviderRefused:
        raise Conflict("that account at the provider is already linked to another user") from None
    # link_identity has just linked it, in this transaction: the row is there.
    linked = db.session.scalar(
        select(ExternalIdentity).where(
            ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == link.subject
        )
    )
    return cast(ExternalIdentity, linked)
