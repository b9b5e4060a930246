"""SAML 2.0 providers of a domain: create, update, refresh the IdP metadata (the admin API and the console).

An SsoProvider with ``protocol`` "saml"; create_sso_provider and
update_sso_provider hand such requests here.
"""

from __future__ import annotations

import secrets
from typing import Any

from authsvc.admin.actors import (
    Actor,
    audit_change,
    private_network_problems,
    require_change,
    save_change,
    save_new,
)
from authsvc.admin.schemas import read, target_domain
from authsvc.core import clock, validation
from authsvc.core.database import db
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import Domain, SsoProvider
from authsvc.core.settings import settings
from authsvc.sso import linking, saml, saml_setup

ATTRIBUTE_FIELDS = {"email_attribute": "email", "name_attribute": "name", "groups_attribute": "groups"}


def saml_json(provider: SsoProvider) -> dict[str, Any]:
    """The provider, with the URLs the IdP's administrator pastes (entity id, ACS, our metadata)."""
    domain = db.session.get_one(Domain, provider.domain_id)  # the provider's domain: its foreign key
    urls = saml.sp_urls(domain.host, provider.id)
    mappings = provider.profile_mappings
    return provider.as_json() | {
        "callback_url": urls["acs_url"],
        "metadata_url": urls["metadata_url"],
        "entity_id": urls["entity_id"],
        **{name: (mappings.get(field) or [None])[0] for name, field in ATTRIBUTE_FIELDS.items()},
    }


def _problems(values: dict[str, Any], actor: Actor) -> dict[str, str]:
    """What the settings given cannot be together, or from ``actor``."""
    problems = private_network_problems(values, actor, "a provider")
    if values.get("metadata_url") and values.get("metadata_xml"):
        problems["metadata_xml"] = "give metadata_url or metadata_xml, not both"
    return problems


def _check_url(problems: dict[str, str], url: str | None, allow_private: bool) -> None:
    allowed = allow_private or settings().sso_allow_private_networks
    problem = validation.public_url_problem(url) if url and not allowed else None
    if problem:
        problems["metadata_url"] = problem


def create_saml_provider(actor: Actor, data: Any) -> SsoProvider:
    from authsvc.admin.schemas.sso import SamlSsoProviderCreate

    domain = target_domain(actor, data)
    values = read(SamlSsoProviderCreate, data).given()
    problems = _problems(values, actor)
    if not values.get("metadata_url") and not values.get("metadata_xml"):
        problems.setdefault("metadata_url", "give metadata_url or metadata_xml")
    _check_url(problems, values.get("metadata_url"), bool(values.get("allow_private_network")))
    if problems:
        raise ValidationFailed(problems)
    provider_id = secrets.token_hex(8)
    try:
        provider = saml_setup.new_provider(
            provider_id,
            domain.id,
            domain.host,
            values["name"],
            metadata_xml=values.get("metadata_xml"),
            metadata_url=values.get("metadata_url"),
            attributes={field: values.get(name) for name, field in ATTRIBUTE_FIELDS.items()},
            allow_private_network=values.get("allow_private_network", False),
            allow_unsolicited=values.get("allow_unsolicited", False),
            clock_skew=values.get("clock_skew", 60),
            trust_email=values.get("trust_email", False),
        )
    except saml.SamlError as exc:
        raise ValidationFailed(
            {"metadata_url" if values.get("metadata_url") else "metadata_xml": exc.message}
        ) from None
    save_new(actor, provider, "sso", domain.id, "that SSO provider")
    return provider


def update_saml_provider(actor: Actor, provider: SsoProvider, data: Any) -> SsoProvider:
    """Change a SAML provider; new metadata (a file's, or a new URL's) is read before anything is saved."""
    from authsvc.admin.schemas.sso import SamlSsoProviderChange

    require_change(actor, provider.domain_id)
    before = provider.as_json()
    values = read(SamlSsoProviderChange, data).given()
    problems = _problems(values, actor)
    if "metadata_url" in values and not actor.system_admin:
        values["allow_private_network"] = False  # as for OIDC providers: a new URL loses a system admin's allowance
    private = values.get("allow_private_network", provider.allow_private_network)
    _check_url(problems, values.get("metadata_url"), private)
    if problems:
        raise ValidationFailed(problems)
    metadata_xml = values.pop("metadata_xml", None)
    metadata_url = values.pop("metadata_url", None)
    if (metadata_xml or metadata_url) and not actor.system_admin and linking.privileged_link(provider):
        # The metadata holds the IdP's signing certificate: whoever replaces it, even under the same
        # entity id, can sign assertions for the privileged accounts linked here (as for OIDC providers).
        problem = "only a system admin may change the IdP while a privileged account signs in through it"
        raise ValidationFailed({"metadata_url" if metadata_url else "metadata_xml": problem})
    if metadata_xml or metadata_url:
        try:
            if metadata_url:
                metadata_xml = saml_setup.fetch_metadata(metadata_url, private or settings().sso_allow_private_networks)
            entity_id = saml_setup.idp_entity_id(metadata_xml)
        except saml.SamlError as exc:
            raise ValidationFailed({"metadata_url" if metadata_url else "metadata_xml": exc.message}) from None
        provider.client_id = entity_id[:255]
        provider.saml_metadata_xml = metadata_xml
        provider.saml_metadata_url = metadata_url
        provider.saml_metadata_fetched_at = clock.now() if metadata_url else None
    mappings = dict(provider.profile_mappings)
    for name, field in ATTRIBUTE_FIELDS.items():
        if name in values:
            mappings[field] = [values.pop(name)]
    provider.profile_mappings = mappings
    renames = {"allow_unsolicited": "saml_allow_unsolicited", "clock_skew": "saml_clock_skew"}
    save_change(actor, provider, "sso", before, {renames.get(name, name): value for name, value in values.items()})
    return provider


def refresh_saml_metadata(actor: Actor, provider: SsoProvider) -> bool:
    """Refetch the IdP metadata now (a new signing certificate); whether it changed."""
    require_change(actor, provider.domain_id)
    if provider.kind != "saml":
        raise ValidationFailed({"id": "only a SAML provider has IdP metadata"})
    try:
        changed = saml_setup.refresh_metadata(provider, force=True)
    except saml.SamlError as exc:
        db.session.rollback()
        raise ValidationFailed({"metadata_url": exc.message}) from None
    audit_change(
        actor,
        "saml.metadata_refreshed",
        provider.domain_id,
        f"sso:{provider.id}",
        after={"changed": changed, "fetched_at": provider.saml_metadata_fetched_at},
    )
    db.session.commit()
    return changed
