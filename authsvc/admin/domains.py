"""Domains (tenants): a system admin creates and deletes them; their admins change them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from authsvc.admin.actors import Actor, audit_change, commit, require_change
from authsvc.admin.schemas import read
from authsvc.core import dependents
from authsvc.core.database import db
from authsvc.core.errors import Conflict, Forbidden, ValidationFailed
from authsvc.core.models import (
    DEFAULT_DOMAIN_SCOPES,
    FAPI2_PROFILE,
    RESERVED_SCOPES,
    SIGNUP_RESTRICTED,
    STANDARD_PROFILE,
    Application,
    Domain,
    LdapDirectory,
    ScimGroup,
    SsoProvider,
    User,
)
from authsvc.oauth import profile
from authsvc.tokens import api_keys, revocation


def create_domain(actor: Actor, data: Any) -> Domain:
    from authsvc.admin.schemas.domains import DomainCreate

    if not actor.system_admin:
        raise Forbidden()
    values = read(DomainCreate, data)
    host = values.host
    if db.session.scalar(select(Domain.id).where(Domain.host == host)):
        raise ValidationFailed({"host": "a domain with this host already exists"})
    domain = Domain(
        name=values.name,
        host=host,
        scopes=values.scopes or DEFAULT_DOMAIN_SCOPES,
        session_ttl=values.session_ttl,
        profile=values.profile or STANDARD_PROFILE,
    )
    db.session.add(domain)
    db.session.flush()
    audit_change(actor, "domain.created", domain.id, f"domain:{domain.id}", after=domain.as_json())
    commit(f"a domain with host {host!r}")
    return domain


def update_domain(actor: Actor, domain: Domain, data: Any) -> Domain:
    from authsvc.admin.schemas.domains import DomainChange

    require_change(actor, domain.id)
    before = domain.as_json()
    changes = read(DomainChange, data).given()
    problems: dict[str, str] = {}
    host, scopes = changes.get("host"), changes.get("scopes")
    if host is not None and host != domain.host:
        if not actor.system_admin:
            problems["host"] = "only a system admin may move a domain to another host"
        elif db.session.scalar(select(Domain.id).where(Domain.host == host)):
            problems["host"] = "a domain with this host already exists"
    if scopes is not None:
        in_use = _scopes_in_use(domain) - set(scopes.split()) - set(RESERVED_SCOPES)
        if in_use:
            problems["scopes"] = f"still used by applications or API keys: {' '.join(sorted(in_use))}"
    problems.update(_client_metadata_problems(actor, changes))
    if "signup_email_domains" in changes:
        changes["signup_email_domains"] = " ".join(changes["signup_email_domains"] or [])
    signup = changes.get("signup", domain.signup)
    if signup == SIGNUP_RESTRICTED and not changes.get("signup_email_domains", domain.signup_email_domains):
        problems["signup_email_domains"] = "restricted sign-up needs at least one e-mail domain"
    if problems:
        raise ValidationFailed(problems)
    if changes.get("profile") == FAPI2_PROFILE and not domain.fapi2:
        _require_compliant_applications(domain)
        profile.revoke_at_switch(domain, actor.name)
    for attr, value in changes.items():
        setattr(domain, attr, value)
    audit_change(actor, "domain.updated", domain.id, f"domain:{domain.id}", before, domain.as_json())
    commit(f"a domain with host {domain.host!r}")
    return domain


def _client_metadata_problems(actor: Actor, changes: dict[str, Any]) -> dict[str, str]:
    """The Client ID Metadata Document settings given (their hosts stored as text); fetching from private networks
    is a system admin's exception, as for identity providers."""
    if "client_metadata_hosts" in changes:
        changes["client_metadata_hosts"] = " ".join(dict.fromkeys(changes["client_metadata_hosts"] or []))
    if changes.get("client_metadata_allow_private_network") and not actor.system_admin:
        return {
            "client_metadata_allow_private_network": "only a system admin may allow client metadata documents "
            "on private networks"
        }
    return {}


