"""DPoP at the authorisation server (RFC 9449 5, 10): proofs at the token endpoint, bound codes, which clients need it.

Authlib has no DPoP; this module hooks it in. The token endpoint reads the
proof before any grant runs (a nonce retry spends no code), keeps it on the
request, and ``save_token`` binds the tokens to its key. ``dpop_jkt`` on the
authorisation request (or a proof at PAR, ``proof_thumbprint``) binds the
code, whose exchange then needs a proof by that key. Proof checking itself
is authsvc.api.proofs, shared with the resource side.
"""

from __future__ import annotations

import re
from typing import Any

from authlib.oauth2.rfc6749 import InvalidGrantError, InvalidRequestError

from authsvc.api import proofs
from authsvc.api.proofs import ALGORITHMS, FAPI2_ALGORITHM_RULE, FAPI2_ALGORITHMS, DPoPError, Proof, add_nonce
from authsvc.core.models import Application
from authsvc.oauth import profile
from authsvc.oauth.parameters import grant_state

__all__ = [
    "ALGORITHMS",
    "FAPI2_ALGORITHMS",
    "DPoPError",
    "Proof",
    "add_nonce",
    "dpop_required",
    "proof_thumbprint",
    "request_proof",
]

# An RFC 7638 SHA-256 thumbprint: 32 bytes, base64url without padding.
THUMBPRINT = re.compile(r"[A-Za-z0-9_-]{43}")


def dpop_required(client: Application) -> bool:
    """Whether every token request of ``client`` must carry a DPoP proof (its tokens are then all DPoP-bound).

    The one place this is decided: the application's ``dpop_bound_access_tokens`` (RFC 9449 5.2), or its
    domain's FAPI 2.0 profile (docs/fapi.md#sender-constrained-tokens).
    """
    return bool(client.dpop_bound_access_tokens) or profile.requires_dpop(client)


def request_proof() -> Proof | None:
    """The request's ``DPoP`` proof at the authorisation server (token endpoint, PAR), checked for its method and
    URL with the server's nonce, before the client is known; ``check_algorithm`` once it is."""
    return proofs.request_proof()


def check_algorithm(client: Application, proof: Proof | None) -> None:
    """A FAPI 2.0 domain's proofs are signed with its algorithms only (5.4.1; docs/fapi.md#algorithms).

    Checked once the client (and so its domain) is known: looking the domain up before would cost a
    statement on every token request with a proof.
    """
    if proof is not None and proof.alg not in FAPI2_ALGORITHMS and profile.fapi2(client):
        raise DPoPError("invalid_dpop_proof", FAPI2_ALGORITHM_RULE.format(alg=proof.alg))


def proof_thumbprint(dpop_jkt: str | None = None, proof: Proof | None = None) -> str | None:
    """The key a pushed authorisation request binds its code to (RFC 9449 10.1), or None.

    For PAR: the thumbprint of the key of a ``DPoP`` proof sent with the
    request (``proof``, checked already by ``request_proof``: for POST to the
    request's URI, with the server's nonce), else the request's ``dpop_jkt``.
    When both are given they must agree.
    """
    given = check_dpop_jkt(dpop_jkt)
    if proof is not None and given is not None and proof.jkt != given:
        raise InvalidRequestError("dpop_jkt is not the thumbprint of the DPoP proof's key.")
    return proof.jkt if proof is not None else given


def check_dpop_jkt(value: Any) -> str | None:
    """``dpop_jkt`` of an authorisation request: an RFC 7638 SHA-256 thumbprint, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not THUMBPRINT.fullmatch(value):
        raise InvalidRequestError("dpop_jkt must be a JWK SHA-256 thumbprint (RFC 7638): 43 base64url characters.")
    return value


def refuse_missing_proof(client: Application, proof: Proof | None) -> None:
    """At the token endpoint: a client that requires DPoP sends a proof with every request."""
    if proof is None and profile.requires_dpop(client):
        raise InvalidRequestError(profile.DPOP_REQUIRED)
    if proof is None and dpop_required(client):
        raise InvalidRequestError("This application requires DPoP: send a DPoP proof with every token request.")


def check_refresh_binding(token: Any, proof: Proof | None) -> None:
    """RFC 9449 5: a public client's refresh token is bound to its key; refresh with a proof by that key only.

    (A confidential client's is bound to its authentication: it may move to another key.)
    """
    if token.dpop_jkt and not token.application.confidential and (proof is None or proof.jkt != token.dpop_jkt):
        raise InvalidGrantError("The refresh token is bound to a DPoP key: send a DPoP proof made with that key.")


class CodeBinding:
    """Grant extension (RFC 9449 10): ``dpop_jkt`` at authorisation binds the code; its exchange proves that key."""

    def __call__(self, grant: Any) -> None:
        grant.register_hook("after_validate_authorization_request_payload", self.check_parameter)
        grant.register_hook("after_validate_token_request", self.check_exchange)

    def check_parameter(self, grant: Any, result: Any) -> None:
        check_dpop_jkt(grant.request.payload.data.get("dpop_jkt"))

    def check_exchange(self, grant: Any, result: Any) -> None:
        bound = grant.request.authorization_code.dpop_jkt
        proof = grant_state().dpop
        if bound and (proof is None or proof.jkt != bound):
            raise InvalidGrantError("The code is bound to a DPoP key (dpop_jkt): send a DPoP proof made with that key.")
