"""Resource indicators (RFC 8707): which resources an access token is for.

An application lists the resources its tokens may be for (``--resource``).
A request names them with ``resource`` (repeatable) at the authorisation
endpoint, the device authorisation endpoint and the token endpoint; the
access token's audience is the resources asked for. An authorisation (a
code, a refresh token's grant, a device code) that named resources allows
those only, and a refresh may narrow them. Without ``resource`` a token is
for the domain, as before (its ``aud`` is the domain's host).

A domain registers its protected resources (``ResourceServer``: ``resources create``). Every client may ask
for those, metadata-document clients included, unless its own list (``--resource``) is set: that list, where
set, is what it may ask for (a resource named only there keeps working as before). A token for registered
resources carries only their scopes (and OpenID Connect's ``openid``): the scope is narrowed at the
authorisation request, so the consent page shows what the token will hold, and again when the token is issued.
"""

from __future__ import annotations

from authlib.oauth2.rfc6749 import InvalidScopeError, OAuth2Error
from sqlalchemy import select

from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.models import Application, ResourceServer
from authsvc.core.tenancy import current_domain
from authsvc.oauth.parameters import MergedRequest, grant_state

# Scopes a token for a registered resource keeps whatever the resource's own: they are about the user's sign-in.
SIGN_IN_SCOPES = ("openid",)


class InvalidTargetError(OAuth2Error):
    """RFC 8707 2: the requested resource is invalid, unknown, or not one the client may ask for."""

    error = "invalid_target"


def check(asked: list[str], allowed: list[str]) -> list[str]:
    """``asked`` without duplicates, each an absolute URI without a fragment and among ``allowed``."""
    for uri in asked:
        try:
            validation.resource_indicator(uri)
        except validation.Invalid:
            raise InvalidTargetError("Each 'resource' must be an absolute URI without a fragment.") from None
    if not set(asked) <= set(allowed):
        raise InvalidTargetError("A requested 'resource' is not one this grant or application may ask for.")
    return list(dict.fromkeys(asked))


def registered() -> dict[str, list[str]]:
    """The request's domain's registered resources and their scopes; read once a request, when needed."""
    state = grant_state()
    if state.registered_resources is None:
        rows = db.session.execute(
            select(ResourceServer.uri, ResourceServer.scopes).where(ResourceServer.domain_id == current_domain().id)
        )
        state.registered_resources = {uri: scopes.split() for uri, scopes in rows}
    return state.registered_resources


def _allowed(client: Application) -> list[str]:
    """What ``client`` may ask for: its own list where set, else the domain's registered resources."""
    return client.resources or list(registered())


def narrowed(scope: str, audience: list[str] | None) -> str:
    """``scope`` within the scopes of ``audience`` when every one of them is a registered resource; else as is."""
    if not audience:
        return scope
    known = registered()
    if any(uri not in known for uri in audience):
        return scope  # a resource named only on an application: its scopes are the application's
    allowed = {s for uri in audience for s in known[uri]} | set(SIGN_IN_SCOPES)
    kept = [s for s in scope.split() if s in allowed]
    if not [s for s in kept if s not in SIGN_IN_SCOPES]:
        raise InvalidScopeError("None of the requested scopes is one of the requested resource's.")
    return " ".join(kept)


def at_authorization(request: MergedRequest, client: Application) -> None:
    """An authorisation request's resources (authorize, device authorisation): the client's to ask for; the
    scope narrowed to theirs."""
    asked = request.requested_resources
    grant_state().resources = check(asked, _allowed(client)) if asked else None
    if asked and request.scope:
        request.scope = narrowed(request.scope, grant_state().resources)


def at_token_endpoint(request: MergedRequest, client: Application, granted: list[str] | None) -> None:
    """The token's audience: the resources asked for, within ``granted`` (the authorisation's resources) or,
    when it named none, within the client's; else all of ``granted``. The grant keeps ``granted``."""
    asked = request.requested_resources
    state = grant_state()
    state.resources = granted or None
    state.audience = check(asked, granted or _allowed(client)) if asked else state.resources


def token_scope(scope: str) -> str:
    """The scope an access token is issued with: within its audience's, when those are registered resources."""
    return narrowed(scope, grant_state().audience)
