"""Sign-in sessions in the store (authsvc.core.store): the record the ``user`` cookie's id stands for.

The key is ``session:`` and the digest of the session id, so a copy of Redis
holds no usable session; an index (SAML Single Logout's) may hold only the
digest, and ends a session by it (``take_named``).

Each user's sessions are also named in one hash, ``user-sessions:<user id>``
(session digest to start time), written in the same round trip as the record,
so that the account page can list them (``of_user``); an entry whose record has
gone (ended, expired) is dropped when the list is read. ``touch`` notes when a
session was last seen, at most once a ``SEEN_EVERY`` seconds.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, cast

from authsvc.core import clock, records, security, store

KIND = "session"
# How stale a session's ``seen`` may get before a request of it writes it again (one write a minute at most).
SEEN_EVERY = 60
# What of a User-Agent header is kept: enough to tell a browser and a system apart.
AGENT_LENGTH = 300


@dataclass(frozen=True)
class SignInSession:
    """Who signed in, where, when and how.

    ``sid`` is the session's public name in ID tokens (OpenID Connect): never
    the id itself, which the cookie carries as a bearer secret. ``amr`` names
    how the user signed in (``pwd``, ``fed``, ``mfa``...), ``auth_time`` when
    (seconds). ``saml``: a SAML sign-in's NameID and SessionIndex, for Single Logout.
    """

    user: int
    domain: int
    created: int  # milliseconds: compared with the user's sessions_valid_after
    # Records written before sessions had a sid, an amr or an auth_time still read.
    sid: str | None = None
    amr: list[str] | None = None
    auth_time: int = field(default=0, metadata=records.when_missing(lambda data: data["created"] // 1000))
    saml: dict[str, Any] | None = field(default=None, metadata=records.OMIT_NONE)
    # The browser's User-Agent at sign-in and the client address it was last seen from.
    agent: str | None = field(default=None, metadata=records.OMIT_NONE)
    address: str | None = field(default=None, metadata=records.OMIT_NONE)
    seen: int = field(default=0, metadata=records.when_missing(lambda data: data["created"] // 1000))


def _read(data: dict[str, Any] | None) -> SignInSession | None:
    return records.load(SignInSession, data) if data else None


def create(
    user_id: int,
    domain_id: int,
    ttl: int,
    amr: list[str] | None = None,
    auth_time: int | None = None,
    saml: dict[str, Any] | None = None,
    agent: str | None = None,
    address: str | None = None,
) -> str:
    """Start a new session and return its id; ids are never reused.

    ``auth_time``: when the user signed in; now unless given (a session that
    replaces one without a sign-in keeps the old one's). The user's index names
    it in the same round trip (a pipeline).
    """
    session_id = security.new_secret()
    created = clock.now_ms()
    record = SignInSession(
        user=user_id,
        domain=domain_id,
        created=created,
        sid=security.new_secret(),
        amr=amr or ["pwd"],
        auth_time=auth_time if auth_time is not None else created // 1000,
        saml=saml,
        agent=agent[:AGENT_LENGTH] if agent else None,
        address=address,
        seen=created // 1000,
    )
    index = _index(user_id)
    pipe = store.client().pipeline(transaction=False)
    pipe.set(store.key(KIND, session_id), json.dumps(records.dump(record)), ex=ttl)
    pipe.hset(index, security.digest(session_id), str(created))
    # The index lives as long as the user's newest session can.
    pipe.expire(index, ttl)
    pipe.execute()
    return session_id


def get(session_id: str) -> SignInSession | None:
    return _read(store.get(KIND, session_id))


def take(session_id: str) -> SignInSession | None:
    """End the session and return its record (None if it was already gone)."""
    return _read(store.take(KIND, session_id))


def take_named(session_digest: str) -> SignInSession | None:
    """End the session whose id has the digest ``session_digest`` (all an index may hold) and return its record."""
    return _read(store.take_digest(KIND, session_digest))


def _index(user_id: int) -> str:
    return f"{store.PREFIX}user-sessions:{user_id}"


def touch(session_id: str, record: SignInSession, address: str | None) -> None:
    """Note that the session was seen now (from ``address``), if it was last noted ``SEEN_EVERY`` s ago or more;
    its lifetime stays (KEEPTTL). Called by the request that reads the session, at most once a minute each."""
    moment = clock.now()
    if moment - record.seen < SEEN_EVERY:
        return
    seen = dataclasses.replace(record, seen=moment, address=address or record.address)
    # XX: a session ended meanwhile is not brought back.
    store.client().set(store.key(KIND, session_id), json.dumps(records.dump(seen)), keepttl=True, xx=True)


@dataclass(frozen=True)
class Listed:
    """A live session of a user, as the account page lists it: ``digest`` is its id's digest (what ends it)."""

    digest: str
    record: SignInSession


def of_user(user_id: int) -> list[Listed]:
    """``user_id``'s live sessions, newest first; entries of ended sessions leave the index as they are found."""
    index = _index(user_id)
    client = store.client()
    digests = sorted(cast("dict[str, str]", client.hgetall(index)).items(), key=lambda item: -int(item[1]))
    if not digests:
        return []
    raws = cast("list[str | None]", client.mget([f"{store.PREFIX}{KIND}:{digest}" for digest, _ in digests]))
    listed, gone = [], []
    for (digest, _), raw in zip(digests, raws, strict=True):
        record = _read(json.loads(raw)) if raw else None
        if record is None or record.user != user_id:
            gone.append(digest)
        else:
            listed.append(Listed(digest, record))
    if gone:
        client.hdel(index, *gone)
    return listed
