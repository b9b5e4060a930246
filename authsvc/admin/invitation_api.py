"""The admin API's invitations: /api/engine/v2/domains/{id}/invitations (list, invite, revoke: wired by
authsvc.admin.domain_collections), and each invitation's resend. Routes on the admin API's blueprint
(authsvc.admin.api)."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify

from authsvc.admin import invitations
from authsvc.admin.actors import Actor
from authsvc.admin.api import bp
from authsvc.admin.domain_collections import actor_and_domain, domain_collection
from authsvc.core.headers import no_store
from authsvc.core.models import Domain


def _invite(actor: Actor, domain: Domain, data: Any) -> dict[str, Any]:
    """Invite an address by e-mail; the link is in the answer only when no mail can be sent."""
    return invitations.sent_json(invitations.invite(actor, domain, data))


# The domain's invitations, oldest first (never their links). A DELETE revokes one: the link stops working
# (an accepted invitation's account stays).
domain_collection(
    "invitations",
    "invitation_id",
    listing=invitations.listing,
    create=_invite,
    find=invitations.of_domain,
    remove=invitations.revoke,
)


@bp.post("/domains/<record_id>/invitations/<invitation_id>/resend")
@no_store
def resend_invitation(record_id: str, invitation_id: str) -> Response:
    """A new link and expiry, by e-mail (the previous link stops working)."""
    actor, domain = actor_and_domain(record_id)
    invitation = invitations.of_domain(actor, domain, invitation_id)
    return jsonify(invitations.sent_json(invitations.resend(actor, invitation)))
