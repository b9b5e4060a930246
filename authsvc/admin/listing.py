"""Pages of records an actor may read, for the admin API and the console."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_, select

from authsvc.admin.actors import Actor
from authsvc.admin.sso_providers import sso_json
from authsvc.core.database import db
from authsvc.core.models import ApiKey, Application, Domain, LdapDirectory, RegistrationToken, SsoProvider, User


def listing(
    actor: Actor, model: type[Any], *, text: str | None, page: int, per_page: int, domain_id: int | None
) -> dict:
    """One page of ``model`` records the actor may read, filtered by ``text``."""
    query = select(model)
    domain_column = model.id if model is Domain else model.domain_id
    if not actor.system_admin:
        query = query.where(domain_column == actor.domain_id)
    if domain_id is not None:
        query = query.where(domain_column == domain_id)
    if text:
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").lower() + "%"
        columns = {
            Domain: (Domain.name, Domain.host),
            Application: (Application.name, Application.client_id),
            User: (User.email, User.name),
            ApiKey: (ApiKey.name, ApiKey.id),
            SsoProvider: (SsoProvider.name, SsoProvider.id),
            RegistrationToken: (RegistrationToken.name, RegistrationToken.id),
            LdapDirectory: (LdapDirectory.name, LdapDirectory.id),
        }[model]
        query = query.where(or_(*(func.lower(c).like(pattern, escape="\\") for c in columns)))
    total = db.session.scalar(select(func.count()).select_from(query.subquery()))
    order = model.created_at if model in (ApiKey, SsoProvider, RegistrationToken, LdapDirectory) else model.id
    rows = db.session.scalars(query.order_by(order, model.id).limit(per_page).offset((page - 1) * per_page))
    return {"items": [serialise(r) for r in rows], "total": total, "page": page, "per_page": per_page}


def serialise(record: Any) -> dict[str, Any]:
    if isinstance(record, SsoProvider):
        return sso_json(record)
    return record.as_json()
