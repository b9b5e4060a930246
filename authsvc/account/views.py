"""The account's blueprints with every route on them: a forgotten password, a verified address, the account
page (``page``) and its API for single-page apps (``me``)."""

from authsvc.account import me, page, password, verification
from authsvc.account.blueprint import bp

__all__ = ["bp", "me", "page", "password", "verification"]
