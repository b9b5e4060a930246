"""SAML 2.0 Single Logout messages (Core 3.7, Bindings 3.4 and 3.5), built and checked with pysaml2.

The protocol only: what the IdP sends us is read and its signature checked
here, what we send it is built and signed here. Which sessions end, replays
and the pending requests of our own are authsvc.sso.saml_slo's.

pysaml2 checks a LogoutRequest's signature only when the SP configuration asks
IdP-side options for it, and a LogoutResponse's XML signature only "if present"
(an invalid one is retried as unsigned). So the signature is required and
checked here first, with pysaml2's own functions: over the query string for
HTTP-Redirect (Bindings 3.4.4.1), over the XML for HTTP-POST; against the
certificates of the provider's IdP metadata only.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import logging
import time
import zlib
from dataclasses import dataclass
from typing import Any

from authsvc.core import clock
from authsvc.core.models import SsoProvider
from authsvc.sso.saml import MAX_RESPONSE_BYTES, SamlError, sp_client, sp_urls

log = logging.getLogger(__name__)

REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
# Query-string signature algorithms we accept: RSA with SHA-2 (SHA-1 is broken for signatures).
SIGNATURE_ALGORITHMS = {
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384",
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512",
}
SIG_RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
# How old a LogoutRequest may be (its IssueInstant), beyond the provider's clock skew. pysaml2 allows a
# day; the ids of accepted requests are kept this long (plus skew) so a replay is always recognised.
MAX_MESSAGE_AGE = 300
MAX_RELAY_STATE = 1000


@dataclass
class IdpLogout:
    """A verified LogoutRequest from the provider's IdP."""

    id: str
    name_id: str
    session_indexes: list[str]
    message: Any  # pysaml2's samlp.LogoutRequest, to answer


@dataclass
class IdpAnswer:
    """A verified LogoutResponse from the provider's IdP."""

    in_response_to: str | None
    status: str


def _fields_ok(fields: dict[str, str], kind: str) -> str:
    encoded = fields.get(kind) or ""
    if not encoded or len(encoded) > MAX_RESPONSE_BYTES:
        raise SamlError("malformed", "The SAML message is missing or too large.")
    # Bindings 3.4.3: at most 80 bytes; some IdPs send more, none this much.
    if len(fields.get("RelayState") or "") > MAX_RELAY_STATE:
        raise SamlError("malformed", "The RelayState is too long.")
    return encoded


def _inflated_within_limit(encoded: str) -> None:
    """Refuse an HTTP-Redirect message that inflates past ``MAX_RESPONSE_BYTES``, without inflating it all.

    Deflate expands a thousandfold: a request line of a few kilobytes would be megabytes of XML, held and
    parsed before its signature is checked (pysaml2 inflates without a limit).
    """
    inflater = zlib.decompressobj(-15)
    try:
        inflater.decompress(base64.b64decode(encoded), MAX_RESPONSE_BYTES)
    except (binascii.Error, ValueError, zlib.error):
        raise SamlError("malformed", "The SAML message cannot be decoded.") from None
    if inflater.unconsumed_tail:
        raise SamlError("malformed", "The SAML message is too large once inflated.")


def _xml(client: Any, encoded: str, binding: str, msgtype: str) -> str:
    if binding == REDIRECT:
        _inflated_within_limit(encoded)
    try:
        if binding == POST:
            base64.b64decode(encoded, validate=True)
        xml = client.unravel(encoded, binding, msgtype)
    except Exception:  # noqa: BLE001 - bad base64, deflate or encoding all mean the same to the sender
        raise SamlError("malformed", "The SAML message cannot be decoded.") from None
    if not xml:
        raise SamlError("malformed", "The SAML message cannot be decoded.")
    return xml if isinstance(xml, str) else xml.decode("utf-8", "replace")


def _issuer_of(xml: str, msgtype: str) -> str:
    from saml2 import samlp

    try:
        message = getattr(samlp, f"{msgtype}_from_string")(xml)
    except Exception:  # noqa: BLE001 - pysaml2's XML parser (defusedxml) raises several kinds
        message = None
    if message is None:
        raise SamlError("malformed", f"The SAML message is not a {msgtype}.")
    return (message.issuer.text or "").strip() if message.issuer is not None else ""


