"""The account's blueprints with every route on them: a forgotten password, a verified address, invitations,
sign-up, the account page (``page``) and its API for single-page apps (``me``)."""

from authsvc.account import invitation_pages, language, me, page, password, signup, verification
from authsvc.account.blueprint import bp

__all__ = ["bp", "invitation_pages", "language", "me", "page", "password", "signup", "verification"]
