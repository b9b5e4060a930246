"""The state of an unfinished single sign-on, kept in the store (authsvc.core.store) between the start and the
callback (OIDC / OAuth 2.0) or the ACS (SAML 2.0): single use, ``AUTHSVC_SSO_FLOW_TTL``.

The key is the digest of the flow's ``state`` (the RelayState in SAML). Each flow is also listed under the
address that started it (its holder), with its expiry, so that a limit can bound how many one address holds;
claiming a flow takes it off the list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from authsvc.core import clock, records, security, store

KIND = "sso"


@dataclass(frozen=True)
class Flow:
    """What both protocols keep: which provider, where to go next, which browser, whom to link."""

    provider: str
    # Stored as "continue": records written before a deploy are still read after it.
    continue_url: str = field(metadata=records.stored_as("continue"))
    browser: str  # the digest of the secret the starting browser keeps in a cookie
    link_user: int | None  # the signed-in user who asked to link, else None (a sign-in)
    holder: str | None = None  # the address that started it; set by ``save``


@dataclass(frozen=True)
class OAuthFlow(Flow):
    """An OIDC / OAuth 2.0 flow: our PKCE verifier, the nonce (OIDC only) and the callback URL we sent."""

    verifier: str = ""
    nonce: str | None = None
    callback: str = ""


@dataclass(frozen=True)
class SamlFlow(Flow):
    """A SAML 2.0 flow: the id of our AuthnRequest, which the response must answer."""

    request_id: str = ""
    # What tells a stored SAML flow from an OIDC one (whose records have no protocol).
    protocol: str = field(default="saml", init=False)


def from_json(data: dict[str, Any] | None) -> Flow | None:
    """The flow a stored record holds: SAML when it says so, else OIDC / OAuth 2.0."""
    if data is None:
        return None
    return records.load(SamlFlow if data.get("protocol") == "saml" else OAuthFlow, data)


def _held_key(holder: str) -> str:
    return f"{store.PREFIX}sso-held:{holder}"


def save(state: str, flow: Flow, ttl: int, holder: str) -> None:
    """Keep ``flow`` under ``state`` for ``ttl`` seconds, listed under ``holder`` (one round trip)."""
    digest, held = security.digest(state), _held_key(holder)
    pipe = store.client().pipeline()
    pipe.set(store.key(KIND, state), json.dumps(records.dump(replace(flow, holder=holder))), ex=ttl)
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
