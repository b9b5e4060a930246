"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client_id that is the URL of
the client's own metadata, as MCP clients (Claude, ChatGPT, VS Code) name themselves (docs/mcp.md).

Which documents a domain reads is its own (``client_metadata_documents``): none, those of an allow-list of
hosts, or any host's. The document is fetched under authsvc.core.outbound's rules (the outbound deadline, no
redirects, https to public addresses; loopback and private addresses only with a system admin's exception,
``client_metadata_allow_private_network``, and then plain http only on loopback), at most ``MAX_BYTES``, with
TLS verified against the system's trust store (``SSL_CERT_FILE`` or ``REQUESTS_CA_BUNDLE`` when set).

It is accepted only when its ``client_id`` is the URL exactly, and its authentication method is ``none`` or
``private_key_jwt`` with a ``jwks_uri``: a document is public, so it cannot share a secret. What it lists and
the service does not serve (grant types such as jwt-bearer, OpenID RP Metadata Choices' lists) is read for what
the service supports; the rest is dynamic registration's rules (authsvc.oauth.client_metadata): redirect URIs
as an admin's, scopes within the domain's (all of them when the document names none), never a reserved one.

The client is an application row of the domain keyed by the URL, made from the document and refreshed from it
when it is older than its HTTP cache lifetime (Cache-Control ``max-age``, bounded to ``MIN_LIFETIME`` ..
``MAX_LIFETIME``; ``DEFAULT_LIFETIME`` without one; ``no-store`` / ``no-cache`` mean the least): a changed
document takes effect at the latest ``MAX_LIFETIME`` after it changed. The domain's choice is checked at
every request; the destination (a name resolved) before each fetch. Its tokens, codes and approvals refer to
the row as to any other application's. Such a client always gets the consent page (authsvc.oauth.views).
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import InvalidClientError, OAuth2Error
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc.core import clock, validation
from authsvc.core.database import db
from authsvc.core.models import CLIENT_METADATA_ALLOWLIST, CLIENT_METADATA_OFF, RESERVED_SCOPES, Application, Domain
from authsvc.core.settings import settings
from authsvc.oauth.client_metadata import RegisteredClientMetadata, apply_metadata, declare_logo, registration_policy

log = logging.getLogger(__name__)

MAX_BYTES = 5 * 1024
MAX_URL_LENGTH = 2000
# Seconds a fetched document holds, whatever its Cache-Control says; and without one.
MIN_LIFETIME, DEFAULT_LIFETIME, MAX_LIFETIME = 60, 3600, 86400
# What the service reads of a document; the rest (contacts, tos_uri, ...) is ignored, as RFC 7591 2 allows.
SUPPORTED_GRANT_TYPES = ("authorization_code", "refresh_token")
DOCUMENT_AUTH_METHODS = ("private_key_jwt", "none")  # in order of preference (RP Metadata Choices' lists)
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*\"?(\d{1,10})\"?\s*(?:,|$)", re.IGNORECASE)


def client(domain: Domain, url: str, known: Application | None) -> Application:
    """The client ``url`` names in ``domain``: ``known`` (its row, if any) while its document holds, else the
    document fetched anew; InvalidClientError when the domain does not read it or it is not acceptable."""
    if known is not None and not known.metadata_document:
        raise InvalidClientError(description="The client_id is not a client metadata document's.")
    _check_policy(domain, url)
    if known is not None and (known.metadata_document_expires_at or 0) > clock.now():
        return known
    _check_destination(domain, url)
    document, lifetime = _fetch(domain, url)
    metadata = _checked(domain, url, document)
    return _saved(domain, url, known, metadata, logo_uri=_logo(document), expires_at=clock.now() + lifetime)


def _refused(description: str) -> InvalidClientError:
    return InvalidClientError(description=description[:300])


