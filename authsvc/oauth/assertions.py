"""private_key_jwt: applications that authenticate with a JWT signed by their own key (RFC 7523 2.2, OIDC Core 9).

Authlib's JWTBearerClientAssertion does the protocol. This module supplies
the audiences, the application's keys (its inline JWKS, or its jwks_uri fetched
under authsvc.core.outbound's rules and kept in Redis for every worker), the
single use of each ``jti``, and the rules added on top: asymmetric algorithms
only, ``exp`` required and at most AUTHSVC_CLIENT_ASSERTION_MAX_LIFETIME ahead.

A jwks_uri that cannot be fetched (down, hanging past the timeout, refused by
the destination rules, not a JWKS) is ``invalid_client``: RFC 6749 5.2 has no
"try later" error for the token endpoint, and the fault lies with the client's
own key server, not with this service.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from authlib.oauth2.rfc6749 import InvalidClientError, OAuth2Request
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from flask import request as flask_request
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

from authsvc.core import clock, security, store
from authsvc.core.models import Application
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import client_authentication, profile

log = logging.getLogger(__name__)

ALGORITHMS = client_authentication.CLIENT_ASSERTION_ALGORITHMS
# Clock skew allowed on exp, nbf and iat.
LEEWAY = 30
_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


class PrivateKeyJWT(JWTBearerClientAssertion):
    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __init__(self) -> None:
        super().__init__(validate_jti=True, leeway=LEEWAY)

    def __call__(self, query_client: Any, request: OAuth2Request) -> Application | None:
        client = super().__call__(query_client, request)
        # RFC 7521 4.2: a client_id sent beside the assertion must name the same client.
        given = request.payload.client_id
        if client is not None and given and given != client.client_id:
            raise InvalidClientError(description="client_id does not match the assertion's sub.")
        return client

    def extract_assertion(self, assertion: str) -> tuple[dict, dict]:
        try:
            return super().extract_assertion(assertion)
        except RecursionError:  # "[[[[..." a few thousand deep: Authlib's json_loads lets it out
            raise InvalidClientError(description="Invalid JWT payload.") from None

    def get_audiences(self) -> list[str]:
        # The client is known by now, and its domain with it (no statement more).
        if profile.fapi2(current_domain()):
            # FAPI 2.0 5.3.2.1 item 8: the issuer alone, against audience injection.
            return [issuer()]
        # OpenID Connect Core 9 names the token endpoint; RFC 7523 3 allows the issuer; an assertion sent
        # to another endpoint (introspection, revocation, device authorisation) may name that one.
        return list(dict.fromkeys([issuer(), f"{issuer()}/auth/oauth/token", f"{issuer()}{flask_request.path}"]))

    def process_assertion_claims(self, assertion: str, resolve_key: Any) -> dict:
        try:
            token = jwt.decode(assertion, resolve_key, algorithms=ALGORITHMS)
        except JoseError as exc:
            raise InvalidClientError(description=f"The client assertion is invalid: {exc.description}") from None
        except ValueError:
            raise InvalidClientError(description="The client assertion could not be verified.") from None
        self.verify_claims(token.claims)
        return token.claims

    def verify_claims(self, claims: jwt.Claims) -> None:
        # Before Authlib's checks, which end by spending the jti: a refused assertion spends nothing.
        # Authlib takes an aud array that holds one of ours among others: an assertion made for another
        # server too could be replayed here (RFC 7523 3 wants this server; one string, naming it).
        if not isinstance(claims.get("aud"), str) or claims["aud"] not in self.get_audiences():
            if profile.fapi2(current_domain()):
                raise InvalidClientError(description=profile.ASSERTION_AUDIENCE)
            raise InvalidClientError(
                description="The client assertion's aud must be one string: this server's issuer or the endpoint."
            )
        exp = claims.get("exp")
        limit = settings().client_assertion_max_lifetime
        if isinstance(exp, int | float) and not isinstance(exp, bool) and exp > clock.time() + limit + LEEWAY:
            raise InvalidClientError(description=f"The client assertion's exp is more than {limit} seconds ahead.")
        super().verify_claims(claims)

    def validate_jti(self, claims: jwt.Claims, jti: Any) -> bool:
        if not isinstance(jti, str) or not 0 < len(jti) <= 200:
            raise InvalidClientError(description="The client assertion's jti must be a string of 1 to 200 characters.")
        # Kept until the assertion could no longer pass the exp check.
        ttl = int(claims["exp"] - clock.time()) + LEEWAY + 1
        # RFC 7523 3: a jti is accepted once per client (SET NX: one winner, across workers).
        return store.claim_once(f"assertion-jti:{security.digest(claims['sub'] + ' ' + jti)}", ttl)

    def resolve_client_public_key(self, client: Application) -> Callable[[Any], Key]:
        if not client.private_key_jwt:
            # A secret's holder may not switch to an assertion (and has no keys to check it with).
            raise InvalidClientError(description="The client cannot authenticate with method: private_key_jwt")

        def resolve(obj: Any) -> Key:
            header = obj.headers()
            alg, kid = header.get("alg"), header.get("kid")
            if alg not in ALGORITHMS:
                raise InvalidClientError(
                    description=f"The client assertion's alg must be one of {' '.join(ALGORITHMS)}."
                )
            if alg not in profile.ASSERTION_ALGORITHMS and profile.fapi2(client):
                raise InvalidClientError(description=profile.ASSERTION_ALGORITHM)
            if kid is not None and not isinstance(kid, str):
                raise InvalidClientError(description="The client assertion's kid must be a string.")
            return client_key(client, kid, alg)

        return resolve


def client_key(client: Application, kid: str | None, alg: str) -> Key:
    """The application's key for ``kid`` and ``alg``; its jwks_uri is refetched once when none matches."""
    key = _pick(_key_set(client), kid, alg)
    if key is None and client.jwks_uri:
        fresh = _refetched_key_set(client)
        key = _pick(fresh, kid, alg) if fresh is not None else None
    if key is None:
        raise InvalidClientError(description="No key of the application matches the assertion's kid and alg.")
    return key


