"""HTML forms, CSRF-protected by Flask-WTF (token in a signed cookie): the base of every page's form."""

from __future__ import annotations

from typing import Any

from flask import request
from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import EmailField
from wtforms.validators import DataRequired, Length, Regexp


class PageForm(FlaskForm):
    """A form of our pages: what a browser posts is a form body, and only that is read."""

    class Meta:
        def wrap_formdata(self, form: FlaskForm, formdata: Any) -> Any:
            # Flask-WTF would take a JSON body as the form's data too: its values
            # need not be strings and broke the validators (a 500), and bad JSON
            # was a JSON error instead of the page. A JSON body is no submission.
            # (formdata without getlist is Flask-WTF's "read the request" default.)
            if request.is_json and formdata is not None and not hasattr(formdata, "getlist"):
                formdata = request.form if form.is_submitted() else None
            return super().wrap_formdata(form, formdata)  # type: ignore[misc]  # Flask-WTF is untyped


def email_field() -> EmailField:
    """The e-mail address a person types to name their account (the account's rule is validation.account_name)."""
    return EmailField(
        _l("E-mail address"),
        validators=[
            DataRequired(),
            Length(max=320),
            # No address has them, and PostgreSQL refuses NUL in a query parameter.
            Regexp(r"[^\x00-\x1f\x7f]*\Z", message=_l("The e-mail address contains control characters.")),
        ],
    )
