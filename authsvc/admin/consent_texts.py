"""What the consent page says (docs/branding.md, "Consent"): the domain's descriptions of its scopes and the
applications' logos, read by the domain's support and admins, changed by its admins; audited."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from authsvc.admin import logos
from authsvc.admin.actors import Actor, audit_change, commit, require_change
from authsvc.admin.schemas import read
from authsvc.core import scope_text
from authsvc.core.database import db
from authsvc.core.errors import ValidationFailed
from authsvc.core.models import Application, ApplicationLogo, Domain, ScopeDescription
from authsvc.core.validation import Invalid

DESCRIBED = "domain.scope_described"
LOGO_SET = "application.logo_updated"


def scope_descriptions(actor: Actor, domain: Domain) -> dict[str, Any]:
    """The domain's descriptions and the built-in ones (``admin.get`` checked the reading)."""
    rows = db.session.scalars(
        select(ScopeDescription)
        .where(ScopeDescription.domain_id == domain.id)
        .order_by(ScopeDescription.scope, ScopeDescription.locale)
    )
    return {
        "domain": str(domain.id),
        "descriptions": [
            {"scope": r.scope, "locale": r.locale or None, "text": r.text, "updated_at": r.updated_at} for r in rows
        ],
        "built_in": dict(scope_text.BUILT_IN),
    }


def describe_scope(actor: Actor, domain: Domain, data: Any) -> dict[str, Any]:
    """Set the description ``data`` gives (scope, locale, text); a null text removes it."""
    from authsvc.admin.schemas.consent_texts import ScopeDescriptionChange

    require_change(actor, domain.id)
    change = read(ScopeDescriptionChange, data)
    try:
        scope = scope_text.checked_scope(domain, change.scope)
    except Invalid as exc:
        raise ValidationFailed({"scope": str(exc)}) from None
    locale = change.locale or ""
    row = db.session.scalar(
        select(ScopeDescription).where(
            ScopeDescription.domain_id == domain.id, ScopeDescription.scope == scope, ScopeDescription.locale == locale
        )
    )
    before = {"scope": scope, "locale": locale or None, "text": row.text if row else None}
    if change.text is None:
        if row is not None:
            db.session.delete(row)
    elif row is None:
        db.session.add(ScopeDescription(domain_id=domain.id, scope=scope, locale=locale, text=change.text))
    else:
        row.text = change.text
    db.session.flush()
    audit_change(actor, DESCRIBED, domain.id, f"domain:{domain.id}", before, before | {"text": change.text})
    commit(f"the description of scope {scope!r}")
    return scope_descriptions(actor, domain)


def application_logo(actor: Actor, application: Application) -> dict[str, Any]:
    return _as_json(application, db.session.get(ApplicationLogo, application.id))


def set_application_logo(actor: Actor, application: Application, upload: bytes) -> dict[str, Any]:
    """Store ``upload`` as the application's logo, re-encoded (authsvc.core.logo); refused with the reason."""
    require_change(actor, application.domain_id)
    image = logos.reencoded(upload)
    row, before = _row(application)
    logos.put(row, image)
    return _save(actor, application, row, before)


def remove_application_logo(actor: Actor, application: Application) -> dict[str, Any]:
    """Remove the admin's logo (a logo_uri the client registered stays, shown as not verified)."""
    require_change(actor, application.domain_id)
    row, before = _row(application)
    logos.put(row, None)
    return _save(actor, application, row, before)


def _as_json(application: Application, row: ApplicationLogo | None) -> dict[str, Any]:
    image = {"content_type": row.logo_type, "digest": row.logo_digest} if row and row.logo_digest else None
    return {
        "application": str(application.id),
        "logo": image,
        "declared_logo_uri": row.declared_uri if row else None,
    }


def _row(application: Application) -> tuple[ApplicationLogo, dict[str, Any]]:
    row = db.session.get(ApplicationLogo, application.id)
    before = _as_json(application, row)
    if row is None:
        row = ApplicationLogo(application_id=application.id)
        db.session.add(row)
    return row, before


def _save(actor: Actor, application: Application, row: ApplicationLogo, before: dict[str, Any]) -> dict[str, Any]:
    db.session.flush()
    after = _as_json(application, row)
    audit_change(actor, LOGO_SET, application.domain_id, f"application:{application.id}", before, after)
    commit(f"the logo of application {application.client_id!r}")
    return after
