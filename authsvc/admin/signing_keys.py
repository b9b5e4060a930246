"""A domain's signing keys (ID tokens, logout tokens): listed, and rotated by the domain's admins.

Rotating is a domain admin's (or a system admin's) to do: it touches only that
domain's tokens, and tokens signed before stay valid until they expire. Support
users may see the keys' states. Private parts never leave authsvc.oauth.keys.
"""

from __future__ import annotations

from typing import Any

from authsvc.admin.actors import Actor, require_change
from authsvc.admin.schemas import read
from authsvc.core.models import Domain
from authsvc.oauth import keys


def signing_keys(actor: Actor, domain: Domain) -> list[keys.KeyState]:
    """The domain's keys, newest first: ``kid``, ``alg``, ``state`` (current, previous, expired)."""
    # Reading was checked when the domain was looked up (admin.get).
    return keys.key_states(domain)


def rotate_signing_key(actor: Actor, domain: Domain, data: Any) -> keys.KeyState:
    """A new current key of ``alg`` (default RS256); the old one stays published until its tokens expire."""
    from authsvc.admin.schemas.signing_keys import SigningKeyRotation

    require_change(actor, domain.id)
    alg = read(SigningKeyRotation, data).alg
    row = keys.rotate(domain, alg, actor=actor.name)  # audited there: signing_key.rotated
    return keys.key_state(row, row.created_at)