def _check_signature(
    client: Any, provider: SsoProvider, binding: str, kind: str, fields: dict[str, str], xml: str, msgtype: str
) -> None:
    """Refuse (SamlError) unless the IdP of ``provider`` signed this message."""
    from saml2.sigver import verify_redirect_signature

    if binding == REDIRECT:
        sigalg, signature = fields.get("SigAlg"), fields.get("Signature")
        if not sigalg or not signature:
            raise SamlError("unsigned", "The SAML message is not signed.")
        if sigalg not in SIGNATURE_ALGORITHMS:
            raise SamlError("signature", "The SAML message's signature algorithm is not accepted.")
        signed = {kind: fields[kind], "SigAlg": sigalg, "Signature": signature}
        if fields.get("RelayState") is not None:
            signed["RelayState"] = fields["RelayState"]
        certificates = client.metadata.certs(provider.client_id, "idpsso", "signing")
        try:
            valid = any(verify_redirect_signature(signed, client.sec.sec_backend, cert) for _, cert in certificates)
        except Exception:  # noqa: BLE001 - bad base64 or key material: not a valid signature
            valid = False
        if not valid:
            raise SamlError("signature", "The SAML message's signature is not valid.")
        return
    try:
        client.sec.correctly_signed_message(xml, msgtype, must=True, origdoc=fields[kind])
    except Exception as exc:  # noqa: BLE001 - pysaml2 signals each failure by its own exception
        missing = "missing" in str(exc).lower()
        raise SamlError(
            "unsigned" if missing else "signature",
            "The SAML message is not signed." if missing else "The SAML message's signature is not valid.",
        ) from None


def _verified(
    provider: SsoProvider, binding: str, kind: str, fields: dict[str, str], client: Any, msgtype: str
) -> tuple[str, str]:
    encoded = _fields_ok(fields, kind)
    xml = _xml(client, encoded, binding, msgtype)
    # Issuer first: a message of another IdP is that, not merely a bad signature.
    if _issuer_of(xml, msgtype) != provider.client_id:
        raise SamlError("issuer", "The SAML message comes from another identity provider.")
    _check_signature(client, provider, binding, kind, fields, xml, msgtype)
    return encoded, xml


def _epoch(instant: str) -> int:
    from saml2.time_util import str_to_time

    return calendar.timegm(str_to_time(instant))


def read_logout_request(
    provider: SsoProvider, domain_host: str, binding: str, fields: dict[str, str], now: float | None = None
) -> IdpLogout:
    """The IdP's signed LogoutRequest (``fields``: the SAMLRequest, RelayState, SigAlg, Signature sent)."""
    now = clock.time() if now is None else now
    with sp_client(provider, domain_host) as client:
        encoded, _ = _verified(provider, binding, "SAMLRequest", fields, client, "logout_request")
        try:
            parsed = client.parse_logout_request(
                encoded, binding, relay_state=fields.get("RelayState"), sigalg=None, signature=None
            )
        except Exception as exc:  # noqa: BLE001 - pysaml2 signals each refusal by its own exception
            reason = "destination" if "destined" in str(exc).lower() else "invalid"
            raise SamlError(reason, "The SAML LogoutRequest is not valid here.") from None
    message = parsed.message if parsed else None
    if message is None or message.name_id is None or not (message.name_id.text or "").strip():
        raise SamlError("invalid", "The SAML LogoutRequest names no one.")
    # Bindings 3.4.5.2 and 3.5.5.2: a signed message names its Destination, which must be ours.
    if message.destination != sp_urls(domain_host, provider.id)["slo_url"]:
        raise SamlError("destination", "The SAML LogoutRequest is not addressed to this endpoint.")
    skew = provider.saml_clock_skew
    issued = _epoch(message.issue_instant)
    if issued > now + skew or issued < now - MAX_MESSAGE_AGE - skew:
        raise SamlError("expired", "The SAML LogoutRequest is too old or from the future.")
    if message.not_on_or_after and _epoch(message.not_on_or_after) <= now - skew:
        raise SamlError("expired", "The SAML LogoutRequest has expired.")
    return IdpLogout(
        id=message.id,
        name_id=message.name_id.text.strip(),
        session_indexes=[(s.text or "").strip() for s in message.session_index or [] if s.text],
        message=message,
    )


