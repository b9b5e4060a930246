"""Who may provision a domain over SCIM: a bearer credential with the reserved ``scim`` scope.

Microsoft Entra ID and Okta can only send ``Authorization: Bearer <secret>``, so
the bearer is either an API key of a domain admin or the access token an
application allowed ``scim`` got with client credentials for an admin account
bound to it. Anything else is 401 (no valid credential) or 403 (not allowed).
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import request
from scim2_models import ForbiddenException, UnauthorizedException
from sqlalchemy import select, update

from authsvc.api import credentials
from authsvc.core import actors
from authsvc.core.database import db, now
from authsvc.core.models import Application, Domain, User

SCOPE = "scim"

# The domain's last SCIM activity moves at most once per this many seconds.
ACTIVITY_RESOLUTION = 60


@dataclass
class Provisioner:
    """The credential a SCIM request acts with; ``actor`` names it in the audit trail."""

    domain: Domain
    user_id: int
    actor: str


def _bearer() -> str:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise UnauthorizedException(detail="Send 'Authorization: Bearer <API key or token>' with the scim scope.")
    return value.strip()


def authenticate(domain: Domain) -> Provisioner:
    """The SCIM client of this request, or 401/403 as a SCIM error."""
    value = _bearer()
    credential = credentials.find_token(value, domain.host, None)
    if credential is None and "." in value:
        credential = credentials.find_api_key(value, domain.host, None)
    if credential is None:
        raise UnauthorizedException(detail="The bearer credential is invalid, expired or revoked.")
    if credential.dpop_jkt is not None:
        # RFC 9449 7: a DPoP-bound token is never a bearer credential.
        raise UnauthorizedException(detail="This token is bound to a DPoP key; SCIM takes bearer tokens and API keys.")
    if SCOPE not in credential.scopes:
        raise ForbiddenException(detail="This needs an API key or token with the scope 'scim'.")
    user = db.session.get(User, credential.claimant.id)
    if user is None or user.disabled or not user.admin or user.domain_id != domain.id:
        raise ForbiddenException(detail="The credential's account must be an admin of this domain.")
    if credential.kind == "token":
        # Only a client-credentials token acts for the account bound to its application.
        application = db.session.scalar(select(Application).where(Application.client_id == credential.client_id))
        if application is None or application.service_account_id != user.id:
            raise ForbiddenException(
                detail="A token for SCIM must come from client credentials of an application bound to an admin account."
            )
        actor = actors.of_client(application.client_id)
    else:
        # An API key's credential always carries its public id (credentials.find_api_key).
        actor = actors.of_api_key(str(credential.api_key_id))
    _note_activity(domain)
    return Provisioner(domain=domain, user_id=user.id, actor=actor)


def _note_activity(domain: Domain) -> None:
    moment = now()
    if domain.scim_last_activity is not None and domain.scim_last_activity > moment - ACTIVITY_RESOLUTION:
        return
    db.session.execute(
        update(Domain)
        .where(Domain.id == domain.id)
        .values(scim_last_activity=moment)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
