"""Invitations by e-mail (authsvc.account.invitations): a domain's admins invite, resend and revoke; support
users read. Each change is audited; the secret never is, and is shown only when no mail can carry it."""

from __future__ import annotations

from typing import Any

from authsvc.account import invitations
from authsvc.account.invitations import Invitation, Sent
from authsvc.admin.actors import Actor, audit_change, commit, require_change
from authsvc.admin.schemas import read
from authsvc.auth import signin
from authsvc.core.database import db
from authsvc.core.errors import Conflict, NotFound, ValidationFailed
from authsvc.core.models import Domain


def invite(actor: Actor, domain: Domain, data: Any) -> Sent:
    """Invite an address that is no account of the domain and has no invitation waiting."""
    from authsvc.admin.schemas.invitations import InvitationCreate

    require_change(actor, domain.id)
    values = read(InvitationCreate, data)
    if signin.find_user(domain, values.email) is not None:
        raise ValidationFailed({"email": "a user with this e-mail already exists in the domain"})
    if invitations.pending(domain.id, values.email) is not None:
        raise Conflict("an invitation of this address is waiting already; send it again instead")
    role = values.role or "user"
    sent = invitations.invite(domain, values.email, values.name or "", role, actor.name)
    db.session.flush()
    target = f"invitation:{sent.invitation.id}"
    audit_change(actor, "invitation.created", domain.id, target, after=sent.invitation.as_json())
    commit(f"an invitation of {values.email!r}")
    return sent


def of_domain(actor: Actor, domain: Domain, invitation_id: str) -> Invitation:
    """The domain's invitation ``invitation_id`` (as the actor may read it); else NotFound."""
    from authsvc.admin.actors import get

    invitation: Invitation = get(actor, Invitation, invitation_id)
    if invitation.domain_id != domain.id:
        raise NotFound()
    return invitation


def resend(actor: Actor, invitation: Invitation) -> Sent:
    """A new link (the old one stops working) and a new expiry; an accepted or revoked invitation stays so."""
    require_change(actor, invitation.domain_id)
    if invitation.state in ("accepted", "revoked"):
        raise Conflict(f"the invitation was {invitation.state}; invite again instead")
    if invitation.state == "expired" and invitations.pending(invitation.domain_id, invitation.email) is not None:
        raise Conflict("another invitation of this address is waiting; send that one again")
    before = invitation.as_json()
    sent = invitations.send(db.session.get_one(Domain, invitation.domain_id), invitation)
    audit_change(
        actor, "invitation.resent", invitation.domain_id, f"invitation:{invitation.id}", before, invitation.as_json()
    )
    db.session.commit()
    return sent


def revoke(actor: Actor, invitation: Invitation) -> Invitation:
    """Its link stops working; an accepted invitation's account stays (delete the user for that)."""
    require_change(actor, invitation.domain_id)
    if invitation.state == "accepted":
        raise Conflict("the invitation was accepted already; its account is a user of the domain now")
    before = invitation.as_json()
    if invitations.revoke(invitation):
        audit_change(
            actor,
            "invitation.revoked",
            invitation.domain_id,
            f"invitation:{invitation.id}",
            before,
            invitation.as_json(),
        )
    db.session.commit()
    return invitation


def listing(actor: Actor, domain: Domain) -> list[Invitation]:
    if not actor.can_read(domain.id):
        raise NotFound()
    return invitations.of_domain(domain.id)


def sent_json(sent: Sent) -> dict[str, Any]:
    """An invitation just sent, as the API and the command line answer it: ``link`` only without mail."""
    return sent.invitation.as_json() | ({"link": sent.link} if sent.link is not None else {})
