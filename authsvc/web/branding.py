"""The domain's brand on every page: its stylesheet and logo, served from our own host, and the layout's view of it.

Pages link ``/auth/branding/style.css?v=VERSION`` and show
``/auth/branding/logo?v=DIGEST``, both for the request's domain (and the consent page an application's
``/auth/branding/applications/CLIENT_ID/logo?v=DIGEST``, an admin's upload): a versioned
URL is cached for a year (a change gives a new URL), an unversioned or stale
one is revalidated by its ETag. Nothing is inline, so the pages' CSP
(authsvc.web.pages) stays as strict as without a brand (docs/branding.md).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, request
from sqlalchemy import select

from authsvc.core.branding import Brand, brand_of
from authsvc.core.database import db
from authsvc.core.models import Application, ApplicationLogo, Domain, DomainBranding
from authsvc.core.request_state import state_if_in_request
from authsvc.core.tenancy import current_domain

bp = Blueprint("branding", __name__, url_prefix="/auth/branding")

FOREVER = "public, max-age=31536000, immutable"
REVALIDATE = "public, no-cache"


@bp.app_template_global("page_brand")
def page_brand(domain: Any = None) -> Brand:
    """The brand of the page's ``domain`` (a template's variable, perhaps undefined), else of the request's."""
    if not isinstance(domain, Domain):
        noted = state_if_in_request()
        domain = noted.domain if noted is not None else None
    return brand_of(domain)


@bp.get("/style.css")
def stylesheet() -> Response:
    """The request's domain's colours, as CSS custom properties and the main button's rule."""
    brand = brand_of(current_domain())
    response = Response(brand.stylesheet(), mimetype="text/css")
    return _cached(response, str(brand.version or 0))


@bp.get("/logo")
def logo() -> Response:
    """The request's domain's logo (the re-encoded upload); 404 when it has none."""
    domain = current_domain()
    row = db.session.execute(
        select(DomainBranding.logo, DomainBranding.logo_type, DomainBranding.logo_digest).where(
            DomainBranding.domain_id == domain.id
        )
    ).first()
    return _logo(row)


@bp.get("/applications/<client_id>/logo")
def application_logo(client_id: str) -> Response:
    """The logo an admin set for an application of the request's domain (docs/branding.md); 404 when none."""
    domain = current_domain()
    row = db.session.execute(
        select(ApplicationLogo.logo, ApplicationLogo.logo_type, ApplicationLogo.logo_digest)
        .join(Application, Application.id == ApplicationLogo.application_id)
        .where(Application.client_id == client_id, Application.domain_id == domain.id)
    ).first()
    return _logo(row)


def _logo(row: Any) -> Response:
    if row is None or row.logo is None:
        abort(404)
    response = Response(row.logo, mimetype=row.logo_type)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'"
    return _cached(response, row.logo_digest)


def _cached(response: Response, version: str) -> Response:
    """Immutable for a year when the URL names the current version; else revalidated by the ETag."""
    response.set_etag(version)
    response.headers["Cache-Control"] = FOREVER if request.args.get("v") == version else REVALIDATE
    response.make_conditional(request)
    return response
