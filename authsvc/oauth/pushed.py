"""Pushed authorisation requests (RFC 9126) and how the authorisation endpoint reads a request.

An application posts its authorisation request to ``/auth/oauth/par``,
authenticated as at the token endpoint (a public one names its client_id),
and gets a ``request_uri`` that stands for it. The request is checked there
as the authorisation endpoint would check it, so that a bad one is refused to
the application (JSON, RFC 9126 2.3) rather than to the user's browser.

The browser then carries only ``client_id`` and ``request_uri`` to
``/auth/oauth/authorize``, which reads the pushed parameters instead of the
query. A request_uri must reach the authorisation endpoint within
AUTHSVC_PAR_TTL (60 s); once opened there it lasts while the user signs in and
approves (the sign-in page returns to the same request_uri), and it is spent
by the authorisation's answer to the client, a code or an error redirect (RFC 9126 4: one use).

A ``DPoP`` proof sent to PAR binds the code to its key (RFC 9449 10.1): the
pushed request keeps its thumbprint as ``dpop_jkt``.

Redis key ``par:<digest of the request_uri>``: the application's id, the
parameters (a repeatable one, ``resource``, as a list), whether a browser opened it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from authlib.oauth2.rfc6749 import InvalidClientError, InvalidRequestError, OAuth2Error
from authlib.oauth2.rfc6749.endpoint import Endpoint, EndpointRequest
from flask import request as flask_request

from authsvc.core import clock, security, store
from authsvc.core.models import Application
from authsvc.core.settings import settings
from authsvc.oauth import dpop, profile, request_objects
from authsvc.oauth.clients import AUTH_METHODS
from authsvc.oauth.oidc_request import SIGN_IN_ASKED, SIGN_IN_WINDOW
from authsvc.oauth.parameters import REPEATABLE_PARAMETERS, MergedRequest, Parameters, grant_state
from authsvc.oauth.request_objects import InvalidRequestUriError

URN_PREFIX = "urn:ietf:params:oauth:request_uri:"
PAR_PATH = "/auth/oauth/par"
# What authenticates the application at PAR: not part of the authorisation request it pushes.
_CLIENT_AUTH_PARAMETERS = {"client_secret", "client_assertion", "client_assertion_type"}


def par_required(client: Application) -> bool:
    """Whether ``client``'s authorisation requests must be pushed first (RFC 9126 6): the application's
    ``require_pushed_authorization_requests``, or its domain's FAPI 2.0 profile (docs/fapi.md#authorization-requests).
    """
    return bool(client.require_pushed_authorization_requests) or profile.requires_par(client)


def _key(request_uri: str) -> str:
    return f"{store.PREFIX}par:{security.digest(request_uri)}"


def _invalid_uri(description: str) -> InvalidRequestUriError:
    return InvalidRequestUriError(description=description)


# The pushed authorisation request endpoint.


@dataclass
class PushedRequest(EndpointRequest):
    params: Parameters = field(default_factory=dict)
    expires_in: int = 0


class PushedAuthorization(Endpoint):
    """``POST /auth/oauth/par``: a one-time ``request_uri`` for an authorisation request checked here."""

    ENDPOINT_NAME = "pushed_authorization"

    def validate_request(self, request: MergedRequest) -> PushedRequest:
        # A DPoP proof first, as at the token endpoint: a nonce to retry with spends no client assertion.
        grant_state().dpop = dpop.request_proof()
        # Client authentication as at the token endpoint; a client assertion's aud may name this endpoint too
        # (authsvc.oauth.client_assertion_keys takes the request's own URL), as RFC 9126 2 says. Under the FAPI 2.0
        # profile, private_key_jwt only and nothing in the query (profile.check_client_request).
        client: Application = self.server.authenticate_client(request, AUTH_METHODS, self.ENDPOINT_NAME)
        data = request.payload.data
        if "request_uri" in data:
            raise InvalidRequestError("'request_uri' cannot be pushed (RFC 9126 2.1).")
        expires_in = settings().par_ttl
        params: Parameters
        if "request" in data:
            # RFC 9126 3: with a request object, every parameter of the request is in it.
            params = request_objects.parameters(client, data["request"], data.get("client_id"))
            expires_in = max(1, min(expires_in, int(_exp(data["request"]) - clock.time())))
        else:
            # A repeatable parameter keeps every value (RFC 8707 2: several resources).
            params = {
                name: list(values) if name in REPEATABLE_PARAMETERS else values[0]
                for name, values in request.payload.datalist.items()
                if name not in _CLIENT_AUTH_PARAMETERS
            }
        # Client authentication by Basic names the client in a header only.
        params["client_id"] = client.client_id
        # The sign-in page's note is the service's own; it comes back with the browser, never from the client.
        params.pop(SIGN_IN_ASKED, None)
        _validate_as_authorize(self.server, params)
        bind_sender(request, params)
        return PushedRequest(request=request, client=client, params=params, expires_in=expires_in)

    def create_response(self, validated: PushedRequest) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        request_uri = URN_PREFIX + security.new_secret()
        record = {"client": validated.client.id, "params": validated.params}
        store.client().set(_key(request_uri), json.dumps(record), ex=validated.expires_in)
        body = {"request_uri": request_uri, "expires_in": validated.expires_in}
        return 201, body, [("Content-Type", "application/json"), ("Cache-Control", "no-store"), ("Pragma", "no-cache")]


def bind_sender(request: MergedRequest, params: Parameters) -> None:
    """A DPoP proof sent to PAR binds the code to its key (RFC 9449 10.1).

    ``params["dpop_jkt"]`` becomes the thumbprint of the proof's key (checked
    by ``dpop.request_proof`` for POST to this URL, with the server's nonce);
    a pushed ``dpop_jkt`` that names another key is refused. Without a proof
    a pushed ``dpop_jkt`` is carried to the code as any other parameter.
    """
    given = params.get("dpop_jkt")
    jkt = dpop.proof_thumbprint(given if isinstance(given, str) else None, grant_state().dpop)
    if jkt is not None:
        params["dpop_jkt"] = jkt


def _exp(request_object: str) -> float:
    """A verified request object's exp (request_objects.parameters checked it)."""
    from joserfc import jws  # loaded by request_objects already

    return json.loads(jws.extract_compact(request_object.encode()).payload)["exp"]


