"""The admin API's routes for what the consent page says (docs/api.md, docs/branding.md "Consent"):
``/api/engine/v2/domains/{id}/scope_descriptions`` and ``/api/engine/v2/oauth_apps/{id}/logo``.

The logo is the body of its PUT, the image itself, as the domain's logo is (authsvc.admin.branding_api).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from authsvc import admin
from authsvc.admin import consent_texts
from authsvc.admin.api import body, current_actor, image_upload
from authsvc.core.headers import no_store
from authsvc.core.models import Application, Domain
from authsvc.core.policy import unbudgeted

bp = unbudgeted(Blueprint("admin_consent_texts", __name__, url_prefix="/api/engine/v2"))


@bp.get("/domains/<record_id>/scope_descriptions")
@no_store
def get_scope_descriptions(record_id: str) -> Response:
    actor = current_actor()
    return jsonify(consent_texts.scope_descriptions(actor, admin.get(actor, Domain, record_id)))


@bp.put("/domains/<record_id>/scope_descriptions")
@no_store
def describe_scope(record_id: str) -> Response:
    """Set or (text null) remove one scope's description for one locale or any. Audited."""
    actor = current_actor()
    return jsonify(consent_texts.describe_scope(actor, admin.get(actor, Domain, record_id), body()))


@bp.get("/oauth_apps/<record_id>/logo")
@no_store
def get_application_logo(record_id: str) -> Response:
    actor = current_actor()
    return jsonify(consent_texts.application_logo(actor, admin.get(actor, Application, record_id)))


@bp.put("/oauth_apps/<record_id>/logo")
@no_store
def set_application_logo(record_id: str) -> Response:
    """The body is the image (checked by its content, re-encoded). Audited."""
    return image_upload(record_id, Application, consent_texts.set_application_logo)


@bp.delete("/oauth_apps/<record_id>/logo")
@no_store
def remove_application_logo(record_id: str) -> Response:
    actor = current_actor()
    return jsonify(consent_texts.remove_application_logo(actor, admin.get(actor, Application, record_id)))
