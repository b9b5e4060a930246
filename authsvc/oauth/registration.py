"""Dynamic client registration: RFC 7591 at ``POST /auth/oauth/register`` and RFC 7592 at each
client's ``registration_client_uri`` (``/auth/oauth/register/<client_id>``), on Authlib's endpoints.

Registering needs an initial access token that a domain admin issued
(RegistrationToken: expiring, limited uses), unless the domain has open registration
(``Domain.open_registration``, as MCP clients register): then a request without an
Authorization header registers too, the client is marked ``openly_registered`` and
its users are asked every time; a token presented is still checked. Registrations
count against the address's rate (authsvc.oauth.views). The answer carries the client's
``registration_access_token``, which alone reads, replaces or deletes the
registration afterwards. Both are kept only as digests. What a client may
register: authsvc.oauth.client_metadata.
"""

from __future__ import annotations

import secrets
from functools import cached_property
from typing import Any

from authlib.oauth2.rfc6749 import InvalidRequestError, JsonPayload, JsonRequest
from authlib.oauth2.rfc6750 import InvalidTokenError
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7592 import ClientConfigurationEndpoint
from flask import request as flask_request
from sqlalchemy import select

from authsvc.core import actors, audit, security, validation
from authsvc.core.database import db
from authsvc.core.models import Application, RegistrationToken
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import clients
from authsvc.oauth.client_metadata import (
    SECRET_AUTH_METHODS,
    RegisteredClientMetadata,
    apply_metadata,
    client_information,
    declare_logo,
    invalid,
    registration_policy,
)
from authsvc.oauth.clients import REGISTER_PATH

MAX_TOKEN_LENGTH = 200


class RegistrationRequest(JsonRequest):
    """The request as Authlib's endpoints read it; the JSON body is read (and refused) only when needed."""

    def __init__(self) -> None:
        super().__init__(flask_request.method, flask_request.url, flask_request.headers)
        self.payload = RegistrationPayload()


class RegistrationPayload(JsonPayload):
    @cached_property
    def data(self) -> dict[str, Any]:
        if flask_request.mimetype != "application/json":
            raise InvalidRequestError("Send the client metadata as JSON (Content-Type: application/json).")
        try:
            return validation.json_object(flask_request.get_data(cache=True))
        except validation.Invalid as exc:
            raise InvalidRequestError(str(exc)) from None