def _require_compliant_applications(domain: Domain) -> None:
    """Refuse to put a domain under the FAPI 2.0 profile while an application of it would break a rule."""
    breaking = []
    for application in db.session.scalars(select(Application).where(Application.domain_id == domain.id)):
        problems = profile.application_problems(application)
        if problems:
            fields = ", ".join(sorted(problems))
            breaking.append(f"application {application.client_id} ({fields})")
    if breaking:
        raise Conflict(
            "FAPI 2.0 profile: every application must comply first (docs/fapi.md#switching-a-domain); these do "
            f"not: {'; '.join(breaking)}"
        )


def add_domain_scopes(actor: Actor, domain: Domain, data: Any) -> Domain:
    """Add ``scopes`` (such as PlaceOS resource scopes) to those the domain knows; known ones stay as they are."""
    from authsvc.admin.schemas.domains import DomainScopes

    require_change(actor, domain.id)
    added = read(DomainScopes, data).scopes
    return update_domain(actor, domain, {"scopes": " ".join(dict.fromkeys(domain.scope_list + added.split()))})


def remove_domain_scopes(actor: Actor, domain: Domain, data: Any) -> Domain:
    """Remove ``scopes`` that no application or live API key of the domain still has; ``public`` stays."""
    from authsvc.admin.schemas.domains import DomainScopes

    require_change(actor, domain.id)
    removed = set(read(DomainScopes, data).scopes.split())
    unknown = removed - set(domain.scope_list)
    if "public" in removed:
        raise ValidationFailed({"scopes": "'public' is the scope of every request that names none; it stays"})
    if unknown:
        raise ValidationFailed({"scopes": f"the domain has no scope {' '.join(sorted(unknown))}"})
    holders = [
        f"application {a.client_id}"
        for a in db.session.scalars(select(Application).where(Application.domain_id == domain.id))
        if removed & set(a.scope_list)
    ] + [f"API key {k.id}" for k in api_keys.live_of_domain(domain.id) if removed & set(k.scopes.split())]
    if holders:
        # Reserved scopes too: update_domain lets them go, but an application naming one here chose it.
        raise Conflict(f"still in use by {', '.join(holders)}; change those first")
    return update_domain(actor, domain, {"scopes": " ".join(s for s in domain.scope_list if s not in removed)})


def _scopes_in_use(domain: Domain) -> set[str]:
    used: set[str] = set()
    for scopes in db.session.scalars(select(Application.scopes).where(Application.domain_id == domain.id)):
        used.update(scopes.split())
    for key in api_keys.live_of_domain(domain.id):
        used.update(key.scopes.split())
    return used


def delete_domain(actor: Actor, domain: Domain, force: bool) -> None:
    if not actor.system_admin:
        raise Forbidden()
    has_apps = db.session.scalar(select(func.count()).where(Application.domain_id == domain.id))
    has_users = db.session.scalar(select(func.count()).where(User.domain_id == domain.id))
    if (has_apps or has_users) and not force:
        raise Conflict(f"the domain still has {has_apps} application(s) and {has_users} user(s); delete with force")
    before = domain.as_json()
    users = select(User.id).where(User.domain_id == domain.id).scalar_subquery()
    applications = select(Application.id).where(Application.domain_id == domain.id).scalar_subquery()
    providers = select(SsoProvider.id).where(SsoProvider.domain_id == domain.id).scalar_subquery()
    directories = select(LdapDirectory.id).where(LdapDirectory.domain_id == domain.id).scalar_subquery()
    groups = select(ScimGroup.id).where(ScimGroup.domain_id == domain.id).scalar_subquery()
    # Children first: tokens and keys, then what refers to the domain's users, applications,
    # providers, directories and groups, then those rows and the rest of the domain's (core.dependents).
    revocation.delete_of_users(users, applications)
    api_keys.delete_of_domain(domain.id)
    for table, rows in (
        ("user", users),
        ("application", applications),
        ("sso_provider", providers),
        ("ldap_directory", directories),
        ("scim_group", groups),
    ):
        dependents.delete_referrers(table, rows)
    dependents.delete_referrers("domain", domain.id)
    db.session.delete(domain)
    audit_change(actor, "domain.deleted", None, f"domain:{before['id']}", before=before)
    db.session.commit()
