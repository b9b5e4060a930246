"""The forms of the account's pages."""

from __future__ import annotations

from wtforms import EmailField, PasswordField, SubmitField
from wtforms.validators import DataRequired, EqualTo, Length, Regexp

from authsvc.web.forms import PageForm


class ForgotForm(PageForm):
    email = EmailField(
        "E-mail address",
        validators=[
            DataRequired(),
            Length(max=320),
            Regexp(r"[^\x00-\x1f\x7f]*\Z", message="The e-mail address contains control characters."),
        ],
    )


class ResetForm(PageForm):
    # The password rules are the service's (validation.password), applied by the view.
    password = PasswordField("New password", validators=[DataRequired()])
    confirm = PasswordField(
        "The new password again", validators=[DataRequired(), EqualTo("password", message="The passwords differ.")]
    )


class ConfirmForm(PageForm):
    """A button and the CSRF token: what a link opened by a mail scanner cannot press."""

    submit = SubmitField("Confirm")
