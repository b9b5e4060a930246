"""The admin API's invitations: /api/engine/v2/domains/{id}/invitations (list, invite), and each
invitation's resend and revoke. Routes on the admin API's blueprint (authsvc.admin.api)."""

from __future__ import annotations

from flask import Response, jsonify

from authsvc import admin
from authsvc.admin import invitations
from authsvc.admin.api import _created, body, bp, current_actor
from authsvc.core.headers import no_store
from authsvc.core.models import Domain


@bp.get("/domains/<record_id>/invitations")
@no_store
def list_invitations(record_id: str) -> Response:
    """The domain's invitations, oldest first (never their links)."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return jsonify(items=[i.as_json() for i in invitations.listing(actor, domain)])


@bp.post("/domains/<record_id>/invitations")
@no_store
def create_invitation(record_id: str) -> Response:
    """Invite an address by e-mail; the link is in the answer only when no mail can be sent."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    return _created(invitations.sent_json(invitations.invite(actor, domain, body())))


@bp.post("/domains/<record_id>/invitations/<invitation_id>/resend")
@no_store
def resend_invitation(record_id: str, invitation_id: str) -> Response:
    """A new link and expiry, by e-mail (the previous link stops working)."""
    actor = current_actor()
    invitation = invitations.of_domain(actor, admin.get(actor, Domain, record_id), invitation_id)
    return jsonify(invitations.sent_json(invitations.resend(actor, invitation)))


@bp.delete("/domains/<record_id>/invitations/<invitation_id>")
@no_store
def revoke_invitation(record_id: str, invitation_id: str) -> Response:
    """Revoke: the link stops working (an accepted invitation's account stays)."""
    actor = current_actor()
    invitation = invitations.of_domain(actor, admin.get(actor, Domain, record_id), invitation_id)
    return jsonify(invitations.revoke(actor, invitation).as_json())