def _check_policy(domain: Domain, url: str) -> None:
    """The domain's choice and the URL's form, checked at every request (no name is resolved)."""
    mode = domain.client_metadata_documents
    if mode == CLIENT_METADATA_OFF:
        raise _refused("This domain does not accept client metadata documents as client_id.")
    if len(url) > MAX_URL_LENGTH:
        raise _refused(f"A client_id URL must be at most {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        raise _refused("The client_id is not a URL (client metadata documents).") from None
    segments = parts.path.split("/")
    if parts.path in ("", "/") or "." in segments or ".." in segments or "@" in parts.netloc or parts.fragment:
        raise _refused(
            "A client_id URL needs a path without . or .. segments, no user name and no fragment "
            "(client metadata documents)."
        )
    if parts.scheme == "http" and not domain.client_metadata_allow_private_network:
        raise _refused("A client metadata document is served over https.")
    if mode == CLIENT_METADATA_ALLOWLIST and host not in domain.client_metadata_hosts.split():
        raise _refused("This domain does not accept client metadata documents of this host.")


def _check_destination(domain: Domain, url: str) -> None:
    """Before a fetch: https to a public address (its name resolved now), unless the domain's exception allows
    loopback and private ones (plain http on loopback only); authsvc.core.outbound checks again at connect."""
    try:
        validation.client_url(url, "The client_id", allow_private=domain.client_metadata_allow_private_network)
    except validation.Invalid as exc:
        raise _refused(f"{exc} (client metadata documents).") from None


def _fetch(domain: Domain, url: str) -> tuple[dict[str, Any], int]:
    """The document at ``url`` as a JSON object, and how long it holds (seconds)."""
    # Imported here, as in authsvc.sso: requests costs every web worker memory.
    import requests

    from authsvc.core import outbound

    config = settings()
    try:
        with outbound.guard(
            None,
            allow_private=domain.client_metadata_allow_private_network,
            seconds=config.outbound_deadline,
            max_bytes=MAX_BYTES,
        ) as session:
            # Per request: a session's own verify gives way to REQUESTS_CA_BUNDLE from the environment.
            response = session.get(url, headers={"Accept": "application/json"}, verify=outbound.trust_store())
            response.raise_for_status()
    except requests.RequestException as exc:
        log.warning("client metadata document %s could not be fetched: %s", url, type(exc).__name__)
        why = "refused by the destination rules" if outbound.refused(exc) else "unreachable, slow or failing"
        if isinstance(exc, outbound.TooLarge):
            why = f"larger than {MAX_BYTES} bytes"
        raise _refused(f"The client metadata document could not be fetched ({why}).") from None
    try:
        document = validation.json_object(response.content)
    except validation.Invalid as exc:
        raise _refused(f"The client metadata document is not a JSON object: {exc}") from None
    return document, lifetime(response.headers.get("Cache-Control", ""))


def lifetime(cache_control: str) -> int:
    """How long a document holds, from its Cache-Control, within the bounds above."""
    directives = cache_control.lower()
    if "no-store" in directives or "no-cache" in directives:
        return MIN_LIFETIME
    found = _MAX_AGE.search(directives)
    seconds = int(found.group(1)) if found else DEFAULT_LIFETIME
    return max(MIN_LIFETIME, min(seconds, MAX_LIFETIME))


def _checked(domain: Domain, url: str, document: dict[str, Any]) -> dict[str, Any]:
    """The document as the metadata the service registers, or InvalidClientError saying what is wrong."""
    if document.get("client_id") != url:
        raise _refused("The client metadata document's client_id is not its URL.")
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise _refused("A client metadata document must not carry a client secret.")
    method = _auth_method(document)
    if method == "private_key_jwt" and not isinstance(document.get("jwks_uri"), str):
        raise _refused("A client metadata document with private_key_jwt names its keys by jwks_uri.")
    metadata: dict[str, Any] = {"token_endpoint_auth_method": method}
    for name in ("redirect_uris", "client_name"):
        if name in document:
            metadata[name] = document[name]
    if method == "private_key_jwt":
        metadata["jwks_uri"] = document["jwks_uri"]
    grant_types = _strings(document, "grant_types")
    grant_types = ["authorization_code"] if grant_types is None else grant_types
    metadata["grant_types"] = [g for g in SUPPORTED_GRANT_TYPES if g in grant_types]
    if "authorization_code" not in metadata["grant_types"]:
        raise _refused("A client metadata document's client uses the authorization_code grant.")
    metadata["response_types"] = ["code"]
    metadata["scope"] = _scope(domain, document)
    claims = RegisteredClientMetadata(metadata, {}, params=registration_policy(domain))
    try:
        claims.validate()
    except OAuth2Error as exc:
        raise _refused(f"The client metadata document is not acceptable: {exc.description}") from None
    return dict(claims)


def _auth_method(document: dict[str, Any]) -> str:
    method = document.get("token_endpoint_auth_method")
    if method is None and "token_endpoint_auth_methods_supported" in document:
        # OpenID RP Metadata Choices 1.0: the client lists what it can do; the first we serve, by preference.
        offered = _strings(document, "token_endpoint_auth_methods_supported") or []
        if "private_key_jwt" in offered and not isinstance(document.get("jwks_uri"), str):
            offered = [m for m in offered if m != "private_key_jwt"]
        method = next((m for m in DOCUMENT_AUTH_METHODS if m in offered), "unsupported")
    # A document is public: without a method named, its client has no secret to authenticate with.
    method = "none" if method is None else method
    if method not in DOCUMENT_AUTH_METHODS:
        raise _refused(
            "A client metadata document's token_endpoint_auth_method must be none or private_key_jwt "
            "(a shared secret cannot be published)."
        )
    return str(method)


def _scope(domain: Domain, document: dict[str, Any]) -> str:
    """The document's scopes the domain knows (never a reserved one); all of the domain's when it names none."""
    known = [s for s in domain.scope_list if s not in RESERVED_SCOPES]
    asked = document.get("scope")
    if not isinstance(asked, str):
        return " ".join(known)
    return " ".join(s for s in dict.fromkeys(asked.split()) if s in known) or "public"


def _strings(document: dict[str, Any], name: str) -> list[str] | None:
    value = document.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _refused(f"The client metadata document's {name} must be an array of strings.")
    return value


def _logo(document: dict[str, Any]) -> str | None:
    logo = document.get("logo_uri")
    if not isinstance(logo, str) or len(logo) > MAX_URL_LENGTH or not logo.startswith("https://"):
        return None
    return logo


def _saved(
    domain: Domain,
    url: str,
    known: Application | None,
    metadata: dict[str, Any],
    *,
    logo_uri: str | None,
    expires_at: int,
) -> Application:
    """The domain's row for ``url``, made or brought up to date from the checked metadata, and committed."""
    application = known if known is not None else Application(domain_id=domain.id, client_id=url)
    apply_metadata(application, metadata, fapi2=domain.fapi2)
    if not metadata.get("client_name"):
        application.name = url
    application.metadata_document_expires_at = expires_at
    application.consent = True
    if known is None:
        db.session.add(application)
    try:
        db.session.flush()
        # Kept where a registered client's logo_uri is: the consent page names its host as not verified.
        declare_logo(application, {"logo_uri": logo_uri})
        db.session.commit()
    except IntegrityError:
        # Another request made the row first: theirs is as good (the same document, just fetched).
        db.session.rollback()
        found = db.session.scalar(
            select(Application).where(Application.client_id == url, Application.domain_id == domain.id)
        )
        if found is None:
            raise
        return found
    return application
