"""The front door: ``GET /`` on a domain's host, where a person who opens the service's address lands.

A small page naming the domain, with links to sign in (or who is signed in), the console for
admins and the discovery documents; a client that
asks for JSON (``Accept: application/json``) gets the same links as JSON. An unknown host stays
``404 unknown_domain`` (authsvc.core.tenancy).
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from authsvc.auth import sessions
from authsvc.core.marks import N_
from authsvc.core.tenancy import current_domain, issuer
from authsvc.web.pages import page

bp = Blueprint("front_door", __name__)

# Each link's key in the JSON answer, the endpoint it leads to, and its words on the page.
LINKS = (
    ("signin", "auth.login_page", N_("Sign in")),
    ("console", "console.index", N_("Console (admins)")),
    ("openid_configuration", "well_known.openid_configuration", N_("OpenID Connect discovery")),
    ("oauth_authorization_server", "well_known.oauth_authorization_server", N_("OAuth 2.0 metadata (RFC 8414)")),
)


def _links() -> list[tuple[str, str, str]]:
    """(key, path, words) of each link whose endpoint this service has."""
    return [(key, url_for(endpoint), words) for key, endpoint, words in LINKS if endpoint in current_app.view_functions]


@bp.get("/")
def index() -> Response:
    domain = current_domain()
    links = _links()
    if request.accept_mimetypes.best_match(["text/html", "application/json"]) == "application/json":
        base = issuer()
        return jsonify(domain=domain.name, host=domain.host, links={key: f"{base}{path}" for key, path, _ in links})
    return page("front_door.html", domain=domain, user=sessions.session_user(domain), links=links)
