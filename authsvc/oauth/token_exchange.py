"""Token exchange (RFC 8693): a token of a user traded for another, for a client the domain allows to.

Authlib has no grant for it; this one follows its grants (BaseGrant with
TokenEndpointMixin) and issues through authsvc.oauth.server's ``save_token``
like every other, so the row, its audit record (``token.exchanged``, with the
``act`` claim) and DPoP's binding are the same as theirs.

The subject token is one of ours (an access token, or an ID token issued to the
requesting client) or a JWT of an issuer the domain trusts for subject tokens
(authsvc.oauth.trusted_issuers). An actor token (delegation) makes the issued
token's ``act`` claim, with the subject token's own ``act`` nested inside as the
earlier actors (RFC 8693 4.1). Without one the requesting client is the actor,
unless its policy allows impersonation (``application.token_exchange``), which
issues a token without ``act``. A ``may_act`` claim of the subject token (4.4)
names who alone may act. Scopes and resources never exceed what both the subject
token and the client allow. docs/token-exchange.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from authlib.oauth2.rfc6749 import InvalidRequestError, InvalidScopeError, UnauthorizedClientError
from authlib.oauth2.rfc6749.grants import BaseGrant, TokenEndpointMixin

from authsvc.api import credentials
from authsvc.core.models import TOKEN_EXCHANGE_GRANT_TYPE, Application, User
from authsvc.core.readers import entities
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer, request_host
from authsvc.oauth import id_jag, keys, resources, trusted_issuers
from authsvc.oauth.clients import CONFIDENTIAL_AUTH_METHODS
from authsvc.oauth.grants import resolve_scope
from authsvc.oauth.parameters import grant_state

ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
JWT = "urn:ietf:params:oauth:token-type:jwt"
ID_JAG = id_jag.TOKEN_TYPE
# How deep a chain of actors may go, and how large it may be, in a token we issue.
MAX_ACT_DEPTH = 5
MAX_ACT_BYTES = 2048


@dataclass(frozen=True)
class Party:
    """A subject or an actor, as the token presented for it shows it."""

    sub: str
    iss: str
    user: User | None = None
    client_id: str | None = None
    # What the token allows: None when it says nothing (an ID token, a JWT without scope).
    scopes: list[str] | None = None
    resources: list[str] | None = None
    act: dict[str, Any] | None = None
    may_act: dict[str, Any] | None = None
    # Our own ID token's sign-in (for an ID-JAG).
    auth_time: int | None = None


def _bad(description: str) -> InvalidRequestError:
    # RFC 8693 2.2.2: an invalid subject or actor token is invalid_request.
    return InvalidRequestError(description)


def present(token: str, token_type: str, client: Application, role: str) -> Party:
    """The party ``token`` (of ``token_type``) stands for; ``role`` names the parameter in refusals."""
    if token_type == ACCESS_TOKEN:
        return _our_access_token(token, role)
    if token_type in (ID_TOKEN, JWT):
        try:
            claims = trusted_issuers.unverified_claims(token)
        except trusted_issuers.Refused as exc:
            raise _bad(f"'{role}': {exc}") from None
        if claims.get("iss") == issuer():
            if token_type == ID_TOKEN:
                return _our_id_token(token, client, role)
            return _our_access_token(token, role)  # our JWT access token, found by its digest as any other
        return _trusted_jwt(token, claims, role)
    raise _bad(f"'{role}_type' must be {ACCESS_TOKEN}, {ID_TOKEN} or {JWT}.")


def _our_access_token(token: str, role: str) -> Party:
    found = credentials.find_token(token, request_host(), settings().default_domain or None)
    if found is None:
        raise _bad(f"'{role}' is not an active access token of this domain.")
    return Party(
        sub=str(found.claimant.id),
        iss=issuer(),
        # On a reader, as the other grants read their user: the one write then runs in autocommit.
        user=entities.user(found.claimant.id),
        client_id=found.client_id,
        scopes=found.scopes,
        # A token for the domain as a whole (aud: its host) limits no resource.
        resources=None if found.audience == current_domain().host else _listed(found.audience),
        act=found.act,
    )


def _our_id_token(token: str, client: Application, role: str) -> Party:
    from authsvc.core.database import now

    claims = keys.own_id_token_claims(current_domain(), token, issuer())
    audience = claims.get("aud") if claims else None
    if claims is None or not isinstance(claims.get("exp"), int) or claims["exp"] <= now():
        raise _bad(f"'{role}' is not a valid, unexpired ID token of this domain.")
    # An ID token is its audience's: only the client it was issued to exchanges it.
    if client.client_id not in _listed(audience):
        raise _bad(f"'{role}' was issued to another client.")
    user = entities.user(int(claims["sub"])) if str(claims["sub"]).isdigit() else None
    if user is None or user.disabled or user.domain_id != current_domain().id:
        raise _bad(f"'{role}': its user is unknown here or disabled.")
    auth_time = claims.get("auth_time")
    return Party(sub=str(user.id), iss=issuer(), user=user, auth_time=auth_time if isinstance(auth_time, int) else None)


def _trusted_jwt(token: str, claims: dict[str, Any], role: str) -> Party:
    domain = current_domain()
    row = trusted_issuers.find(domain, str(claims.get("iss")))
    if row is None or not row.subject_tokens:
        raise _bad(f"'{role}' is from an issuer this domain does not trust for token exchange.")
    try:
        verified = trusted_issuers.verify(row, token)
    except trusted_issuers.Refused as exc:
        raise _bad(f"'{role}': {exc}") from None
    claims = verified.claims
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise _bad(f"'{role}' names no subject (sub).")
    scope = claims.get("scope")
    return Party(
        sub=sub,
        iss=row.issuer,
        user=trusted_issuers.user_of(domain, claims),
        client_id=claims.get("client_id") if isinstance(claims.get("client_id"), str) else None,
        scopes=scope.split() if isinstance(scope, str) else None,
        act=claims.get("act") if isinstance(claims.get("act"), dict) else None,
        may_act=claims.get("may_act") if isinstance(claims.get("may_act"), dict) else None,
    )


def _listed(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def actor_claim(actor: Party | None, client: Application, subject: Party) -> dict[str, Any] | None:
    """The issued token's ``act``: the actor (the client without an actor token), earlier actors nested."""
    if actor is None:
        current: dict[str, Any] = {"sub": client.client_id, "client_id": client.client_id}
    else:
        current = {"sub": actor.sub}
        if actor.iss != issuer():
            current["iss"] = actor.iss
        if actor.client_id:
            current["client_id"] = actor.client_id
    if subject.act is not None:
        current["act"] = subject.act
    if _depth(current) > MAX_ACT_DEPTH or len(json.dumps(current)) > MAX_ACT_BYTES:
        raise _bad("The chain of actors is too long.")
    return current


