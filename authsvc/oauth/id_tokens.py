"""ID tokens on Authlib: in the code exchange and in refresh responses (OpenID Connect Core 3.1.3.3, 12.2).

Authlib's ``OpenIDCode`` (code grant) and ``OpenIDToken`` (refresh grant)
add an ``id_token`` when the granted scope holds ``openid``, and never
otherwise; this module supplies the keys, the issuer and our claims
(authsvc.oauth.oidc). Authlib's OIDC package loads joserfc and cryptography
(about 10 MB), so authsvc.oauth.server imports this module at the first
code grant, or at the first refresh that grants ``openid``.
"""

from __future__ import annotations

from typing import Any

from authlib.oidc.core import OpenIDCode, OpenIDToken, UserInfo

from authsvc.core import clock
from authsvc.core.models import Application, User
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import backchannel, keys, oidc_request, profile
from authsvc.oauth.oidc import SignIn, user_claims
from authsvc.oauth.parameters import MergedRequest


class IDTokenClaims(OpenIDToken):
    """What the code and refresh extensions share: the domain's key, issuer and our claims."""

    def resolve_client_private_key(self, client: Application) -> keys.PrivateKey:
        return self._current_key(client)

    def _current_key(self, client: Application) -> keys.PrivateKey:
        # Authlib asks for the header (kid) and then the key: one read of the current key per response.
        return keys.request_key(current_domain(), self.get_client_algorithm(client))

    def get_client_algorithm(self, client: Application) -> str:
        return profile.id_token_algorithm(client, keys.DEFAULT_ALGORITHM)

    def get_encode_header(self, client: Application) -> dict[str, str | None]:
        # Authlib leaves kid out; the same current key signs, so the kid matches.
        return {
            "alg": self.get_client_algorithm(client),
            "kid": self._current_key(client).kid,
            "typ": keys.ID_TOKEN_TYPE,
        }

    def get_client_claims(self, client: Application) -> dict[str, Any]:
        return {
            "iss": issuer(),
            "aud": client.client_id,
            "azp": client.client_id,
            "exp": clock.now() + settings().id_token_ttl,
        }

    def get_authorization_code_claims(self, authorization_code: Any) -> dict[str, Any]:
        claims = super().get_authorization_code_claims(authorization_code)  # nonce, auth_time, amr
        if authorization_code.sid:
            claims["sid"] = authorization_code.sid
        return claims

    def generate_user_info(self, user: User, scope: str) -> UserInfo:
        return user_claims(user, scope)


class OpenIDCodeExtension(IDTokenClaims, OpenIDCode):
    def __call__(self, grant: Any) -> None:
        # Authlib checks nonce and prompt=none for requests with openid; prompt,
        # max_age, login_hint, id_token_hint and request objects are read for every request.
        super().__call__(grant)
        grant.register_hook("after_validate_authorization_request_payload", oidc_request.read)

    def process_token(self, grant: Any, response: Any) -> dict[str, Any]:
        token = super().process_token(grant, response)
        if "id_token" in token:
            # Back-channel logout tells the applications that received an ID token in the session.
            request = grant.request
            sid = request.authorization_code.sid
            backchannel.remember(sid, request.user.id, current_domain(), issuer(), request.client)
        return token

    def exists_nonce(self, nonce: str, request: MergedRequest) -> bool:
        # Authlib validates the request twice per authorisation (consent, then
        # the code), so a check-and-set here would refuse its own request; the
        # relying party, which made the nonce, checks it in the ID token.
        return False


class OpenIDRefreshExtension(IDTokenClaims, OpenIDToken):
    """A fresh ID token in refresh responses: the same sign-in (auth_time, sid, amr), no nonce."""

    def encode_id_token(self, token: dict[str, Any], request: MergedRequest) -> str:
        old = request.refresh_token
        request.authorization_code = SignIn(auth_time=old.auth_time, amr=old.amr, sid=old.sid)
        return super().encode_id_token(token, request)
