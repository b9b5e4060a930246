"""A SAML 2.0 identity provider for the tests: pysaml2's own IdP (saml2.server.Server) on loopback.

A tiny Flask application wraps the library's IdP, configured from files this
module writes (its key, certificate and the SP metadata it is given). It
answers the HTTP-Redirect AuthnRequest with the HTML form a browser would post
to the ACS; a test reads that form and posts it, as a browser does.

Single Logout (SAML 2.0 Profiles 4.4): the IdP's metadata names its SLO
endpoints (unless ``slo`` is False); ``logout_request`` builds the
LogoutRequest the IdP sends an SP (signed or not, either binding), and
``read_logout_response`` checks the SP's answer. An SP's own LogoutRequest,
arriving at ``/slo/redirect``, is checked, kept in ``logout_requests`` and
answered with a signed LogoutResponse.

``fault`` makes the next answers misbehave in one way. The variants that need
an edit before signing build the response unsigned with the library, edit the
XML, then have the library (xmlsec1) sign the assertion.
"""

from __future__ import annotations

import datetime
import html
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from flask import Flask, request
from werkzeug.serving import make_server

from tests.fakes.saml_keys import key_pairs
from tests.fakes.saml_logout import SingleLogout
from tests.helpers import QUICK_SHUTDOWN

ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion:Assertion"


def xmlsec_available() -> bool:
    return shutil.which("xmlsec1") is not None


