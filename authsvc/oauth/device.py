"""The device authorisation grant (RFC 8628): the device's two endpoints and the codes in Redis.

A device asks ``/auth/oauth/device_authorization`` for a device code and a
user code, shows the user code, and polls the token endpoint with the device
code while a person approves or denies it at ``/auth/device`` (authsvc.oauth.device_page).

Redis keys, each named by a digest of the secret it stands for:
- ``device:<d>``: the request (client, scope, domain, expiry). It outlives its
  ``expires_at`` by ``GRACE`` seconds, so that a late poll is answered
  ``expired_token`` rather than as an unknown code.
- ``device_poll:<d>``: the last poll's time and the interval the device must keep.
- ``device_decision:<d>``: the person's answer, written once, with when it was given (milliseconds): an
  approval is void once the user's sessions are invalidated after it (sessions.granted_since_invalidation).
- ``device_user:<u>``: the user code (normalised) to the device code's digest, until expiry.
A successful poll deletes ``device:<d>`` with GETDEL: a device code gives tokens once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from authlib.oauth2.rfc6749 import AccessDeniedError, InvalidGrantError, OAuth2Request, UnauthorizedClientError
from authlib.oauth2.rfc8628 import (
    AuthorizationPendingError,
    DeviceAuthorizationEndpoint,
    DeviceCodeGrant,
    ExpiredTokenError,
    SlowDownError,
)

from authsvc.auth import sessions
from authsvc.core import clock, security, store
from authsvc.core.database import db
from authsvc.core.models import DEVICE_CODE_GRANT_TYPE, Application, User
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import resources
from authsvc.oauth.clients import AUTH_METHODS
from authsvc.oauth.grants import WITHDRAWN, resolve_scope
from authsvc.oauth.parameters import grant_state

# How long past its expiry a device code is still known, to be answered expired_token.
GRACE = 300
# RFC 8628 3.5: after slow_down the device waits this much longer, from then on.
SLOW_DOWN_STEP = 5
VERIFICATION_PATH = "/auth/device"


def normalise_user_code(value: str) -> str:
    """A user code as typed: case and dashes (or spaces) do not matter; only ASCII letters and digits count."""
    return "".join(c for c in value.upper() if c.isascii() and c.isalnum())


def _key(kind: str, digest: str) -> str:
    return f"{store.PREFIX}{kind}:{digest}"


@dataclass
class DevicePending:
    """A device code's request, as the verification page reads it by its user code."""

    digest: str
    client_id: str
    scope: str
    domain_id: int


def pending_by_user_code(user_code: str) -> DevicePending | None:
    """The unexpired, undecided request a user code stands for, or None."""
    code = normalise_user_code(user_code)
    if len(code) != 8:
        return None
    redis = store.client()
    # A client made with decode_responses: strings, or None for a key that is not there.
    digest = cast(str | None, redis.get(_key("device_user", security.digest(code))))
    raw = cast(str | None, redis.get(_key("device", digest))) if digest else None
    if digest is None or raw is None:
        return None
    data = json.loads(raw)
    if data["expires_at"] <= clock.time() or redis.exists(_key("device_decision", digest)):
        return None
    return DevicePending(digest, data["client_id"], data["scope"], data["domain_id"])


def decide(pending: DevicePending, user: User, approved: bool, session_created: int) -> bool:
    """Record the person's answer; False when the request was answered already (once only).

    The answer is dated by ``session_created``, when the session it was given through began, as a code
    is: an invalidation of the user's sessions that lands while this request runs voids it all the same.
    """
    redis = store.client()
    ttl = cast(int, redis.ttl(_key("device", pending.digest)))
    if ttl <= 0:
        return False
    answer = json.dumps({"user": user.id, "approved": approved, "at": session_created})
    return bool(redis.set(_key("device_decision", pending.digest), answer, nx=True, ex=ttl))


class DeviceAuthorization(DeviceAuthorizationEndpoint):
    """``POST /auth/oauth/device_authorization``: a device code and a user code for a --device application."""

    CLIENT_AUTH_METHODS = AUTH_METHODS

    @property
    def EXPIRES_IN(self) -> int:  # noqa: N802 - Authlib's attribute name
        return settings().device_code_ttl

    @property
    def INTERVAL(self) -> int:  # noqa: N802 - Authlib's attribute name
        return settings().device_interval

    def authenticate_client(self, request: OAuth2Request) -> Application:
        client: Application = super().authenticate_client(request)
        if not client.check_grant_type(DEVICE_CODE_GRANT_TYPE):
            raise UnauthorizedClientError("This application may not use the device grant; create it with --device.")
        # Authlib asks only the server, which checks nothing; the scope is the application's.
        resolve_scope(client, request.payload.scope)
        resources.at_authorization(request, client)
        return client

    def generate_device_code(self) -> str:
        return security.new_secret()

    def generate_user_code(self) -> str:
        # Authlib's: 8 of BCDFGHJKLMNPQRSTVWXZ as XXXX-XXXX. Reserved with SET NX, so that two
        # pending requests never share a user code (one person would answer for another's screen).
        redis = store.client()
        while True:
            code = super().generate_user_code()
            key = _key("device_user", security.digest(normalise_user_code(code)))
            if redis.set(key, "", nx=True, ex=self.EXPIRES_IN):
                return code

    def get_verification_uri(self) -> str:
        return issuer() + VERIFICATION_PATH

    def save_device_credential(self, client_id: str, scope: str | None, data: dict[str, Any]) -> None:
        client = self.server.query_client(client_id)
        digest = security.digest(data["device_code"])
        record = {
            "client_id": client_id,
            "scope": resolve_scope(client, scope),
            "domain_id": client.domain_id,
            "expires_at": clock.now() + self.EXPIRES_IN,
            # Authlib passes save_device_credential no request: what authenticate_client found.
            "resources": grant_state().resources,
        }
        poll = {"last": 0, "interval": self.INTERVAL}
        pipe = store.client().pipeline()
        pipe.set(_key("device", digest), json.dumps(record), ex=self.EXPIRES_IN + GRACE)
        pipe.set(_key("device_poll", digest), json.dumps(poll), ex=self.EXPIRES_IN + GRACE)
        user_code = security.digest(normalise_user_code(data["user_code"]))
        pipe.set(_key("device_user", user_code), digest, ex=self.EXPIRES_IN)
        pipe.execute()


