"""The service's own API (/api/engine/v2) as a protected resource (RFC 9728): its metadata, and the
``resource_metadata`` that every 401 there names in its ``WWW-Authenticate`` (RFC 9728 5.1), so that a client
that only knows the API's URL finds this authorisation server, as MCP clients do (docs/mcp.md).

A token without the scope a route needs is a 403 ``insufficient_scope`` naming that scope
(authsvc.api.lookup.require_scopes). A token issued for other resources (RFC 8707) is not for this API
(``meant_for_this_service``; RFC 9068 4): authsvc.api.lookup refuses it.
"""

from __future__ import annotations

import re

from flask import Blueprint, Flask, Response, jsonify, request

from authsvc.core.tenancy import current_domain, issuer

# The platform API's prefix, where its blueprints (authsvc.api.views, the admin API) are mounted: the resource.
PREFIX = "/api/engine/v2"

WELL_KNOWN = "/.well-known/oauth-protected-resource"
bp = Blueprint("protected_resource", __name__, url_prefix=WELL_KNOWN)

# A Bearer challenge: its scheme, and its parameters if any (RFC 6750 3).
_BEARER = re.compile(r"^\s*Bearer\b(.*)$", re.IGNORECASE)


def metadata_url() -> str:
    """Where the API's RFC 9728 metadata is, at this request's origin (RFC 9728 3.1: the well-known path
    inserted before the resource's path)."""
    return f"{issuer()}{WELL_KNOWN}{PREFIX}"


def meant_for_this_service(resources: tuple[str, ...]) -> bool:
    """Whether a token issued for ``resources`` (RFC 8707; none: the default, for this service) may be used at
    this service's own API: without resources, or with the origin or the API among them (the resources this
    service's RFC 9728 metadata describes, a trailing slash aside). A token for an MCP server is that server's."""
    if not resources:
        return True
    own = issuer()
    ours = {own, own + "/", own + PREFIX, own + PREFIX + "/"}
    return any(resource in ours for resource in resources)


def _metadata(resource: str) -> Response:
    domain = current_domain()
    response = jsonify(
        {
            "resource": resource,
            "authorization_servers": [issuer()],
            "scopes_supported": domain.assignable_scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": f"{domain.name} API",
        }
    )
    response.headers["Vary"] = "Host"  # as the authorisation server's metadata: it depends on the Host
    return response


@bp.get("")
def origin_metadata() -> Response:
    """RFC 9728 3: the metadata of the resource at the origin (the service, whose API is under /api/engine/v2)."""
    return _metadata(issuer())


@bp.get(PREFIX)
def api_metadata() -> Response:
    """RFC 9728 3: the metadata of /api/engine/v2."""
    return _metadata(issuer() + PREFIX)


def init_app(app: Flask) -> None:
    """Name the metadata in the API's answers, and only there: the hook goes on each blueprint with a route under
    the API's prefix (an endpoint without a blueprint would put it on the app), found from the app's routes, so a
    request to any other surface (the token endpoint, sign-in) never calls it. After every other hook is
    registered: first in the blueprint's list, it runs after the blueprint's own hooks, as an app's hook did."""
    owners = {rule.endpoint.rpartition(".")[0] or None for rule in app.url_map.iter_rules() if _in_api(rule.rule)}
    for owner in sorted(owners, key=str):
        app.after_request_funcs.setdefault(owner, []).insert(0, name_the_metadata)


def _in_api(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def name_the_metadata(response: Response) -> Response:
    """Every 401 of the API names its metadata in each Bearer challenge (RFC 9728 5.1)."""
    if response.status_code != 401 or not _in_api(request.path):
        return response
    challenges = response.headers.getlist("WWW-Authenticate") or ['Bearer realm="authsvc"']
    named = []
    for challenge in challenges:
        found = _BEARER.match(challenge)
        if found and "resource_metadata=" not in challenge:
            rest = found.group(1).strip()
            challenge = f'Bearer {rest + ", " if rest else ""}resource_metadata="{metadata_url()}"'
        named.append(challenge)
    del response.headers["WWW-Authenticate"]
    for challenge in named:
        response.headers.add("WWW-Authenticate", challenge)
    return response