def logout_response(
    provider: SsoProvider, domain_host: str, request: IdpLogout, binding: str, relay_state: str | None
) -> dict[str, Any]:
    """Our signed LogoutResponse (Success) to ``request``: {"binding", "url"} for HTTP-Redirect,
    {"binding", "url", "fields"} for HTTP-POST; the IdP's binding of the request when it has one.

    ``relay_state``: the request's, returned as is (Bindings 3.4.3 and 3.5.3).
    SamlError("no_slo") when the IdP's metadata names no single logout service to answer to.
    """
    with sp_client(provider, domain_host) as client:
        offered = [b for b in (binding, REDIRECT if binding == POST else POST) if _idp_slo(client, provider, b)]
        if not offered:
            raise SamlError("no_slo", "The identity provider's metadata names no single logout service.")
        answer_binding = offered[0]
        destination = _idp_slo(client, provider, answer_binding)
        try:
            # Bindings 3.4.4.1: over HTTP-Redirect the query string is signed, not the XML.
            response = client.create_logout_response(
                request.message, bindings=[answer_binding], sign=answer_binding == POST, sign_alg=SIG_RSA_SHA256
            )
            if answer_binding == REDIRECT:
                info = client.apply_binding(
                    REDIRECT,
                    str(response),
                    destination,
                    relay_state or "",
                    response=True,
                    sign=True,
                    sigalg=SIG_RSA_SHA256,
                )
                return {"binding": REDIRECT, "url": dict(info["headers"])["Location"]}
        except Exception as exc:  # noqa: BLE001 - pysaml2 could not build or sign it: the IdP gets no answer
            log.warning("SAML provider %s: no LogoutResponse made: %s", provider.id, exc.__class__.__name__)
            raise SamlError("no_slo", "No LogoutResponse could be made.") from None
    encoded = base64.b64encode(str(response).encode()).decode()
    fields = {"SAMLResponse": encoded, **({"RelayState": relay_state} if relay_state else {})}
    return {"binding": POST, "url": destination, "fields": fields}


def _idp_slo(client: Any, provider: SsoProvider, binding: str) -> str | None:
    from saml2.s_utils import UnsupportedBinding

    try:
        services = client.metadata.single_logout_service(provider.client_id, binding, "idpsso")
    except UnsupportedBinding:  # pysaml2's way of saying the IdP has no SLO service over ``binding``
        return None
    return services[0]["location"] if services else None


def logout_request(
    provider: SsoProvider, domain_host: str, name_id: dict[str, str | None], session_index: str | None, relay_state: str
) -> tuple[str, str] | None:
    """Our signed LogoutRequest over HTTP-Redirect for a sign-in: (its id, the IdP URL to send the browser to).

    None when the IdP's metadata names no HTTP-Redirect single logout service.
    """
    from saml2.saml import NameID

    with sp_client(provider, domain_host) as client:
        destination = _idp_slo(client, provider, REDIRECT)
        if destination is None:
            return None
        subject = NameID(
            text=name_id.get("text"),
            format=name_id.get("format"),
            name_qualifier=name_id.get("name_qualifier"),
            sp_name_qualifier=name_id.get("sp_name_qualifier"),
        )
        try:
            request_id, request = client.create_logout_request(
                destination,
                provider.client_id,
                name_id=subject,
                session_indexes=[session_index] if session_index else None,
                sign=False,
                expire=_instant(clock.time() + MAX_MESSAGE_AGE),
            )
            info = client.apply_binding(
                REDIRECT, str(request), destination, relay_state, sign=True, sigalg=SIG_RSA_SHA256
            )
        except Exception as exc:  # noqa: BLE001 - a NameID or metadata pysaml2 cannot use: no LogoutRequest
            raise SamlError("logout_request", f"No LogoutRequest could be made ({exc.__class__.__name__}).") from None
    return request_id, dict(info["headers"])["Location"]


def _instant(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def read_logout_response(provider: SsoProvider, domain_host: str, binding: str, fields: dict[str, str]) -> IdpAnswer:
    """The IdP's signed LogoutResponse to one of our LogoutRequests."""
    with sp_client(provider, domain_host) as client:
        encoded, xml = _verified(provider, binding, "SAMLResponse", fields, client, "logout_response")
        try:
            parsed = client.parse_logout_request_response(encoded, binding)
        except Exception as exc:  # noqa: BLE001 - pysaml2 signals each refusal by its own exception
            if exc.__class__.__name__.startswith("Status"):
                # A signed answer that the IdP could not sign the user out (partial logout): still an answer.
                from saml2 import samlp

                message = samlp.logout_response_from_string(xml)
                return IdpAnswer(in_response_to=message.in_response_to, status=exc.__class__.__name__)
            log.info("SAML provider %s: LogoutResponse refused: %s", provider.id, exc.__class__.__name__)
            raise SamlError("invalid", "The SAML LogoutResponse is not valid here.") from None
    if parsed is None or parsed.response is None:
        raise SamlError("invalid", "The SAML LogoutResponse is not valid here.")
    status = parsed.response.status.status_code.value if parsed.response.status is not None else ""
    return IdpAnswer(in_response_to=parsed.in_response_to, status=status.rsplit(":", 1)[-1])