def _pick(keys: KeySet, kid: str | None, alg: str) -> Key | None:
    fitting = [
        key
        for key in keys.keys
        if key.key_type == ("EC" if alg.startswith("ES") else "RSA")
        and (not alg.startswith("ES") or key.get("crv") == _CURVES[alg])
        and key.get("alg", alg) == alg
        and (kid is None or key.kid == kid)
    ]
    # Without a kid, only an unambiguous key will do.
    return fitting[0] if len(fitting) == 1 else None


def _owner(client: Application) -> str:
    return f"application-{client.id}"


def _key_set(client: Application) -> KeySet:
    if client.jwks is not None:
        return KeySet.import_key_set(client.jwks)
    document = store.load_jwks(_owner(client), client.jwks_uri)
    if document is None:
        document = fetch_jwks(client.jwks_uri)
        store.save_jwks(_owner(client), client.jwks_uri, document, settings().client_jwks_ttl)
    return KeySet.import_key_set(document)


def _refetched_key_set(client: Application) -> KeySet | None:
    """The jwks_uri's keys fetched anew, or None when another assertion just did that.

    One refetch per application per interval (a claim in Redis): assertions
    with made-up kids cannot make this service hammer the client's key server.
    """
    if not store.claim_jwks_refetch(_owner(client), settings().client_jwks_refetch_interval):
        return None
    log.info("application %s: unknown key in a client assertion, refetching its JWKS", client.id)
    document = fetch_jwks(client.jwks_uri)
    store.save_jwks(_owner(client), client.jwks_uri, document, settings().client_jwks_ttl)
    return KeySet.import_key_set(document)


def fetch_jwks(url: str) -> dict:
    """The JWKS at ``url``, checked as at registration; InvalidClientError when it cannot be had.

    Bounded: the outbound deadline on the whole exchange, and a body no larger
    than a registered JWKS.
    """
    # Imported here, as in authsvc.sso: requests costs every web worker memory.
    import requests

    from authsvc.core import outbound

    config = settings()
    try:
        with outbound.guard(
            None,
            allow_private=config.client_jwks_allow_private_networks,
            seconds=config.outbound_deadline,
            max_bytes=client_authentication.JWKS_MAX_BYTES,
        ) as session:
            accept = {"Accept": "application/json"}
            response = session.get(url, timeout=config.client_jwks_timeout, headers=accept)
            response.raise_for_status()
            body = response.content
    except requests.RequestException as exc:
        # The URL is the client's own registration, not a secret; the reason helps its operator.
        log.warning("client jwks_uri %s could not be fetched: %s", url, type(exc).__name__)
        why = "refused by the destination rules" if outbound.refused(exc) else "unreachable, slow or failing"
        if isinstance(exc, outbound.TooLarge):
            why = f"larger than {client_authentication.JWKS_MAX_BYTES} bytes"
        raise InvalidClientError(description=f"The application's jwks_uri could not be fetched ({why}).") from None
    try:
        return client_authentication.client_jwks(json.loads(body))
    except RecursionError:
        raise InvalidClientError(description="The application's jwks_uri does not serve a usable JWKS.") from None
    except ValueError as exc:
        raise InvalidClientError(
            description=f"The application's jwks_uri does not serve a usable JWKS: {exc}"
        ) from None
