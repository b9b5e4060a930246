"""The grants: password and client credentials (service accounts), authorization code with PKCE.

The refresh grant, with rotation and reuse detection, is authsvc.oauth.refresh_grant.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from authlib.oauth2.rfc6749 import (
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    UnauthorizedClientError,
    grants,
)
from authlib.oauth2.rfc7636 import CodeChallenge

from authsvc.auth import sessions, signin
from authsvc.core import security
from authsvc.core.models import Application, User
from authsvc.core.readers import entities
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain
from authsvc.oauth import clients, codes, oidc_request, profile, pushed, resources
from authsvc.oauth.clients import AUTH_METHODS, CONFIDENTIAL_AUTH_METHODS
from authsvc.oauth.oidc import SignInClaims
from authsvc.oauth.parameters import MergedRequest, grant_state
from authsvc.tokens import spent_codes
from authsvc.tokens.issue import Issued, Lineage, Outcome, new_family

log = logging.getLogger(__name__)

# The answer to a code or device approval granted before the user's sessions were invalidated.
WITHDRAWN = "The user's sessions ended after this was granted (a new password, a revocation); authorise again."


def resolve_scope(client: Application, requested: str | None) -> str:
    """The granted scope: ``public`` when none is asked; every asked scope must be the client's."""
    asked = list(dict.fromkeys((requested or "public").split()))
    if not asked or not set(asked) <= set(client.scope_list):
        raise InvalidScopeError("Every requested scope must be one configured on the application.")
    return " ".join(asked)


@dataclass
class AuthorizationCode(SignInClaims):
    """A claimed code, as read back from Redis."""

    user_id: int
    client_id: int
    redirect_uri: str | None
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    family: str
    # OpenID Connect: the sign-in behind the code, for its ID token (Authlib's AuthorizationCodeMixin).
    nonce: str | None = None
    auth_time: int | None = None
    amr: list[str] | None = None
    sid: str | None = None
    # RFC 9449 10: the thumbprint of the key the exchange must prove (dpop_jkt at authorisation, or PAR's proof).
    dpop_jkt: str | None = None
    # RFC 8707: the resources the authorisation request named; None when it named none.
    resources: list[str] | None = None
    # When the code was issued (milliseconds), for sessions.granted_since_invalidation.
    issued_ms: int = 0

    def get_redirect_uri(self) -> str | None:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
    """For service accounts only (docs/platform.md#password-grant); JSON or form body."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_token_request(self) -> None:
        client = self.authenticate_token_endpoint_client()
        # A dynamically registered client has only the grants it registered (never this one).
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError("This application may not use the password grant.")
        params = self.request.form
        for name in ("username", "password"):
            if not params.get(name):
                raise InvalidRequestError(f"Missing '{name}' in request.")
        domain = current_domain()
        user = signin.authenticate(domain, params["username"], params["password"], via="password_grant")
        if user is None:
            raise InvalidGrantError("The username or password is incorrect.")
        if user.disabled:
            signin.refused(domain, user, "disabled", "password_grant")
            raise InvalidGrantError("The account is disabled.")
        if not user.service_account:
            signin.refused(domain, user, "not_a_service_account", "password_grant")
            raise InvalidGrantError("The password grant is only for service accounts; use the authorization code flow.")
        self.request.client = client
        self.request.user = user
        self.request.scope = resolve_scope(client, params.get("scope"))
        resources.at_token_endpoint(self.request, client, None)

    def create_token_response(self) -> tuple[int, dict, list]:
        token = self.generate_token(user=self.request.user, scope=self.request.scope)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class ClientCredentialsGrant(grants.ClientCredentialsGrant):
    """RFC 6749 4.4: a confidential application's tokens, acting as the service account it is bound to."""

    # Authlib's default is Basic only; the body secret and a client assertion are as good here as elsewhere.
    TOKEN_ENDPOINT_AUTH_METHODS = CONFIDENTIAL_AUTH_METHODS

    def validate_token_request(self) -> None:
        clients.with_service_account()  # read below: it comes with the client
        # Authenticates the client (public ones cannot: invalid_client) and checks
        # check_grant_type (an unbound application: unauthorized_client).
        super().validate_token_request()
        client: Application = self.request.client
        user = client.service_account
        # Never a system admin's tokens (no longer a service account; refused here too, in case a row says both).
        if (
            user is None
            or user.disabled
            or not user.service_account
            or user.system_admin
            or user.domain_id != client.domain_id
        ):
            raise UnauthorizedClientError("The application's service account is disabled or not a service account.")
        self.request.user = user
        self.request.scope = resolve_scope(client, self.request.payload.scope)
        resources.at_token_endpoint(self.request, client, None)

    def create_token_response(self) -> tuple[int, dict, list]:
        # Authlib's own passes the raw scope and no user; RFC 6749 4.4.3: no refresh token.
        token = self.generate_token(user=self.request.user, scope=self.request.scope, include_refresh_token=False)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_requested_scope(self) -> None:
        # At the authorisation endpoint (Authlib redirects what is raised here to the client).
        self.request.scope = resolve_scope(self.request.client, self.request.payload.scope)
        resources.at_authorization(self.request, self.request.client)

    def validate_token_request(self) -> None:
        # The code is spent by now, as for any other error of the exchange (a wrong redirect_uri).
        super().validate_token_request()
        code: AuthorizationCode = self.request.authorization_code
        resources.at_token_endpoint(self.request, self.request.client, code.resources)

    def save_authorization_code(self, code: str, request: MergedRequest) -> None:
        # A pushed request gives one code (RFC 9126 4), and a sign-in note one answer: spent before the code exists.
        pushed.spend(request)
        oidc_request.spend_sign_in_note(self)
        data = request.payload.data
        session = sessions.current_session(current_domain())
        issued = codes.IssuedCode(
            user=request.user.id,
            client=request.client.id,
            redirect_uri=data.get("redirect_uri"),
            scope=request.scope,
            code_challenge=data.get("code_challenge"),
            code_challenge_method=data.get("code_challenge_method"),
            nonce=data.get("nonce"),
            auth_time=session.auth_time if session else None,
            amr=session.amr if session else None,
            sid=session.sid if session else None,
            dpop_jkt=data.get("dpop_jkt"),
            resources=grant_state().resources,
            # Dated by the session's start, not by now: a revocation that lands between this request's check
            # of the session and this save must still void the code (no session: none today; fail closed).
            issued_ms=session.created if session else 0,
            fapi2=profile.fapi2(request.client),
        )
        codes.save(code, issued, profile.code_ttl(request.client, settings().code_ttl))

    def generate_authorization_code(self) -> str:
        # Authlib's default draws each of 48 characters with its own urandom call.
        return security.new_secret()

    def query_authorization_code(self, code: str, client: Application) -> AuthorizationCode | None:
        # RFC 6749 4.1.2: a code used twice revokes what it produced, whatever the timing.
        # The replay is recorded before the family is revoked, and the exchange that
        # spent the code checks for it after committing its tokens (save_token): if
        # that check ran before the record, its commit came before this revocation,
        # which then finds the tokens.
        family = new_family()
        spent_ttl = settings().spent_code_ttl
        issued = codes.claim(code, family, spent_ttl)
        if issued is None:
            spent_family = codes.spent_family(code)
            if spent_family:
                codes.record_replay(code, spent_ttl)
                spent_codes.revoke_replayed(client, spent_family)
            return None
        if issued.client != client.id:
            return None
        if profile.fapi2(client) and not issued.fapi2:
            raise InvalidGrantError(profile.ISSUED_BEFORE_SWITCH)
        grant_state().lineage = Lineage(
            family=family, spent_code=code, auth_time=issued.auth_time, amr=issued.amr, sid=issued.sid
        )
        return AuthorizationCode(
            user_id=issued.user,
            client_id=issued.client,
            redirect_uri=issued.redirect_uri,
            scope=issued.scope,
            code_challenge=issued.code_challenge,
            code_challenge_method=issued.code_challenge_method,
            family=family,
            nonce=issued.nonce,
            auth_time=issued.auth_time,
            amr=issued.amr,
            sid=issued.sid,
            dpop_jkt=issued.dpop_jkt,
            resources=issued.resources,
            issued_ms=issued.issued_ms,
        )

    def save_token(self, token: dict[str, Any]) -> Issued:
        issued: Issued = super().save_token(token)
        if issued.outcome is Outcome.CODE_SPENT:  # a replay: what the earlier exchange produced is revoked
            raise InvalidGrantError("The authorization code was already used.")
        if issued.outcome is Outcome.GONE:
            raise InvalidGrantError("The user or application of this authorization code no longer exists.")
        code = grant_state().lineage.spent_code
        if code is not None and codes.replayed(code):
            # A replay raced this exchange and may have revoked before these tokens were committed.
            spent_codes.revoke_replayed(self.request.client, issued.family)
        return issued

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        # Already gone: claiming it deleted it.
        return None

    def authenticate_user(self, authorization_code: AuthorizationCode) -> User | None:
        # On a reader: the exchange's one write then runs in autocommit (authsvc.tokens.rows).
        user = entities.user(authorization_code.user_id)
        if user is None or user.disabled or user.domain_id != current_domain().id:
            return None
        # A password change, a revocation, a disable or the end of every session since the code was
        # issued voids it, as it ended the session that granted it (docs/security.md#ending-what-a-user-holds).
        if not sessions.granted_since_invalidation(user, authorization_code.issued_ms):
            raise InvalidGrantError(WITHDRAWN)
        return user