def _depth(act: Any) -> int:
    """How many actors a chain of nested ``act`` claims names."""
    depth = 0
    while isinstance(act, dict) and depth <= MAX_ACT_DEPTH:
        depth, act = depth + 1, act.get("act")
    return depth


def check_may_act(subject: Party, actor: Party | None, client: Application) -> None:
    """RFC 8693 4.4: a subject token's ``may_act`` names the one party that may act for its subject."""
    allowed = subject.may_act
    if allowed is None:
        return
    sub, iss = (actor.sub, actor.iss) if actor is not None else (client.client_id, issuer())
    if allowed.get("sub") != sub or allowed.get("iss", iss) != iss:
        raise _bad("The subject token's may_act does not name this actor.")


def exchanged_scope(client: Application, subject: Party, requested: str | None) -> str:
    """What the new token may do: the scopes asked (or all the subject's), within the client's and the subject's."""
    if requested is None and subject.scopes is not None:
        allowed = [s for s in subject.scopes if s in client.scope_list]
        if not allowed:
            raise InvalidScopeError("The subject token has no scope this application may have.")
        return " ".join(allowed)
    scope = resolve_scope(client, requested)
    if subject.scopes is not None and not set(scope.split()) <= set(subject.scopes):
        raise InvalidScopeError("A requested scope is not one the subject token has.")
    return scope


