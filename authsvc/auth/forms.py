"""The sign-in page's forms."""

from __future__ import annotations

from wtforms import (
    EmailField,
    HiddenField,
    PasswordField,
    SubmitField,
)
from wtforms.validators import DataRequired, Length, Regexp

from authsvc.web.forms import PageForm


class LoginForm(PageForm):
    email = EmailField(
        "E-mail address",
        validators=[
            DataRequired(),
            Length(max=320),
            # No address has them, and PostgreSQL refuses NUL in a query parameter.
            Regexp(r"[^\x00-\x1f\x7f]*\Z", message="The e-mail address contains control characters."),
        ],
    )
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    # "continue" is a Python keyword; the field keeps the query parameter's name on the wire.
    next = HiddenField(name="continue")


class LogoutAllForm(PageForm):
    submit = SubmitField("Sign out everywhere")