def _validate_as_authorize(server: Any, params: Parameters) -> None:
    """Check the pushed parameters as the authorisation endpoint checks a request, and refuse them as JSON."""
    request = MergedRequest(params)
    try:
        grant = server.get_authorization_grant(request)
        grant.validate_authorization_request()
    except OAuth2Error as error:
        # RFC 9126 2.3: the answer goes to the application that pushed, never to a redirect URI.
        error.redirect_uri = None
        error.state = None
        raise


# The authorisation endpoint: which parameters a request stands for.


def resolve_authorization_request(server: Any, request: MergedRequest) -> None:
    """Read a pushed request or a request object in place of the query (an Authlib hook, before the grant).

    Only ``client_id`` is read beside ``request_uri`` (RFC 9126 4), and beside
    ``request`` (RFC 9101 5), with the sign-in page's note. A request_uri
    other than ours is left to authsvc.oauth.oidc_request to refuse.
    """
    if flask_request.endpoint != "oauth.authorize":
        return  # PAR checks the parameters it was pushed (_validate_as_authorize)
    data = request.payload.data
    request_uri = data.get("request_uri")
    if request_uri is not None and "request" in data:
        raise InvalidRequestError("Send 'request' or 'request_uri', not both.")
    client_id = data.get("client_id")
    if not client_id and (request_uri is not None or "request" in data):
        raise InvalidRequestError("Send the application's client_id beside 'request_uri' or 'request'.")
    client: Application | None = server.query_client(client_id) if client_id else None
    if client is None:
        if request_uri is not None or "request" in data:
            # Without a response_type in the query, the grant's validation would not get to the client.
            raise InvalidClientError(description="The client does not exist on this server.")
        return  # the grant's validation answers: invalid_client
    if request_uri is not None and request_uri.startswith(URN_PREFIX):
        params = _open(request_uri, client)
        grant_state().pushed_request_uri = request_uri
    elif profile.requires_par(client):
        raise InvalidRequestError(profile.PAR_REQUIRED)
    elif par_required(client):
        raise InvalidRequestError(
            "This application must push its authorization requests first (RFC 9126): "
            f"POST them to {PAR_PATH} and send the request_uri it answers."
        )
    elif "request" in data:
        params = request_objects.parameters(client, data["request"], client_id)
    else:
        return
    if data.get(SIGN_IN_ASKED):
        params[SIGN_IN_ASKED] = data[SIGN_IN_ASKED]
    request.replace_parameters(params)


def _open(request_uri: str, client: Application) -> Parameters:
    """The pushed parameters ``request_uri`` stands for, kept while the user signs in (not yet spent)."""
    redis = store.client()
    raw = redis.get(_key(request_uri))
    if raw is None:
        raise _invalid_uri("The request_uri is unknown, expired or already used.")
    record = json.loads(cast("str | bytes", raw))
    if record["client"] != client.id:
        raise _invalid_uri("The request_uri was pushed by another application (client_id).")
    if not record.get("opened"):
        # The browser arrived in time; now it may take as long as the sign-in page allows. XX: never bring
        # back a request_uri that was spent meanwhile.
        redis.set(_key(request_uri), json.dumps({**record, "opened": True}), ex=SIGN_IN_WINDOW, xx=True)
    return dict(record["params"])


def spend_opened() -> None:
    """Spend the request_uri this request opened, if any: its answer is an error sent to the client."""
    request_uri = grant_state().pushed_request_uri
    if request_uri is not None:
        store.client().delete(_key(request_uri))


def spend(request: MergedRequest) -> None:
    """Spend the request's pushed request_uri, once: a second authorisation from it is refused."""
    request_uri = grant_state().pushed_request_uri
    if request_uri is None:
        return
    if store.client().getdel(_key(request_uri)) is None:
        raise _invalid_uri("The request_uri is expired or already used.")
