"""Resource indicators (RFC 8707): which resources an access token is for.

An application lists the resources its tokens may be for (``--resource``).
A request names them with ``resource`` (repeatable) at the authorisation
endpoint, the device authorisation endpoint and the token endpoint; the
access token's audience is the resources asked for. An authorisation (a
code, a refresh token's grant, a device code) that named resources allows
those only, and a refresh may narrow them. Without ``resource`` a token is
for the domain, as before (its ``aud`` is the domain's host).
"""

from __future__ import annotations

from authlib.oauth2.rfc6749 import OAuth2Error

from authsvc.core import validation
from authsvc.core.models import Application
from authsvc.oauth.parameters import MergedRequest, grant_state


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


def at_authorization(request: MergedRequest, client: Application) -> None:
    """An authorisation request's resources (authorize, device authorisation): the client's to ask for."""
    asked = request.requested_resources
    grant_state().resources = check(asked, client.resources or []) if asked else None


def at_token_endpoint(request: MergedRequest, client: Application, granted: list[str] | None) -> None:
    """The token's audience: the resources asked for, within ``granted`` (the authorisation's resources) or,
    when it named none, within the client's; else all of ``granted``. The grant keeps ``granted``."""
    asked = request.requested_resources
    state = grant_state()
    state.resources = granted or None
    state.audience = check(asked, granted or client.resources or []) if asked else state.resources
