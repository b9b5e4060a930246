"""The account's blueprint with every route on it: a forgotten password and a verified address."""

from authsvc.account import password, verification
from authsvc.account.blueprint import bp

__all__ = ["bp", "password", "verification"]
