"""The forms of the account's pages."""

from __future__ import annotations

from wtforms import PasswordField, SubmitField
from wtforms.validators import DataRequired, EqualTo

from authsvc.web.forms import PageForm, email_field


class ForgotForm(PageForm):
    email = email_field()


class ResetForm(PageForm):
    # The password rules are the service's (validation.password), applied by the view.
    password = PasswordField("New password", validators=[DataRequired()])
    confirm = PasswordField(
        "The new password again", validators=[DataRequired(), EqualTo("password", message="The passwords differ.")]
    )


class ConfirmForm(PageForm):
    """A button and the CSRF token: what a link opened by a mail scanner cannot press."""

    submit = SubmitField("Confirm")
