"""The admin API's branding routes: ``/api/engine/v2/domains/{id}/branding`` and its ``/logo`` (docs/api.md).

The fields are JSON (PUT changes those given); the logo is the body of its
own PUT, the image itself (PNG, JPEG or WebP, at most 256 KiB): as JSON it
would be a third larger, and past the admin API's body limit.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from authsvc import admin
from authsvc.admin import branding
from authsvc.admin.api import body, current_actor, image_upload
from authsvc.core.headers import no_store
from authsvc.core.models import Domain
from authsvc.core.policy import unbudgeted

bp = unbudgeted(Blueprint("admin_branding", __name__, url_prefix="/api/engine/v2"))


@bp.get("/domains/<record_id>/branding")
@no_store
def get_branding(record_id: str) -> Response:
    """The domain's branding (the default look: every field null)."""
    actor = current_actor()
    return jsonify(branding.get_branding(actor, admin.get(actor, Domain, record_id)))


@bp.put("/domains/<record_id>/branding")
@no_store
def set_branding(record_id: str) -> Response:
    """Change the fields given; null returns a field to the default. Audited."""
    actor = current_actor()
    return jsonify(branding.set_branding(actor, admin.get(actor, Domain, record_id), body()))


@bp.delete("/domains/<record_id>/branding")
@no_store
def reset_branding(record_id: str) -> Response:
    """Back to the default look: every field and the logo go. Audited."""
    actor = current_actor()
    return jsonify(branding.reset_branding(actor, admin.get(actor, Domain, record_id)))


@bp.put("/domains/<record_id>/branding/logo")
@no_store
def set_logo(record_id: str) -> Response:
    """The body is the image (checked by its content, re-encoded). Audited."""
    return image_upload(record_id, Domain, branding.set_logo)


@bp.delete("/domains/<record_id>/branding/logo")
@no_store
def remove_logo(record_id: str) -> Response:
    actor = current_actor()
    return jsonify(branding.remove_logo(actor, admin.get(actor, Domain, record_id)))