class SamlIdp(SingleLogout):
    """A running IdP. ``sign_in_as`` sets who the next response names; ``fault`` how it misbehaves."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="saml-idp-"))
        self.app = self._build()
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.entity_id = f"{self.url}/idp"
        # A key of nobody's metadata ("other_key"), and the IdP's own, which rotate_key replaces.
        self._lent_pairs: list[int] = []
        key, cert = self._take_key_pair()
        (self.dir / "rogue.key").write_bytes(key)
        (self.dir / "rogue.crt").write_bytes(cert)
        self.rotate_key()
        self.sp_metadata: str | None = None
        self.subject = "saml-user-1"
        self.attributes: dict[str, list[str]] = {}
        # None, "unsigned", "tampered", "expired", "not_yet_valid", "wrong_audience", "wrong_destination",
        # "wrong_recipient", "no_in_response_to", "foreign_in_response_to", "encrypted", "signed_response",
        # "wrapped_first", "wrapped_advice", "other_key"
        self.fault: str | None = None
        self.requests: list[dict[str, Any]] = []
        self.metadata_requests = 0
        self.slo = True
        self._metadata: tuple[tuple[bool, bytes], str] | None = None
        # What each response named: {"name_id", "session_index"} (what a LogoutRequest names the sign-in by).
        self.issued: list[dict[str, str]] = []
        self.logout_requests: list[dict[str, Any]] = []
        # None (Success) or a samlp status URN the IdP answers an SP's LogoutRequest with.
        self.logout_status: str | None = None
        self._server = None

    def rotate_key(self) -> None:
        """A new signing key and certificate; the metadata names only the new one (a rollover)."""
        key, cert = self._take_key_pair()
        (self.dir / "idp.key").write_bytes(key)
        (self.dir / "idp.crt").write_bytes(cert)
        self._server = None

    def _take_key_pair(self) -> tuple[bytes, bytes]:
        index, pair = key_pairs.take()
        self._lent_pairs.append(index)
        return pair

    def sign_in_as(self, subject: str, **attributes: Any) -> None:
        self.subject = subject
        self.attributes = {k: v if isinstance(v, list) else [v] for k, v in attributes.items()}

    def trust_sp(self, metadata_xml: str) -> None:
        self.sp_metadata = metadata_xml
        (self.dir / "sp.xml").write_text(metadata_xml)
        self._server = None

    def __enter__(self) -> SamlIdp:
        # Made before serving: the service under test fetches it under a deadline, and a process's first build
        # imports pysaml2 (seconds on a loaded machine).
        self.metadata()
        threading.Thread(target=self.server.serve_forever, kwargs=QUICK_SHUTDOWN, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)
        key_pairs.give_back(self._lent_pairs)

    # pysaml2's IdP, configured from the files above.

    def _config(self, key_name: str = "idp") -> dict[str, Any]:
        from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
        from saml2.saml import NAME_FORMAT_URI, NAMEID_FORMAT_PERSISTENT

        return {
            "entityid": self.entity_id,
            "xmlsec_binary": shutil.which("xmlsec1"),
            "key_file": str(self.dir / f"{key_name}.key"),
            "cert_file": str(self.dir / f"{key_name}.crt"),
            "metadata": {"local": [str(self.dir / "sp.xml")]} if self.sp_metadata else {},
            "service": {
                "idp": {
                    "name": "Test IdP",
                    "endpoints": {
                        "single_sign_on_service": [(f"{self.url}/sso/redirect", BINDING_HTTP_REDIRECT)],
                        **(
                            {
                                "single_logout_service": [
                                    (f"{self.url}/slo/redirect", BINDING_HTTP_REDIRECT),
                                    (f"{self.url}/slo/post", BINDING_HTTP_POST),
                                ]
                            }
                            if self.slo
                            else {}
                        ),
                    },
                    "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                    "policy": {"default": {"lifetime": {"minutes": 5}, "name_form": NAME_FORMAT_URI}},
                }
            },
        }

    def idp_server(self, key_name: str = "idp") -> Any:
        from saml2.config import IdPConfig
        from saml2.server import Server

        if key_name != "idp":
            config = IdPConfig()
            config.load(self._config(key_name))
            return Server(config=config)
        if self._server is None:
            config = IdPConfig()
            config.load(self._config())
            self._server = Server(config=config)
        return self._server

    def metadata(self) -> str:
        """The IdP's metadata (built from its configuration alone: serving it needs no xmlsec1), made again when
        what it says changes: its key (``rotate_key``), whether it has SLO endpoints."""
        from saml2.config import IdPConfig
        from saml2.metadata import entity_descriptor

        said = (self.slo, (self.dir / "idp.crt").read_bytes())
        if self._metadata is None or self._metadata[0] != said:
            config = IdPConfig()
            config.load(self._config())
            self._metadata = (said, str(entity_descriptor(config)))
        return self._metadata[1]

    # Responses.

    def response_for(self, in_response_to: str | None, acs_url: str, sp_entity_id: str) -> str:
        """The SAMLResponse XML the current fault asks for."""
        from saml2.saml import NAMEID_FORMAT_PERSISTENT, NameID

        fault = self.fault
        server = self.idp_server("rogue" if fault == "other_key" else "idp")
        if fault == "no_in_response_to":
            in_response_to = None
        elif fault == "foreign_in_response_to":
            in_response_to = "id-someone-elses-request-0123456789"
        common = {
            "identity": self.attributes,
            "in_response_to": in_response_to,
            "destination": acs_url,
            "sp_entity_id": sp_entity_id,
            "name_id": NameID(format=NAMEID_FORMAT_PERSISTENT, text=self.subject),
            "authn": {"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password", "authn_auth": self.entity_id},
        }
        xml = self._response_xml(server, fault, common, acs_url, sp_entity_id)
        index = re.search(r'SessionIndex="([^"]+)"', xml)
        self.issued.append({"name_id": self.subject, "session_index": index.group(1) if index else None})
        return xml

    def _response_xml(self, server: Any, fault: str | None, common: dict[str, Any], acs_url: str, sp_entity_id: str):
        if fault == "encrypted":
            return str(server.create_authn_response(**common, sign_assertion=True, encrypt_assertion=True))
        if fault == "signed_response":
            return str(server.create_authn_response(**common, sign_response=True, sign_assertion=False))
        if fault in (None, "other_key", "no_in_response_to", "foreign_in_response_to"):
            return str(server.create_authn_response(**common, sign_assertion=True))
        xml = str(server.create_authn_response(**common, sign_assertion=False, sign_response=False))
        if fault == "unsigned":
            return xml
        xml = self._edit_before_signing(xml, fault, acs_url, sp_entity_id)
        signed = self.sign_assertion(server, xml)
        return self._edit_after_signing(signed, fault)

    def _edit_before_signing(self, xml: str, fault: str, acs_url: str, sp_entity_id: str) -> str:
        past = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        future = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if fault == "expired":
            long_ago = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=2)).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
            xml = re.sub(r'NotBefore="[^"]+"', f'NotBefore="{long_ago}"', xml)
            return re.sub(r'NotOnOrAfter="[^"]+"', f'NotOnOrAfter="{past}"', xml)
        if fault == "not_yet_valid":
            return re.sub(r'NotBefore="[^"]+"', f'NotBefore="{future}"', xml)
        if fault == "wrong_audience":
            return xml.replace(f">{sp_entity_id}<", ">https://other.example.com/sp<")
        if fault == "wrong_destination":
            return xml.replace(f'Destination="{acs_url}"', 'Destination="https://other.example.com/acs"')
        if fault == "wrong_recipient":
            return xml.replace(f'Recipient="{acs_url}"', 'Recipient="https://other.example.com/acs"')
        return xml

    @staticmethod
    def sign_assertion(server: Any, xml: str) -> str:
        """Have the library sign the (only) assertion of ``xml``: add its signature template, then xmlsec1."""
        from saml2.sigver import pre_signature_part
        from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256

        start = re.search(r"<(\w+:)?Assertion\b[^>]*\bID=\"([^\"]+)\"", xml)
        prefix, assertion_id = start.group(1) or "", start.group(2)
        issuer_end = xml.index(f"</{prefix}Issuer>", start.start()) + len(f"</{prefix}Issuer>")
        template = pre_signature_part(
            ident=assertion_id, public_key=server.sec.my_cert, digest_alg=DIGEST_SHA256, sign_alg=SIG_RSA_SHA256
        )
        xml = xml[:issuer_end] + str(template) + xml[issuer_end:]
        return server.sec.sign_statement(xml, ASSERTION, node_id=assertion_id)

    def _edit_after_signing(self, xml: str, fault: str) -> str:
        if fault == "tampered":
            name = next(iter(self.attributes.get("mail", [])), None) or self.subject
            return xml.replace(name, "mallory@example.com") if name in xml else xml.replace(self.subject, "mallory")
        if fault in ("wrapped_first", "wrapped_advice"):
            match = re.search(r"<(\w+:)?Assertion\b.*</\1Assertion>", xml, re.S)
            prefix, original = match.group(1) or "", match.group(0)
            evil = re.sub(r"<(\w+:)?Signature\b.*</\1Signature>", "", original, flags=re.S)
            evil = evil.replace(self.subject, "mallory").replace(' ID="', ' ID="evil-', 1)
            if fault == "wrapped_first":
                # The signed original stays; a forged one is put before it.
                return xml.replace(original, evil + original)
            # The forged one takes the original's place, the signed original hidden in its Advice.
            conditions_end = evil.index(f"</{prefix}Conditions>") + len(f"</{prefix}Conditions>")
            evil = evil[:conditions_end] + f"<{prefix}Advice>{original}</{prefix}Advice>" + evil[conditions_end:]
            return xml.replace(original, evil)
        return xml

    def post_form(self, saml_response_xml: str, acs_url: str, relay_state: str | None) -> str:
        """The auto-posting HTML form a browser gets from the IdP (HTTP-POST binding)."""
        import base64

        fields = {"SAMLResponse": base64.b64encode(saml_response_xml.encode()).decode()}
        if relay_state is not None:
            fields["RelayState"] = relay_state
        inputs = "".join(
            f'<input type="hidden" name="{name}" value="{html.escape(value)}">' for name, value in fields.items()
        )
        return (
            f'<html><body onload="document.forms[0].submit()"><form method="post" action="{html.escape(acs_url)}">'
            f"{inputs}<noscript><button>Continue</button></noscript></form></body></html>"
        )

    # The application.

    def _build(self) -> Flask:
        app = Flask(f"saml-idp-{id(self)}")
        idp = self

        @app.get("/metadata")
        def metadata():
            idp.metadata_requests += 1
            return idp.metadata(), 200, {"Content-Type": "application/samlmetadata+xml"}

        @app.get("/sso/redirect")
        def single_sign_on():
            from saml2 import BINDING_HTTP_REDIRECT

            server = idp.idp_server()
            parsed = server.parse_authn_request(request.args["SAMLRequest"], BINDING_HTTP_REDIRECT)
            message = parsed.message
            idp.requests.append(
                {
                    "id": message.id,
                    "acs": message.assertion_consumer_service_url,
                    "issuer": message.issuer.text,
                    "signed": "Signature" in request.args,
                    "relay_state": request.args.get("RelayState"),
                }
            )
            acs = message.assertion_consumer_service_url
            xml = idp.response_for(message.id, acs, message.issuer.text)
            return idp.post_form(xml, acs, request.args.get("RelayState"))

        @app.get("/slo/redirect")
        def single_logout():
            """An SP's LogoutRequest over HTTP-Redirect: checked, kept, answered with a signed LogoutResponse."""
            from saml2 import BINDING_HTTP_REDIRECT
            from saml2.xmldsig import SIG_RSA_SHA256

            server = idp.idp_server()
            fields = request.args.to_dict()
            parsed = server.parse_logout_request(fields["SAMLRequest"], BINDING_HTTP_REDIRECT)
            message = parsed.message
            issuer = message.issuer.text
            idp.logout_requests.append(
                {
                    "id": message.id,
                    "issuer": issuer,
                    "name_id": message.name_id.text,
                    "session_indexes": [s.text for s in message.session_index or []],
                    "destination": message.destination,
                    "signed": idp._sp_signed(server, "SAMLRequest", fields, issuer),
                    "relay_state": fields.get("RelayState"),
                }
            )
            from saml2.s_utils import status_message_factory

            status = status_message_factory("Not every SP was told", idp.logout_status) if idp.logout_status else None
            response = server.create_logout_response(
                message, bindings=[BINDING_HTTP_REDIRECT], status=status, sign=False
            )
            rinfo = server.response_args(message, [BINDING_HTTP_REDIRECT])
            info = server.apply_binding(
                BINDING_HTTP_REDIRECT,
                str(response),
                rinfo["destination"],
                fields.get("RelayState"),
                response=True,
                sign=True,
                sigalg=SIG_RSA_SHA256,
            )
            return "", 303, {"Location": dict(info["headers"])["Location"]}

        @app.get("/initiate")
        def idp_initiated():
            """An IdP-initiated (unsolicited) sign-in to the SP named by ``sp`` and ``acs``."""
            xml = idp.response_for(None, request.args["acs"], request.args["sp"])
            return idp.post_form(xml, request.args["acs"], request.args.get("relay_state"))

        return app

    def initiate_url(self, sp_entity_id: str, acs_url: str, relay_state: str | None = None) -> str:
        query = {"sp": sp_entity_id, "acs": acs_url}
        if relay_state is not None:
            query["relay_state"] = relay_state
        return f"{self.url}/initiate?{urlencode(query)}"
