"""The state of an unfinished single sign-on, kept in the store (authsvc.core.store) between the start and the
callback (OIDC / OAuth 2.0) or the ACS (SAML 2.0): single use, ``AUTHSVC_SSO_FLOW_TTL``.

The key is the digest of the flow's ``state`` (the RelayState in SAML). Each flow is also listed under the
address that started it (its holder), with its expiry, so that a limit can bound how many one address holds;
claiming a flow takes it off the list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from authsvc.core import clock, security, store

KIND = "sso"


@dataclass(frozen=True)
class Flow:
    """What both protocols keep: which provider, where to go next, which browser, whom to link."""

    provider: str
    continue_url: str
    browser: str  # the digest of the secret the starting browser keeps in a cookie
    link_user: int | None  # the signed-in user who asked to link, else None (a sign-in)
    holder: str | None = None  # the address that started it; set by ``save``

    def _common(self) -> dict[str, Any]:
        # The stored names ("continue"): records written before a deploy are still read after it.
        return {
            "provider": self.provider,
            "continue": self.continue_url,
            "browser": self.browser,
            "link_user": self.link_user,
        }

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class OAuthFlow(Flow):
    """An OIDC / OAuth 2.0 flow: our PKCE verifier, the nonce (OIDC only) and the callback URL we sent."""

    verifier: str = ""
    nonce: str | None = None
    callback: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**self._common(), "verifier": self.verifier, "nonce": self.nonce, "callback": self.callback}


@dataclass(frozen=True)
class SamlFlow(Flow):
    """A SAML 2.0 flow: the id of our AuthnRequest, which the response must answer."""

    request_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**self._common(), "protocol": "saml", "request_id": self.request_id}


def from_json(data: dict[str, Any] | None) -> Flow | None:
    """The flow a stored record holds: SAML when it says so, else OIDC / OAuth 2.0."""
    if data is None:
        return None
    common = {
        "provider": data["provider"],
        "continue_url": data["continue"],
        "browser": data["browser"],
        "link_user": data.get("link_user"),
        "holder": data.get("holder"),
    }
    if data.get("protocol") == "saml":
        return SamlFlow(**common, request_id=data["request_id"])
    return OAuthFlow(**common, verifier=data["verifier"], nonce=data.get("nonce"), callback=data["callback"])


def _held_key(holder: str) -> str:
    return f"{store.PREFIX}sso-held:{holder}"


def save(state: str, flow: Flow, ttl: int, holder: str) -> None:
    """Keep ``flow`` under ``state`` for ``ttl`` seconds, listed under ``holder`` (one round trip)."""
    digest, held = security.digest(state), _held_key(holder)
    pipe = store.client().pipeline()
    pipe.set(store.key(KIND, state), json.dumps({**flow.to_json(), "holder": holder}), ex=ttl)
    pipe.zadd(held, {digest: clock.time() + ttl})
    pipe.expire(held, ttl)
    pipe.execute()


def peek(state: str) -> Flow | None:
    """The flow, left in place (SAML's ACS reads it before the response proves it answers the flow)."""
    return from_json(store.get(KIND, state))


def claim(state: str) -> Flow | None:
    """Take the flow, once, and give its holder's place back."""
    flow = from_json(store.take(KIND, state))
    if flow is not None and flow.holder:
        store.client().zrem(_held_key(flow.holder), security.digest(state))
    return flow


def held(holder: str) -> tuple[int, float]:
    """How many unexpired flows ``holder`` started and nobody claimed, and when the first expires."""
    key = _held_key(holder)
    pipe = store.client().pipeline()
    pipe.zremrangebyscore(key, "-inf", clock.time())
    pipe.zcard(key)
    pipe.zrange(key, 0, 0, withscores=True)
    _, count, first = pipe.execute()
    return count, first[0][1] if first else clock.time()
