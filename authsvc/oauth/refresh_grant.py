"""The refresh grant (RFC 6749 6) with rotation and reuse detection (RFC 9700 4.14).

Every refresh token is good for one exchange: the statement that writes its
successor claims it (authsvc.tokens.rows), so of two exchanges at once
exactly one writes. A spent token presented again is judged a reuse, and
under FAPI 2.0 the refresh token is kept rather than rotated: both writes are
authsvc.tokens.refresh's; this grant reads the request and says what to issue.
"""

from __future__ import annotations

import logging
from typing import Any

from authlib.oauth2.rfc6749 import InvalidGrantError, grants

from authsvc.auth import sessions
from authsvc.core.database import now
from authsvc.core.models import Token, User
from authsvc.core.tenancy import current_domain
from authsvc.oauth import dpop, profile, resources
from authsvc.oauth.clients import AUTH_METHODS
from authsvc.oauth.parameters import grant_state
from authsvc.tokens import lookups, refresh
from authsvc.tokens.issue import Issued, Lineage, Outcome, from_stored

log = logging.getLogger(__name__)


class ClaimLost(InvalidGrantError):
    """Another exchange claimed the refresh token between this one's read and its write, which wrote nothing.

    Raised by this grant only (save_token), from the outcome the tokens package answered with.
    """

    def __init__(self) -> None:
        super().__init__("The refresh token has already been used.")


class RefreshTokenGrant(grants.RefreshTokenGrant):
    """Refresh with rotation: every refresh token is good for one exchange."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        token = lookups.refresh_token_with_user(refresh_token)
        if token is None or token.revoked_at is not None or token.application.domain_id != current_domain().id:
            return None
        if token.refresh_expires_at is None or now() >= token.refresh_expires_at:
            return None
        if refresh.judge_reuse(token) is not None:
            return None
        # Before the token is claimed: a refresh by another key spends nothing.
        dpop.check_refresh_binding(token, grant_state().dpop)
        return token

    def validate_token_request(self) -> None:
        super().validate_token_request()
        token: Token = self.request.refresh_token
        # Before the claim: a refused resource leaves the refresh token as it was.
        resources.at_token_endpoint(self.request, self.request.client, from_stored(token.resources))
        keep = profile.fapi2(self.request.client)
        # FAPI 2.0 5.3.2.1 item 9: no rotation (docs/fapi.md#refresh-tokens).
        if keep and not refresh.keep(token):
            raise InvalidGrantError("The refresh token was revoked.")
        grant_state().lineage = Lineage(
            family=token.family,
            grant_expires_at=token.grant_expires_at,
            # Claimed by the statement that saves its successor (authsvc.tokens.rows): of two concurrent
            # exchanges exactly one updates the row; the other writes nothing (save_token refuses it).
            claim=None if keep else token.id,
            auth_time=token.auth_time,
            amr=token.amr,
            sid=token.sid,
        )
        grant_state().act = token.act

    def save_token(self, token: dict[str, Any]) -> Issued:
        issued: Issued = super().save_token(token)
        if issued.outcome is not Outcome.CLAIM_LOST:
            return issued
        # Claimed by another exchange since it was read (nothing was written): judged as a reuse.
        refresh.judge_lost_claim(self.request.refresh_token)
        raise ClaimLost()

    def issue_token(self, user: User, refresh_token: Token) -> dict:
        # Under the profile the client keeps the refresh token it has: none new (RFC 6749 6 allows either).
        return self.generate_token(
            user=user,
            scope=self.request.payload.scope or refresh_token.get_scope(),
            include_refresh_token=not profile.fapi2(self.request.client),
        )

    def authenticate_user(self, refresh_token: Token) -> User | None:
        user = refresh_token.user
        # A directory user's refresh asks the directory again, as a session does (deprovisioning).
        return None if user is None or user.disabled or not sessions.directory_allows(user) else user

    def revoke_old_credential(self, refresh_token: Token) -> None:
        # Claimed by the statement that saved its successor (save_token).
        return None
