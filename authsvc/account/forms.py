"""The forms of the account's pages."""

from __future__ import annotations

from wtforms import PasswordField, StringField, SubmitField
from wtforms.validators import DataRequired, EqualTo, Length

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


class PasswordForm(PageForm):
    """A first password: an invitation accepted with one (the service's rules are applied by the view)."""

    password = PasswordField("Password", validators=[DataRequired()])
    confirm = PasswordField(
        "The password again", validators=[DataRequired(), EqualTo("password", message="The passwords differ.")]
    )


class SignupForm(PasswordForm):
    name = StringField("Your name", validators=[Length(max=200)])
    email = email_field()


class NameForm(PageForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=200)])


class EmailChangeForm(PageForm):
    email = email_field()


class PasswordChangeForm(PageForm):
    # The checks (current password, the password rules, the two new ones alike) are authsvc.account.changes'.
    current = PasswordField("Current password")
    password = PasswordField("New password")
    confirm = PasswordField("The new password again")
