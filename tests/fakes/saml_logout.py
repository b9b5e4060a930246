"""The IdP's side of SAML 2.0 Single Logout (SAML 2.0 Profiles 4.4) for tests/fakes/saml_idp.py's SamlIdp:
the LogoutRequest it sends an SP, and the check of the SP's LogoutResponse (and signature)."""

from __future__ import annotations

import re
from typing import Any


class SingleLogout:
    """Mixed into SamlIdp, which provides ``idp_server(key_name)`` and ``subject``."""

    subject: str

    def idp_server(self, key_name: str = "idp") -> Any:
        raise NotImplementedError

    def logout_request(
        self,
        slo_url: str,
        sp_entity_id: str,
        binding: str,
        *,
        subject: str | None = None,
        session_index: str | None = None,
        signed: bool = True,
        key_name: str = "idp",
        relay_state: str = "idp-relay",
        issue_instant: str | None = None,
        padding: int = 0,
    ) -> tuple[str, dict[str, str]]:
        """A LogoutRequest of this IdP to the SP at ``slo_url``: (the URL to deliver it to, the form fields).

        HTTP-Redirect: the URL holds the query (signed there); HTTP-POST: the fields (the XML signed).
        ``padding``: that many spaces after the XML's root element (still well-formed, still signed).
        """
        import base64

        from saml2 import BINDING_HTTP_REDIRECT
        from saml2.saml import NAMEID_FORMAT_PERSISTENT, NameID
        from saml2.xmldsig import SIG_RSA_SHA256

        server = self.idp_server(key_name)
        _, request = server.create_logout_request(
            slo_url,
            sp_entity_id,
            name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=subject or self.subject),
            session_indexes=[session_index] if session_index else None,
            sign=signed and binding != BINDING_HTTP_REDIRECT,
            sign_alg=SIG_RSA_SHA256,
        )
        xml = str(request)
        if issue_instant is not None:
            xml = re.sub(r'IssueInstant="[^"]+"', f'IssueInstant="{issue_instant}"', xml, count=1)
        xml += " " * padding
        if binding == BINDING_HTTP_REDIRECT:
            info = server.apply_binding(binding, xml, slo_url, relay_state, sign=signed, sigalg=SIG_RSA_SHA256)
            return dict(info["headers"])["Location"], {}
        return slo_url, {"SAMLRequest": base64.b64encode(xml.encode()).decode(), "RelayState": relay_state}

    def _sp_signed(self, server: Any, kind: str, fields: dict[str, str], issuer: str) -> bool:
        """Whether the SP's HTTP-Redirect message carries a valid query-string signature of its metadata's key."""
        from saml2.sigver import verify_redirect_signature

        if "Signature" not in fields or "SigAlg" not in fields:
            return False
        signed = {k: fields[k] for k in (kind, "RelayState", "SigAlg", "Signature") if k in fields}
        certs = server.metadata.certs(issuer, "spsso", "signing")
        return any(verify_redirect_signature(signed, server.sec.sec_backend, cert) for _, cert in certs)

    def read_logout_response(self, binding: str, fields: dict[str, str]) -> dict[str, Any]:
        """The SP's LogoutResponse, checked: {"in_response_to", "status", "signed", "issuer", "destination"}."""
        from saml2 import BINDING_HTTP_REDIRECT

        server = self.idp_server()
        parsed = server.parse_logout_request_response(fields["SAMLResponse"], binding)
        message = parsed.response
        issuer = message.issuer.text
        if binding == BINDING_HTTP_REDIRECT:
            signed = self._sp_signed(server, "SAMLResponse", fields, issuer)
        else:
            signed = message.signature is not None  # pysaml2 verified it when parsing
        return {
            "in_response_to": message.in_response_to,
            "status": message.status.status_code.value,
            "signed": signed,
            "issuer": issuer,
            "destination": message.destination,
        }
