"""Who may manage a stream and poll it: an application's access token with the reserved ``ssf`` scope.

A receiver gets its token with client credentials (an application bound to a
service account, as any client credentials grant needs) from a domain admin
who allowed the application ``ssf``; the stream it manages is its own, found
by its application. Refusals are ``Refused`` (401 without a usable token, 403
without the scope), answered in RFC 8935 2.4's shape by authsvc.ssf.views.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import request
from sqlalchemy import select

from authsvc.api import credentials
from authsvc.api.protected_resource import meant_for_this_service
from authsvc.core.database import db
from authsvc.core.models import Application, Domain

SCOPE = "ssf"


class Refused(Exception):  # noqa: N818 - what happened; the views answer it
    """A request the transmitter refuses: ``status``, RFC 8935 2.4's ``err`` and a ``description``."""

    def __init__(self, status: int, err: str, description: str):
        super().__init__(description)
        self.status, self.err, self.description = status, err, description


def invalid(description: str) -> Refused:
    return Refused(400, "invalid_request", description)


@dataclass(frozen=True)
class Receiver:
    """The application a request acts for, and its domain."""

    domain: Domain
    application_id: int
    client_id: str


def _bearer() -> str:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Refused(401, "authentication_failed", "Send 'Authorization: Bearer <access token>' with the ssf scope.")
    return value.strip()


def authenticate(domain: Domain) -> Receiver:
    """The receiver of this request, or Refused (401, 403)."""
    credential = credentials.find_token(_bearer(), domain.host, None)
    if credential is None or credential.client_id is None:
        raise Refused(401, "authentication_failed", "The access token is invalid, expired or revoked.")
    if not meant_for_this_service(credential.resources):
        # A token for another resource (RFC 8707; an MCP server's, say) is that resource's, as at the API.
        raise Refused(401, "authentication_failed", "The access token was issued for another resource (aud).")
    if credential.dpop_jkt is not None:
        raise Refused(401, "authentication_failed", "This token is bound to a DPoP key; send a bearer token.")
    if SCOPE not in credential.scopes:
        raise Refused(403, "access_denied", "This needs an access token with the scope 'ssf'.")
    application = db.session.scalar(
        select(Application).where(Application.client_id == credential.client_id, Application.domain_id == domain.id)
    )
    if application is None:
        raise Refused(401, "authentication_failed", "The token's application is no longer there.")
    return Receiver(domain=domain, application_id=application.id, client_id=application.client_id)
