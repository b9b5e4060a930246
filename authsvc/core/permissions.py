"""What a user or credential may do in PlaceOS: the support and admin bits.

The integer value is part of the contract: inspect's ``u.p`` claim and the
admin rules read it, so the bits stay 1 (support) and 2 (admin).
"""

from __future__ import annotations

import enum


class Permission(enum.IntFlag):
    """PlaceOS permission bits; ``Permission(0)`` is a plain user."""

    SUPPORT = 1
    ADMIN = 2

    @classmethod
    def of(cls, *, support: bool, admin: bool) -> Permission:
        """The bits of a user with these two flags (as stored on the user row)."""
        bits = cls(0)
        if support:
            bits |= cls.SUPPORT
        if admin:
            bits |= cls.ADMIN
        return bits


# Either bit: what the admin API and the console need at least (support reads, admin changes).
SUPPORT_OR_ADMIN = Permission.SUPPORT | Permission.ADMIN
