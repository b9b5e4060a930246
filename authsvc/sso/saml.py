"""SAML 2.0 service provider: pysaml2 does the protocol, the xmlsec1 binary the signatures and decryption.

Per provider we are one SP with our own entity id, assertion consumer service
(ACS) and key pair; the IdP is described by its metadata. Nothing here checks
a signature itself: pysaml2 asks xmlsec1, against the certificates of the
IdP's metadata only. What pysaml2 leaves to its caller (whether the response
answers *our* pending request, replays) is decided in ``verify_response`` and
in authsvc.sso.saml_flow.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import hmac
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from authsvc.core import security
from authsvc.core.models import SsoProvider
from authsvc.sso.saml_clients import KeptClients, fingerprint

if TYPE_CHECKING:
    from saml2.client import Saml2Client

# pysaml2 (and the cryptography it drives) is imported inside the functions
# that use it: a web worker that never serves a SAML sign-in does not pay for it.

log = logging.getLogger(__name__)
# pysaml2 logs whole responses at DEBUG and the signed-in subject at INFO: an
# assertion's contents are personal data and a bearer credential until it expires.
logging.getLogger("saml2").setLevel(logging.WARNING)

SAML_PREFIX = "/auth/oauth2/saml"

# This process's SP clients, by everything they are built from (sp_client); their directories hold only our
# certificate between requests, and go at exit.
_clients = KeptClients()
atexit.register(_clients.clear)

# Attribute names tried for our fields when the provider names none: the
# friendly names pysaml2 maps URN attributes to, and the claim URIs ADFS and
# Microsoft Entra send.
DEFAULT_ATTRIBUTES = {
    "email": [
        "email",
        "mail",
        "emailAddress",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
        "urn:oid:0.9.2342.19200300.100.1.3",
    ],
    "name": [
        "displayName",
        "name",
        "cn",
        "http://schemas.microsoft.com/identity/claims/displayname",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
    ],
    "groups": [
        "groups",
        "memberOf",
        "isMemberOf",
        "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups",
        "http://schemas.xmlsoap.org/claims/Group",
    ],
}
ATTRIBUTE_FIELDS = tuple(DEFAULT_ATTRIBUTES)
MAX_RESPONSE_BYTES = 500_000


class SamlError(Exception):
    """The SAML sign-in or configuration cannot go on; ``reason`` is a short code for the audit record."""

    def __init__(self, reason: str, message: str = "The identity provider's answer was refused."):
        super().__init__(message)
        self.reason = reason
        self.message = message


def sp_urls(domain_host: str, provider_id: str) -> dict[str, str]:
    """Our entity id (the metadata URL, as is customary), metadata URL, ACS and single logout URL for a provider.

    Built from the domain's host, never from the request: the IdP was told
    these once, and they must not change with how a request reached us.
    """
    base = f"https://{domain_host}{SAML_PREFIX}/{provider_id}"
    return {
        "entity_id": f"{base}/metadata",
        "metadata_url": f"{base}/metadata",
        "acs_url": f"{base}/acs",
        "slo_url": f"{base}/slo",
    }


def xmlsec_binary() -> str:
    """The xmlsec1 binary pysaml2 runs, or SamlError when this machine has none."""
    from saml2.sigver import SigverError, get_xmlsec_binary

    try:
        return get_xmlsec_binary(["/usr/bin", "/usr/local/bin", "/opt/local/bin"])
    except SigverError:
        raise SamlError(
            "xmlsec1_missing", "SAML sign-in is not available on this server (xmlsec1 is missing)."
        ) from None


@contextmanager
def sp_client(provider: SsoProvider, domain_host: str, *, unsolicited: bool = False) -> Iterator[Saml2Client]:
    """A pysaml2 SP client for ``provider``; our private key exists on disk (0600) only inside the block.

    xmlsec1 reads keys from files. The key is decrypted into a private
    directory and removed when the block ends. The client is kept for the
    next request with the same provider settings (authsvc.sso.saml_clients):
    building one parses our key twice.
    """
    binary = xmlsec_binary()
    certificate = cast(str, provider.saml_sp_certificate)
    # A SAML provider is made with its key pair (saml_setup): both columns hold it.
    encrypted_key = cast(str, provider.saml_sp_key_encrypted)
    key = fingerprint(
        provider.id,
        provider.name,
        domain_host,
        unsolicited,
        binary,
        encrypted_key,
        certificate,
        provider.saml_metadata_xml,
        provider.saml_clock_skew,
    )

    def build(key_file: str, cert_file: str) -> Saml2Client:
        return _new_client(provider, domain_host, unsolicited, binary, key_file, cert_file)

    with _clients.use(key, lambda: security.decrypt(encrypted_key), certificate, build) as client:
        yield client


def _new_client(
    provider: SsoProvider, domain_host: str, unsolicited: bool, binary: str, key_file: str, cert_file: str
) -> Saml2Client:
    from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
    from saml2.client import Saml2Client
    from saml2.config import SPConfig

    urls = sp_urls(domain_host, provider.id)
    config = SPConfig()
    config.load(
        {
            "entityid": urls["entity_id"],
            "xmlsec_binary": binary,
            "key_file": key_file,
            "cert_file": cert_file,
            "encryption_keypairs": [{"key_file": key_file, "cert_file": cert_file}],
            "metadata": {"inline": [provider.saml_metadata_xml]},
            "accepted_time_diff": provider.saml_clock_skew,
            "allow_unknown_attributes": True,
            "service": {
                "sp": {
                    "name": provider.name,
                    "endpoints": {
                        "assertion_consumer_service": [(urls["acs_url"], BINDING_HTTP_POST)],
                        # Single Logout (SAML 2.0 Profiles 4.4): one URL, told apart by method.
                        "single_logout_service": [
                            (urls["slo_url"], BINDING_HTTP_REDIRECT),
                            (urls["slo_url"], BINDING_HTTP_POST),
                        ],
                    },
                    "allow_unsolicited": unsolicited,
                    "authn_requests_signed": True,
                    "logout_requests_signed": True,
                    "logout_responses_signed": True,
                    # Either is enough, as long as it covers the assertion; pysaml2 refuses neither.
                    "want_response_signed": False,
                    "want_assertions_signed": False,
                    "want_assertions_or_response_signed": True,
                }
            },
        }
    )
    return Saml2Client(config=config)


def metadata_document(provider: SsoProvider, domain_host: str) -> str:
    """Our SP metadata for ``provider``: entity id, ACS (HTTP-POST), SLO (both bindings), our certificate."""
    from saml2.metadata import entity_descriptor

    with sp_client(provider, domain_host) as client:
        return str(entity_descriptor(client.config))


def authn_request(provider: SsoProvider, domain_host: str, relay_state: str) -> tuple[str, str]:
    """A signed AuthnRequest over HTTP-Redirect: (its id, the IdP URL to send the browser to)."""
    from saml2 import BINDING_HTTP_REDIRECT
    from saml2.xmldsig import SIG_RSA_SHA256

    with sp_client(provider, domain_host) as client:
        request_id, info = client.prepare_for_authenticate(
            entityid=provider.client_id,
            relay_state=relay_state,
            binding=BINDING_HTTP_REDIRECT,
            sign=True,
            sigalg=SIG_RSA_SHA256,
        )
    return request_id, dict(info["headers"])["Location"]


@dataclass
class Verified:
    """What a verified response says: who, their attributes, and the assertion's id and end of validity."""

    subject: str
    attributes: dict[str, list[str]]
    assertion_id: str
    not_on_or_after: int
    in_response_to: str | None
    # What a LogoutRequest names the sign-in by (SAML 2.0 Core 3.7.1): the NameID as the IdP sent it, and the
    # AuthnStatement's SessionIndex when it gave one.
    name_id: dict[str, str | None] = field(default_factory=dict)
    session_index: str | None = None


