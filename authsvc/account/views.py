"""The account's blueprint with every route on it: a forgotten password, a verified address, invitations
and sign-up."""

from authsvc.account import invitation_pages, password, signup, verification
from authsvc.account.blueprint import bp

__all__ = ["bp", "invitation_pages", "password", "signup", "verification"]
