"""The account-linking page's form."""

from __future__ import annotations

from wtforms import (
    SubmitField,
)

from authsvc.web.forms import PageForm


class LinkForm(PageForm):
    """Linking a signed-in account to an SSO provider: CSRF and a button."""

    submit = SubmitField("Link")