def verify_response(provider: SsoProvider, domain_host: str, saml_response: str, request_id: str | None) -> Verified:
    """Verify an HTTP-POST ``SAMLResponse`` for ``provider``; SamlError(reason) on any failure.

    ``request_id``: our pending AuthnRequest's id this browser's flow holds, or
    None for an IdP-initiated (unsolicited) response, which the caller allows
    only when the provider does. pysaml2 checks signatures (a signed assertion,
    or a signed response around it), audience, destination, recipient, times
    and the request id it is given; it accepts a response without
    ``InResponseTo`` even then, which we do not.
    """
    from saml2 import BINDING_HTTP_POST

    if not saml_response or len(saml_response) > MAX_RESPONSE_BYTES:
        raise SamlError("malformed")
    try:
        base64.b64decode(saml_response, validate=True)
    except (binascii.Error, ValueError):
        raise SamlError("malformed") from None
    outstanding = {request_id: "/"} if request_id else {}
    with sp_client(provider, domain_host, unsolicited=request_id is None) as client:
        try:
            response = client.parse_authn_request_response(saml_response, BINDING_HTTP_POST, outstanding=outstanding)
        except Exception as exc:  # noqa: BLE001 - pysaml2 signals each refusal by its own exception
            log.info("SAML provider %s: response refused: %s", provider.id, exc.__class__.__name__)
            raise SamlError(_reason(exc)) from None
    if response is None or response.assertion is None or response.name_id is None:
        # pysaml2 stops without an exception for a Destination that is not our ACS.
        destination = getattr(getattr(response, "response", None), "destination", None)
        wrong_destination = destination and destination != sp_urls(domain_host, provider.id)["acs_url"]
        raise SamlError("destination" if wrong_destination else "no_assertion")
    answered = response.in_response_to
    if request_id is not None:
        if not answered or not hmac.compare_digest(answered, request_id):
            raise SamlError("in_response_to")
    elif answered:
        # An answer to some request that is not pending here is not "unsolicited": it belongs to someone else.
        raise SamlError("in_response_to")
    acs_url = sp_urls(domain_host, provider.id)["acs_url"]
    for confirmation in response.assertion.subject.subject_confirmation:
        data = confirmation.subject_confirmation_data
        if data is not None and (data.in_response_to or None) != (request_id or None):
            raise SamlError("in_response_to")
        # pysaml2 checks the Recipient only when given conversation info; the
        # Web SSO profile (4.1.4.2) wants our ACS there, and nothing else.
        if data is None or data.recipient != acs_url:
            raise SamlError("recipient")
    issuer = response.issuer()
    if issuer and issuer != provider.client_id:
        raise SamlError("issuer")
    attributes = {name: [str(v) for v in values if v is not None] for name, values in (response.ava or {}).items()}
    name_id = response.name_id
    statements = response.assertion.authn_statement or []
    return Verified(
        subject=response.name_id.text.strip() if response.name_id.text else "",
        attributes=attributes,
        assertion_id=response.assertion.id,
        not_on_or_after=int(response.not_on_or_after or 0),
        in_response_to=answered,
        name_id={
            "text": (name_id.text or "").strip(),
            "format": name_id.format,
            "name_qualifier": name_id.name_qualifier,
            "sp_name_qualifier": name_id.sp_name_qualifier,
        },
        session_index=statements[0].session_index if statements else None,
    )


def _reason(exc: BaseException) -> str:
    """A short code for why pysaml2 refused a response (for the audit record; the user sees one message)."""
    name, text = exc.__class__.__name__, str(exc).lower()
    if "signature" in text or "signed" in text or name in ("SignatureError", "SigverError", "BadSignature"):
        return "signature"
    if name == "UnsolicitedResponse" or "recall" in text:
        return "in_response_to"
    if name in ("ResponseLifetimeExceed", "ToEarly") or "lifetime" in text or "condition not ok" in text:
        return "expired"
    if "audience" in text:
        return "audience"
    if "recipient" in text:
        return "recipient"
    if "assertion" in text and "number" in text:
        return "assertion_count"
    if name.startswith("Status"):
        return "idp_status"
    if name in ("DecryptError", "DecryptionFailed"):
        return "decryption"
    return "invalid"


def attribute_names(provider: SsoProvider, field_name: str) -> list[str]:
    """The IdP attribute names read for our ``field_name`` (email, name, groups), the configured one first."""
    return [*provider.profile_mappings.get(field_name, []), *DEFAULT_ATTRIBUTES[field_name]]
