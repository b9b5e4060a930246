"""The consent page's form."""

from __future__ import annotations

from wtforms import (
    SubmitField,
)

from authsvc.web.forms import PageForm


class ConsentForm(PageForm):
    approve = SubmitField("Allow")
    deny = SubmitField("Deny")