@dataclass
class DeviceCredential:
    """A device code's request, as the token endpoint reads it (Authlib's credential interface)."""

    digest: str
    client_id: str
    scope: str
    domain_id: int
    expires_at: int
    # Read with the request in one round trip: the person's answer and the last poll (JSON, or None).
    decision: str | None = None
    poll: str | None = None
    # RFC 8707: the resources the device authorisation request named, if any.
    resources: list[str] | None = None

    def get_client_id(self) -> str:
        return self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_user_code(self) -> str:
        # The decision is found by the device code's digest, not by the user code.
        return self.digest

    def is_expired(self) -> bool:
        return self.expires_at <= clock.time()


# A pending device's polls are most of this grant's requests. Authlib checks the characters of a
# description passed to an error each time (some 150 Python calls); these fixed ones are class attributes.
class _SlowDown(SlowDownError):
    description = "Polling too often: wait 5 s longer between requests from now on."


class _Pending(AuthorizationPendingError):
    description = "The user has not answered yet; poll again after the interval."


class DeviceGrant(DeviceCodeGrant):
    """Polling the token endpoint with ``grant_type=urn:ietf:params:oauth:grant-type:device_code``."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_token_request(self) -> None:
        super().validate_token_request()
        resources.at_token_endpoint(self.request, self.request.client, self.request.credential.resources)

    def query_device_credential(self, device_code: str) -> DeviceCredential:
        digest = security.digest(device_code)
        # One round trip for the three keys a poll reads (the request, the answer, the last poll).
        raw, decision, poll = cast(
            list[str | None],
            store.client().mget([_key("device", digest), _key("device_decision", digest), _key("device_poll", digest)]),
        )
        if raw is None:
            # Authlib would say invalid_request; the code is a grant that is unknown or used.
            raise InvalidGrantError("The device code is unknown, used, or expired long ago.")
        data = json.loads(raw)
        if data["domain_id"] != current_domain().id:
            raise InvalidGrantError("The device code is unknown, used, or expired long ago.")
        return DeviceCredential(
            digest,
            data["client_id"],
            data["scope"],
            data["domain_id"],
            data["expires_at"],
            decision,
            poll,
            data.get("resources"),
        )

    def query_user_grant(self, user_code: str) -> tuple[User | None, bool] | None:
        # Called with get_user_code(), which is the device code's digest.
        answer = _answer(cast(str | None, store.client().get(_key("device_decision", user_code))))
        return None if answer is None else (answer.user, answer.approved)

    def should_slow_down(self, credential: DeviceCredential) -> bool:
        """RFC 8628 3.5: a poll sooner than the interval gets slow_down, and the interval grows by 5 s."""
        redis = store.client()
        key = _key("device_poll", credential.digest)
        now = clock.time()
        poll = json.loads(credential.poll or '{"last": 0, "interval": 5}')
        too_soon = now - poll["last"] < poll["interval"]
        if too_soon:
            poll["interval"] += SLOW_DOWN_STEP
        poll["last"] = now
        redis.set(key, json.dumps(poll), keepttl=True)
        return too_soon

    def validate_device_credential(self, credential: DeviceCredential) -> User:
        if credential.is_expired():
            raise ExpiredTokenError("The device code expired; start again at the device authorisation endpoint.")
        answer = _answer(credential.decision)
        if answer is None:
            if self.should_slow_down(credential):
                raise _SlowDown()
            raise _Pending()
        user = answer.user
        if not answer.approved:
            raise AccessDeniedError("The user denied the request.")
        if user is None or user.disabled or user.domain_id != credential.domain_id:
            raise InvalidGrantError("The account that approved the request is disabled or gone.")
        # As for a code: a new password, a revocation, a disable or the end of every session since the
        # approval voids it (docs/security.md#ending-what-a-user-holds).
        if not sessions.granted_since_invalidation(user, answer.at):
            raise InvalidGrantError(WITHDRAWN)
        # Single use: of two polls that raced here, only one deletes the record and gets tokens.
        if store.client().getdel(_key("device", credential.digest)) is None:
            raise InvalidGrantError("The device code has already been used.")
        return user


@dataclass
class _Answer:
    """The person's answer to a device code, as ``decide`` stored it."""

    user: User | None
    approved: bool
    # When it was given (milliseconds); an answer stored without it counts as older than any invalidation.
    at: int


def _answer(raw: str | None) -> _Answer | None:
    if raw is None:
        return None
    answer = json.loads(raw)
    return _Answer(db.session.get(User, answer["user"]), answer["approved"], answer.get("at", 0))
