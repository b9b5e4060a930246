"""DPoP proofs checked against the RFCs' own examples (RFC 7638 3.1, RFC 9449 4.1, 6.1, 7.1)."""

from __future__ import annotations

import pytest

from authsvc.api import proofs
from tests.helpers.dpop import (
    RFC7638_KEY,
    RFC7638_THUMBPRINT,
    RFC9449_ACCESS_TOKEN,
    RFC9449_ATH,
    RFC9449_JKT,
    RFC9449_PROOF,
    Holder,
)


def test_the_rfc_7638_example_thumbprint():
    assert proofs.thumbprint(RFC7638_KEY) == RFC7638_THUMBPRINT


def test_the_rfc_9449_example_ath():
    assert proofs.access_token_hash(RFC9449_ACCESS_TOKEN) == RFC9449_ATH


def test_the_rfc_9449_example_proof_verifies_and_names_the_examples_key(make_app):
    # The example was signed in 2019: accepted only by a service that takes proofs that old.
    app = make_app(AUTHSVC_DPOP_PROOF_LIFETIME=10**10)
    with app.app_context():
        proof = proofs.verify(RFC9449_PROOF, "POST", "https://server.example.com/token")
    assert proof.jkt == RFC9449_JKT


def test_the_rfc_9449_example_proof_is_stale_today(app):
    with app.app_context(), pytest.raises(proofs.DPoPError) as refused:
        proofs.verify(RFC9449_PROOF, "POST", "https://server.example.com/token")
    assert refused.value.error == "invalid_dpop_proof"
    assert "iat" in refused.value.description


def test_the_rfc_9449_example_proof_is_for_its_own_method_and_uri(make_app):
    app = make_app(AUTHSVC_DPOP_PROOF_LIFETIME=10**10)
    with app.app_context():
        for method, uri in [("GET", "https://server.example.com/token"), ("POST", "https://server.example.com/t")]:
            with pytest.raises(proofs.DPoPError):
                proofs.verify(RFC9449_PROOF, method, uri)


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("https://server.example.com/token", "https://server.example.com/token"),
        ("https://Server.Example.COM:443/token?x=1#f", "https://server.example.com/token"),
        ("HTTPS://server.example.com/token#frag", "https://server.example.com/token"),
        ("http://server.example.com:80/token", "http://server.example.com/token"),
        ("https://server.example.com:8443/token", "https://server.example.com:8443/token"),
        ("https://server.example.com", "https://server.example.com/"),
        ("https://[::1]:8443/token", "https://[::1]:8443/token"),
        ("https://server.example.com:99999/token", ""),
    ],
)
def test_htu_is_compared_without_query_fragment_or_default_port(given, normalised):
    assert proofs.normalised_uri(given) == normalised


@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS256", "EdDSA", "Ed25519"])
def test_the_thumbprint_of_a_proof_is_its_keys(app, alg):
    holder = Holder(alg)
    with app.app_context():
        proof = proofs.verify(holder.proof("https://a.example/t", nonce=None), "POST", "https://a.example/t")
    assert proof.jkt == holder.jkt == proofs.thumbprint(holder.jwk)