class PKCE(CodeChallenge):
    """RFC 7636 as RFC 9700 2.1.1 has it: S256; plain only where the application allows it.

    An application that requires PKCE (every public one, unless created in the
    legacy mode) must name its method: RFC 7636 would take an omitted method
    as plain, which such an application would then have accepted silently.
    """

    def validate_code_challenge(self, grant: AuthorizationCodeGrant, redirect_uri: str) -> None:
        super().validate_code_challenge(grant, redirect_uri)
        client: Application = grant.request.client
        data = grant.request.payload.data
        problem = pkce_problem(
            data.get("code_challenge"),
            data.get("code_challenge_method"),
            require_pkce=client.require_pkce,
            allow_plain=client.allow_plain_pkce,
        )
        if problem:
            raise InvalidRequestError(problem)


def pkce_problem(challenge: str | None, method: str | None, *, require_pkce: bool, allow_plain: bool) -> str | None:
    """Why an authorisation request's PKCE parameters do not do for its application (PKCE's class above);
    None when they do. Authlib has already checked the challenge's form and the method's name."""
    if not challenge:
        return "This application requires PKCE: send 'code_challenge' with S256." if require_pkce else None
    if method is None and require_pkce:
        return "This application requires 'code_challenge_method': send S256."
    # RFC 7636 4.3: an omitted method is plain.
    if (method or PKCE.DEFAULT_CODE_CHALLENGE_METHOD) == "plain" and not allow_plain:
        return "'code_challenge_method' must be S256: this application does not allow plain."
    return None
