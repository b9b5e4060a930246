"""What the consent page shows (docs/branding.md, "Consent"): who asks, where the answer goes, and what each
scope allows, in the page's language where the domain's admins said it in that language.

The application's logo is shown as an image only when an admin set it (re-encoded, served from our own
host: authsvc.web.branding). A ``logo_uri`` the client declared at dynamic registration is never fetched,
neither here nor at registration: the page names its host, marked as not verified, beside a plain
placeholder. The redirect's host is the exact redirect URI's (already matched against the registration).

A client nobody vouched for, a Client ID Metadata Document's or one registered openly (dynamic registration
without an initial access token), has a name it chose itself: the page says it is not verified, and names
where it comes from (the document's host) or, for an openly registered client, where the answer goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import url_for

from authsvc.core import scope_text
from authsvc.core.database import db
from authsvc.core.models import Application, ApplicationLogo, Domain


@dataclass(frozen=True)
class ConsentView:
    name: str
    logo_url: str | None  # an admin's logo, from our own host
    declared_logo_host: str | None  # the host of the client's own logo_uri, not verified
    # The host serving the client's metadata document, for a client that is one: its name is not verified.
    document_host: str | None
    redirect_host: str
    # Nobody vouched for the name (a metadata document's client, or an openly registered one).
    unverified_name: bool
    lines: list[scope_text.ScopeText]

    @property
    def reserved_asked(self) -> list[str]:
        return [line.scope for line in self.lines if line.reserved]


def consent_view(domain: Domain, application: Application, scope: str, redirect_uri: str | None) -> ConsentView:
    logo = db.session.get(ApplicationLogo, application.id)
    logo_url = declared = None
    if logo is not None and logo.logo_digest:
        logo_url = url_for("branding.application_logo", client_id=application.client_id, v=logo.logo_digest)
    elif logo is not None and logo.declared_uri:
        declared = urlsplit(logo.declared_uri).hostname
    target = redirect_uri or application.get_default_redirect_uri() or ""
    return ConsentView(
        name=application.name,
        logo_url=logo_url,
        declared_logo_host=declared,
        document_host=urlsplit(application.client_id).hostname if application.metadata_document else None,
        redirect_host=urlsplit(target).netloc,
        unverified_name=bool(application.metadata_document or application.openly_registered),
        lines=scope_text.consent_lines(domain, scope.split()),
    )