def presented_token() -> str:
    """The bearer token of the Authorization header (RFC 6750 2.1); 401 ``invalid_token`` without one."""
    scheme, _, value = flask_request.headers.get("Authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value:
        raise InvalidTokenError("Present the token as Authorization: Bearer.", realm="authsvc")
    if len(value) > MAX_TOKEN_LENGTH or not value.isascii() or not value.isprintable():
        raise InvalidTokenError("The token is not valid.", realm="authsvc")
    return value


def registration_client_uri(application: Application) -> str:
    return f"{issuer()}{REGISTER_PATH}/{application.client_id}"


def _new_secret_if_needed(application: Application, method: str) -> str | None:
    """A client secret (shown once) when the method needs one and the client has none; dropped when it needs none."""
    if method not in SECRET_AUTH_METHODS:
        application.client_secret_digest = None
        return None
    if application.client_secret_digest is not None:
        return None
    secret = security.new_secret()
    application.client_secret_digest = security.digest(secret)
    return secret


class OpenRegistration:
    """The credential of a registration without an initial access token, in a domain with open registration."""


def _registration_credential() -> RegistrationToken | OpenRegistration:
    """The initial access token presented, or open registration when none is and the domain has it."""
    if "Authorization" not in flask_request.headers and current_domain().open_registration:
        return OpenRegistration()
    token = RegistrationToken.find(current_domain().id, presented_token())
    if token is None or not token.usable():
        raise InvalidTokenError("The initial access token is unknown, expired, revoked or used up.", realm="authsvc")
    return token


class ClientRegistration(ClientRegistrationEndpoint):
    """RFC 7591 3: register a client with an initial access token of the request's domain, or without one where
    the domain has open registration."""

    def __init__(self, server: Any = None) -> None:
        super().__init__(server, claims_classes=[RegisteredClientMetadata])

    def create_endpoint_request(self, request: Any) -> RegistrationRequest:
        return RegistrationRequest()

    def authenticate_token(self, request: RegistrationRequest) -> RegistrationToken | OpenRegistration:
        return _registration_credential()

    def get_server_metadata(self) -> dict[str, Any]:
        return registration_policy(current_domain())

    def generate_client_id(self, request: RegistrationRequest) -> str:
        return secrets.token_urlsafe(24)

    def generate_client_info(self, request: RegistrationRequest) -> dict[str, Any]:
        # The secret, if any, is made in save_client: it depends on the metadata.
        return {"client_id": self.generate_client_id(request)}

    def save_client(self, client_info: dict, client_metadata: dict, request: RegistrationRequest) -> Application:
        credential: RegistrationToken | OpenRegistration = request.credential
        token = credential if isinstance(credential, RegistrationToken) else None
        domain = current_domain()
        application = Application(
            domain_id=domain.id,
            client_id=client_info["client_id"],
            registration_token_id=token.id if token is not None else None,
            openly_registered=token is None,
        )
        apply_metadata(application, client_metadata, fapi2=domain.fapi2)
        # Registered by someone the domain's people have not met: they are asked before it gets a code (every
        # time, when nobody vouched for it with an initial access token: authsvc.oauth.views).
        application.consent = True
        request.client_secret = _new_secret_if_needed(application, client_metadata["token_endpoint_auth_method"])
        request.registration_access_token = security.new_secret()
        application.registration_access_token_digest = security.digest(request.registration_access_token)
        if token is not None and not token.spend():
            db.session.rollback()
            raise InvalidTokenError("The initial access token was used up meanwhile.", realm="authsvc")
        db.session.add(application)
        db.session.flush()
        declare_logo(application, client_metadata)
        request.client = application
        audit.record(
            "application.registered",
            domain_id=domain.id,
            actor=f"registration_token:{token.id}" if token is not None else "open_registration",
            target=f"application:{application.id}",
            details={"after": application.as_json(), "via": "rfc7591"},
            commit=False,
        )
        db.session.commit()
        return application

    def generate_client_registration_info(self, client: Application, request: RegistrationRequest) -> dict[str, Any]:
        return {
            **client_information(client),
            **({"client_secret": request.client_secret} if request.client_secret else {}),
            "registration_access_token": request.registration_access_token,
            "registration_client_uri": registration_client_uri(client),
        }


class RegistrationAccess:
    """A valid registration access token: good for its own client only."""

    def __init__(self, application: Application):
        self.application = application

    def check_client(self, client: Application) -> bool:
        return client.id == self.application.id


def _registered_client(client_id: str) -> Application | None:
    if not client_id or len(client_id) > 64 or not client_id.isascii() or not client_id.isprintable():
        return None
    return db.session.scalar(
        select(Application).where(Application.client_id == client_id, Application.domain_id == current_domain().id)
    )


class ClientConfiguration(ClientConfigurationEndpoint):
    """RFC 7592: read (GET), replace (PUT) and delete (DELETE) a registration with its registration access token."""

    def __init__(self, server: Any = None) -> None:
        super().__init__(server, claims_classes=[RegisteredClientMetadata])

    def create_endpoint_request(self, request: Any) -> RegistrationRequest:
        return RegistrationRequest()

    def authenticate_token(self, request: RegistrationRequest) -> RegistrationAccess:
        value = presented_token()
        application = _registered_client((flask_request.view_args or {}).get("client_id", ""))
        # A token of another client, or for a client that does not exist (here), is no token for this URI.
        digest = application.registration_access_token_digest if application is not None else None
        if application is None or digest is None or not security.digest_matches(value, digest):
            raise InvalidTokenError("The registration access token is not valid for this client.", realm="authsvc")
        return RegistrationAccess(application)

    def authenticate_client(self, request: RegistrationRequest) -> Application:
        return request.credential.application

    def check_permission(self, client: Application, request: RegistrationRequest) -> bool:
        return True

    def revoke_access_token(self, token: RegistrationAccess, request: RegistrationRequest) -> None:
        token.application.registration_access_token_digest = None
        db.session.commit()

    def get_server_metadata(self) -> dict[str, Any]:
        return registration_policy(current_domain())

    def introspect_client(self, client: Application) -> dict[str, Any]:
        return client_information(client)

    def generate_client_registration_info(self, client: Application, request: RegistrationRequest) -> dict[str, Any]:
        # Only its digest is kept: the client's own token, as it presented it (RFC 7592 3).
        return {
            "registration_access_token": presented_token(),
            "registration_client_uri": registration_client_uri(client),
        }

    def create_read_client_response(self, client: Application, request: RegistrationRequest) -> tuple[int, dict, list]:
        status, body, headers = super().create_read_client_response(client, request)
        # After an update that made the client confidential: its new secret, shown once.
        secret = getattr(request, "client_secret", None)
        if secret:
            body["client_secret"] = secret
        return status, body, headers

    def create_update_client_response(
        self, client: Application, request: RegistrationRequest
    ) -> tuple[int, dict, list]:
        # RFC 7592 2.2: a client_secret sent must match the one issued; only a string can be a secret, and
        # Authlib would hand anything else to the digest (a 500).
        secret = request.payload.data.get("client_secret", "")
        if "client_secret" in request.payload.data and not (isinstance(secret, str) and 0 < len(secret) <= 200):
            raise invalid("client_secret must be the client's current secret, a string.")
        return super().create_update_client_response(client, request)

    def update_client(self, client: Application, client_metadata: dict, request: RegistrationRequest) -> Application:
        before = client.as_json()
        apply_metadata(client, client_metadata, fapi2=client.domain.fapi2)
        declare_logo(client, client_metadata)
        request.client_secret = _new_secret_if_needed(client, client_metadata["token_endpoint_auth_method"])
        audit.record(
            "application.updated",
            domain_id=client.domain_id,
            actor=actors.of_client(client.client_id),
            target=f"application:{client.id}",
            details={"before": before, "after": client.as_json(), "via": "rfc7592"},
            commit=False,
        )
        db.session.commit()
        return client

    def delete_client(self, client: Application, request: RegistrationRequest) -> None:
        before, domain_id = client.as_json(), client.domain_id
        live = clients.delete_client(client)
        audit.record(
            "application.deleted",
            domain_id=domain_id,
            actor=actors.of_client(client.client_id),
            target=f"application:{before['id']}",
            details={"before": before | {"revoked_tokens": live}, "via": "rfc7592"},
            commit=False,
        )
        db.session.commit()
