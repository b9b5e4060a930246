"""private_key_jwt's client authentication (RFC 7523 2.2, OIDC Core 9), on Authlib's JWTBearerClientAssertion.

The keys, the jwks_uri fetch and the algorithms are authsvc.oauth.client_assertion_keys'.
This module is imported at the first request that carries a client assertion
(authsvc.oauth.clients.authenticate_private_key_jwt): Authlib's RFC 7523 and
joserfc load cryptography, about 10 MB a worker that never sees one does
without (docs/performance.md, "Memory").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from authlib.oauth2.rfc6749 import InvalidClientError, OAuth2Request
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from flask import request as flask_request
from joserfc import jwt
from joserfc.errors import JoseError

from authsvc.core import clock, security, signed_json, store
from authsvc.core.models import Application
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import profile
from authsvc.oauth.client_assertion_keys import ALGORITHMS, LEEWAY, client_key

if TYPE_CHECKING:
    from joserfc.jwk import Key


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
            signed_json.jose_header(assertion)
        except (ValueError, RecursionError):
            raise InvalidClientError(description="The client assertion's header is not JSON as a JWT needs.") from None
        try:
            token = jwt.decode(assertion, resolve_key, algorithms=ALGORITHMS, decoder_cls=signed_json.SignedJSONDecoder)
        except JoseError as exc:
            raise InvalidClientError(
                description=f"The client assertion is invalid: {exc.description or exc.error}."
            ) from None
        except (ValueError, RecursionError):
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
