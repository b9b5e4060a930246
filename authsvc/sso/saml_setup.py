"""Setting up a SAML 2.0 provider: our key pair, the IdP's metadata (read, fetched, refreshed), a new provider.

The IdP's signing certificates come only from its metadata: refreshing it is
how a certificate rollover at the IdP reaches us.
"""

from __future__ import annotations

import datetime

from authsvc.core import clock, security
from authsvc.core.models import SsoProvider
from authsvc.core.settings import settings
from authsvc.sso.saml import SamlError, sp_urls

MAX_METADATA_BYTES = 1_000_000


def new_key_pair(common_name: str) -> tuple[str, str]:
    """A fresh RSA key and a self-signed certificate for it (ten years), both PEM.

    SAML uses the certificate only as a container for the public key: the IdP
    trusts it because our metadata names it, not because of who signed it.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return key_pem, cert.public_bytes(serialization.Encoding.PEM).decode()


def idp_entity_id(metadata_xml: str) -> str:
    """The entity id of the one IdP that ``metadata_xml`` describes, or SamlError.

    It must offer single sign-on over the HTTP-Redirect binding and name at
    least one signing certificate: without one, no response could be verified.
    """
    from saml2 import BINDING_HTTP_REDIRECT
    from saml2.mdstore import MetadataStore

    if not metadata_xml or len(metadata_xml.encode()) > MAX_METADATA_BYTES:
        raise SamlError("bad_metadata", "The IdP metadata is empty or too large.")
    store = MetadataStore(attrc=None, config=None)
    try:
        store.load("inline", metadata_xml)
        idps = list(store.identity_providers())
    except Exception as exc:  # noqa: BLE001 - pysaml2 raises many kinds on bad XML
        raise SamlError("bad_metadata", f"The IdP metadata cannot be read ({exc.__class__.__name__}).") from None
    if len(idps) != 1:
        raise SamlError("bad_metadata", f"The metadata must describe exactly one identity provider, not {len(idps)}.")
    entity_id = idps[0]
    if not store.single_sign_on_service(entity_id, BINDING_HTTP_REDIRECT):
        raise SamlError("bad_metadata", "The identity provider offers no HTTP-Redirect single sign-on service.")
    if not store.certs(entity_id, "idpsso", "signing"):
        raise SamlError("bad_metadata", "The identity provider's metadata names no signing certificate.")
    return entity_id


def fetch_metadata(url: str, allow_private: bool) -> str:
    """The IdP metadata at ``url``, through the outbound destination rules; SamlError when unreachable."""
    # Imported here, as in authsvc.sso.flow: requests costs every web worker memory.
    import requests

    from authsvc.core import outbound

    config = settings()
    try:
        with outbound.guard(
            None, allow_private=allow_private, seconds=config.outbound_deadline, max_bytes=MAX_METADATA_BYTES
        ) as session:
            response = session.get(url, timeout=config.sso_timeout)
            response.raise_for_status()
            body = response.content
    except outbound.TooLarge:
        raise SamlError("bad_metadata", f"The IdP metadata is larger than {MAX_METADATA_BYTES} bytes.") from None
    except requests.RequestException as exc:
        reason = "metadata_refused" if outbound.refused(exc) else "metadata_unreachable"
        raise SamlError(reason, f"The IdP metadata URL could not be read ({exc.__class__.__name__}).") from None
    return body.decode("utf-8", "replace")


def metadata_stale(provider: SsoProvider) -> bool:
    """Whether ``provider``'s IdP metadata comes from a URL and is older than AUTHSVC_SAML_METADATA_MAX_AGE."""
    if not provider.saml_metadata_url:
        return False
    fetched = provider.saml_metadata_fetched_at or 0
    return clock.time() - fetched >= settings().saml_metadata_max_age


def refresh_metadata(provider: SsoProvider, *, force: bool = False) -> bool:
    """Refetch the IdP metadata of ``provider`` from its URL when stale (or ``force``); whether it changed.

    This is how a new IdP signing certificate reaches us (rollover). The
    caller commits. A document for another IdP entity id is refused: that
    would change who the provider's accounts are.
    """
    if not provider.saml_metadata_url:
        if force:
            raise SamlError("no_metadata_url", "This provider's metadata was given as a file: upload the new one.")
        return False
    if not force and not metadata_stale(provider):
        return False
    allowed = provider.allow_private_network or settings().sso_allow_private_networks
    xml = fetch_metadata(provider.saml_metadata_url, allowed)
    if idp_entity_id(xml) != provider.client_id:
        raise SamlError("metadata_entity_changed", "The fetched metadata is for another identity provider.")
    changed = xml != provider.saml_metadata_xml
    provider.saml_metadata_xml = xml
    provider.saml_metadata_fetched_at = clock.now()
    return changed


def new_provider(
    provider_id: str,
    domain_id: int,
    domain_host: str,
    name: str,
    *,
    metadata_xml: str | None,
    metadata_url: str | None,
    attributes: dict[str, str | None],
    allow_private_network: bool = False,
    allow_unsolicited: bool = False,
    clock_skew: int = 60,
    trust_email: bool = False,
) -> SsoProvider:
    """A new SAML provider (not saved): the IdP's metadata read (fetched from its URL when given), a fresh key pair.

    ``attributes`` maps our fields (email, name, groups) to the IdP's attribute name; unnamed ones use
    DEFAULT_ATTRIBUTES. SamlError when the metadata cannot be had or read.
    """
    if metadata_url:
        allowed = allow_private_network or settings().sso_allow_private_networks
        metadata_xml = fetch_metadata(metadata_url, allowed)
    entity_id = idp_entity_id(metadata_xml or "")
    key_pem, cert_pem = new_key_pair(sp_urls(domain_host, provider_id)["entity_id"])
    mappings = {name: [value] for name, value in attributes.items() if value}
    return SsoProvider(
        id=provider_id,
        domain_id=domain_id,
        name=name,
        kind="saml",
        client_id=entity_id[:255],
        client_secret_encrypted=security.encrypt(""),
        scopes="",
        profile_mappings=mappings,
        match_rules={},
        trust_email=trust_email,
        allow_private_network=allow_private_network,
        saml_metadata_xml=metadata_xml,
        saml_metadata_url=metadata_url,
        saml_metadata_fetched_at=clock.now() if metadata_url else None,
        saml_sp_certificate=cert_pem,
        saml_sp_key_encrypted=security.encrypt(key_pem),
        saml_allow_unsolicited=allow_unsolicited,
        saml_clock_skew=clock_skew,
    )
