"""The forms of the account's pages."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from wtforms import PasswordField, StringField, SubmitField
from wtforms.validators import DataRequired, EqualTo, Length

from authsvc.web.forms import PageForm, email_field


class ForgotForm(PageForm):
    email = email_field()


class ResetForm(PageForm):
    # The password rules are the service's (validation.password), applied by the view.
    password = PasswordField(_l("New password"), validators=[DataRequired()])
    confirm = PasswordField(
        _l("The new password again"),
        validators=[DataRequired(), EqualTo("password", message=_l("The passwords differ."))],
    )


class ConfirmForm(PageForm):
    """A button and the CSRF token: what a link opened by a mail scanner cannot press."""

    submit = SubmitField(_l("Confirm"))


class PasswordForm(PageForm):
    """A first password: an invitation accepted with one (the service's rules are applied by the view)."""

    password = PasswordField(_l("Password"), validators=[DataRequired()])
    confirm = PasswordField(
        _l("The password again"), validators=[DataRequired(), EqualTo("password", message=_l("The passwords differ."))]
    )


class SignupForm(PasswordForm):
    name = StringField(_l("Your name"), validators=[Length(max=200)])
    email = email_field()


class NameForm(PageForm):
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=200)])


class EmailChangeForm(PageForm):
    email = email_field()


class PasswordChangeForm(PageForm):
    # The checks (current password, the password rules, the two new ones alike) are authsvc.account.changes'.
    current = PasswordField(_l("Current password"))
    password = PasswordField(_l("New password"))
    confirm = PasswordField(_l("The new password again"))
