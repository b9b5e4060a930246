"""Identity Assertion JWT Authorization Grants (ID-JAG, draft-ietf-oauth-identity-assertion-authz-grant), both sides.

As an enterprise's identity provider, a domain issues an ID-JAG (``issue``) by
token exchange (authsvc.oauth.token_exchange, requested_token_type
``urn:ietf:params:oauth:token-type:id-jag``) for the ID token of a user signed
in to one of its clients, for an audience it lists as a resource authorisation
server (``issuers audience``). As a tool's authorisation server, a domain takes
one at the JWT bearer grant (RFC 7523, ``JwtBearerGrant``) from an issuer it
trusts for ID-JAGs (``issuers trust --id-jag``), and issues an access token for
the user it names; an issuer trusted ``--create-users`` vouches for addresses, so
its ID-JAG for an e-mail no user has creates that user. docs/token-exchange.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from authlib.oauth2.rfc6749 import InvalidGrantError, InvalidRequestError, InvalidScopeError, UnauthorizedClientError
from authlib.oauth2.rfc6749.grants import BaseGrant, TokenEndpointMixin
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc.core import audit, security, store
from authsvc.core.actors import of_client, of_trusted_issuer, of_user
from authsvc.core.database import db, now
from authsvc.core.models import JWT_BEARER_GRANT_TYPE, Application, TrustedIssuer, User
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import access_tokens, keys, profile, resources, trusted_issuers
from authsvc.oauth.clients import CONFIDENTIAL_AUTH_METHODS
from authsvc.oauth.grants import resolve_scope
from authsvc.oauth.parameters import grant_state
from authsvc.oauth.resources import InvalidTargetError

TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
TYP = "oauth-id-jag+jwt"
# An ID-JAG we issue lives this long, within AUTHSVC_ID_JAG_MAX_LIFETIME.
LIFETIME = 300


@dataclass(frozen=True)
class Asked:
    """An ID-JAG a client asked for: for ``user`` (its ID token's), to present at ``audience``."""

    user: User | None
    audience: str | None
    scope: str | None
    auth_time: int | None
    # The resources at the audience it is for (RFC 8707 names), as asked.
    resources: list[str]


def issue(client: Application, asked: Asked) -> dict[str, Any]:
    """The token exchange's answer with a signed ID-JAG; audited (``token.id_jag_issued``), not stored."""
    domain = current_domain()
    audience = asked.audience
    if not audience:
        raise InvalidRequestError("An ID-JAG needs an 'audience': the issuer of the resource authorisation server.")
    row = trusted_issuers.find(domain, audience)
    if row is None or not row.id_jag_audience:
        raise InvalidTargetError("The audience is not a resource authorisation server this domain issues ID-JAGs for.")
    user = asked.user
    assert user is not None  # noqa: S101 - the ID token's user, checked by the grant
    at = now()
    lifetime = min(LIFETIME, settings().id_jag_max_lifetime)
    claims: dict[str, Any] = {
        "iss": issuer(),
        "sub": str(user.id),
        "aud": audience,
        "client_id": (row.client_ids or {}).get(client.client_id, client.client_id),
        "jti": access_tokens.new_jti(),
        "iat": at,
        "exp": at + lifetime,
        "email": user.email,
    }
    if asked.scope:
        claims["scope"] = asked.scope
    resource = asked.resources
    if resource:
        claims["resource"] = resource[0] if len(resource) == 1 else resource
    if asked.auth_time is not None:
        claims["auth_time"] = asked.auth_time
    alg = profile.id_token_algorithm(client, keys.DEFAULT_ALGORITHM)
    assertion = keys.sign(domain, claims, alg, typ=TYP)
    audit.record(
        "token.id_jag_issued",
        domain_id=domain.id,
        actor=of_client(client.client_id),
        target=f"user:{user.id}",
        details={"client_id": client.client_id, "audience": audience, "scope": asked.scope, "jti": claims["jti"]},
    )
    return {"access_token": assertion, "issued_token_type": TOKEN_TYPE, "token_type": "N_A", "expires_in": lifetime}


class JwtBearerGrant(BaseGrant, TokenEndpointMixin):
    """RFC 7523 2.1 for ID-JAGs: an enterprise's assertion that its user may use this client here."""

    GRANT_TYPE = JWT_BEARER_GRANT_TYPE
    TOKEN_ENDPOINT_AUTH_METHODS = CONFIDENTIAL_AUTH_METHODS

    def validate_token_request(self) -> None:
        client: Application = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError("This application may not use the JWT bearer grant.")
        assertion = self.request.payload.data.get("assertion")
        if not assertion:
            raise InvalidRequestError("Missing 'assertion' in request.")
        verified = self._verified(assertion)
        claims = verified.claims
        if claims.get("client_id") != client.client_id:
            raise InvalidGrantError("The ID-JAG was issued for another client (client_id).")
        resource = claims.get("resource")
        named = [resource] if isinstance(resource, str) else resource if isinstance(resource, list) else []
        asked = [*self.request.requested_resources, *[uri for uri in named if isinstance(uri, str)]]
        state = grant_state()
        state.audience = resources.check(list(dict.fromkeys(asked)), client.resources or []) if asked else None
        state.resources = state.audience
        granted = claims.get("scope")
        scope = resolve_scope(client, self.request.payload.scope or (granted if isinstance(granted, str) else None))
        if isinstance(granted, str) and not set(scope.split()) <= set(granted.split()):
            raise InvalidScopeError("A requested scope is not one the ID-JAG grants.")
        domain = current_domain()
        user = trusted_issuers.user_of(domain, claims)
        new_email = None
        if user is None and verified.issuer.create_users:
            new_email = trusted_issuers.email_to_create(domain, claims)
        if user is None and new_email is None:
            raise InvalidGrantError("The ID-JAG names no enabled user of this domain.")
        # One use: its jti is kept until it expires (with the clock skew allowed); claimed last, once everything
        # else holds.
        jti = claims.get("jti")
        key = f"id-jag:{security.digest(str(claims['iss']))}:{jti}"
        if (
            not isinstance(jti, str)
            or not jti
            or not store.claim_once(key, int(claims["exp"]) + trusted_issuers.LEEWAY - now() + 1)
        ):
            raise InvalidGrantError("The ID-JAG has no jti or was already used.")
        if user is None:
            user = _created_user(verified.issuer, cast(str, new_email))
        self.request.client = client
        self.request.user = user
        self.request.scope = scope

    def _verified(self, assertion: str) -> trusted_issuers.Verified:
        try:
            unverified = trusted_issuers.unverified_claims(assertion)
            row = trusted_issuers.find(current_domain(), str(unverified.get("iss")))
            if row is None or not row.id_jag:
                raise InvalidGrantError("The ID-JAG's issuer is not one this domain trusts for ID-JAGs.")
            verified = trusted_issuers.verify(row, assertion)
        except trusted_issuers.Refused as exc:
            raise InvalidGrantError(str(exc)) from None
        if verified.header.get("typ") != TYP:
            raise InvalidGrantError(f"The assertion is not an ID-JAG (typ {TYP}).")
        claims = verified.claims
        audience = claims.get("aud")
        if issuer() not in ([audience] if isinstance(audience, str) else audience or []):
            raise InvalidGrantError("The ID-JAG is for another authorisation server (aud).")
        iat = claims.get("iat")
        if not isinstance(iat, int) or claims["exp"] - iat > settings().id_jag_max_lifetime:
            raise InvalidGrantError("The ID-JAG has no iat or lives longer than this server accepts.")
        return verified

    def create_token_response(self) -> tuple[int, dict, list]:
        token = self.generate_token(user=self.request.user, scope=self.request.scope, include_refresh_token=False)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


def _created_user(row: TrustedIssuer, email: str) -> User:
    """A new user of the issuer's domain for ``email``, which the issuer vouches for: no password (the user signs
    in at the enterprise's identity provider), audited as created by the issuer (``user.created``, a webhook event
    like every creation). A concurrent grant that created it first wins; its user is this one."""
    user = User(domain_id=row.domain_id, email=email, name="", email_verified=True)
    db.session.add(user)
    try:
        db.session.flush()
    except IntegrityError:
        db.session.rollback()
        found = db.session.scalar(select(User).where(User.domain_id == row.domain_id, User.email == email))
        if found is None or found.disabled:
            raise InvalidGrantError("The ID-JAG names no enabled user of this domain.") from None
        return found
    audit.record(
        "user.created",
        domain_id=row.domain_id,
        actor=of_trusted_issuer(row.id),
        target=of_user(user.id),
        details={"after": user.as_json(), "via": "id_jag", "issuer": row.issuer},
    )
    return user