class TokenExchangeGrant(BaseGrant, TokenEndpointMixin):
    """RFC 8693 2.1 at the token endpoint, for confidential applications an admin allowed (docs/token-exchange.md)."""

    GRANT_TYPE = TOKEN_EXCHANGE_GRANT_TYPE
    TOKEN_ENDPOINT_AUTH_METHODS = CONFIDENTIAL_AUTH_METHODS
    # What this request decided (Authlib makes a grant per request): an ID-JAG to issue, or the token type.
    id_jag_asked: id_jag.Asked | None = None
    issued_token_type: str = ACCESS_TOKEN

    def validate_token_request(self) -> None:
        client: Application = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError("This application may not exchange tokens.")
        data = self.request.payload.data
        for name in ("subject_token", "subject_token_type"):
            if not data.get(name):
                raise InvalidRequestError(f"Missing '{name}' in request.")
        if bool(data.get("actor_token")) != bool(data.get("actor_token_type")):
            raise InvalidRequestError("'actor_token' and 'actor_token_type' go together.")
        requested = data.get("requested_token_type") or ACCESS_TOKEN
        self.request.client = client
        if requested == ID_JAG:
            if data.get("actor_token"):
                raise InvalidRequestError("An ID-JAG is issued for a user's own ID token, without an actor token.")
            if data["subject_token_type"] != ID_TOKEN:
                raise InvalidRequestError(f"An ID-JAG is issued for an ID token ({ID_TOKEN}).")
            subject = _our_id_token(data["subject_token"], client, "subject_token")
            self.id_jag_asked = id_jag.Asked(
                subject.user,
                data.get("audience"),
                data.get("scope"),
                subject.auth_time,
                self.request.requested_resources,
            )
            return
        if requested not in (ACCESS_TOKEN, JWT):
            raise InvalidRequestError(f"'requested_token_type' must be {ACCESS_TOKEN}, {JWT} or {ID_JAG}.")
        subject = present(data["subject_token"], data["subject_token_type"], client, "subject_token")
        if subject.user is None or subject.user.domain_id != client.domain_id:
            raise _bad("'subject_token' names no user of this domain.")
        actor = (
            present(data["actor_token"], data["actor_token_type"], client, "actor_token")
            if data.get("actor_token")
            else None
        )
        check_may_act(subject, actor, client)
        impersonation = bool((client.token_exchange or {}).get("impersonation"))
        state = grant_state()
        state.act = None if actor is None and impersonation else actor_claim(actor, client, subject)
        state.jwt_access_token = requested == JWT
        self.request.user = subject.user
        self.request.scope = exchanged_scope(client, subject, self.request.payload.scope)
        # RFC 8693 2.1: audience names the target too; here, as resource, one of the client's resources.
        allowed = client.resources or []
        if subject.resources is not None:
            allowed = [uri for uri in allowed if uri in subject.resources]
        asked = [*self.request.requested_resources, *_listed(self.request.payload.data.get("audience"))]
        state.audience = resources.check(asked, allowed) if asked else subject.resources
        state.resources = state.audience
        self.issued_token_type = requested

    def create_token_response(self) -> tuple[int, dict, list]:
        if self.id_jag_asked is not None:
            return 200, id_jag.issue(self.request.client, self.id_jag_asked), self.TOKEN_RESPONSE_HEADER
        refresh = bool((self.request.client.token_exchange or {}).get("refresh_tokens"))
        token = self.generate_token(user=self.request.user, scope=self.request.scope, include_refresh_token=refresh)
        self.save_token(token)
        token["issued_token_type"] = self.issued_token_type
        return 200, token, self.TOKEN_RESPONSE_HEADER
