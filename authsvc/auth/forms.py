"""The sign-in page's forms."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from wtforms import (
    HiddenField,
    PasswordField,
    SubmitField,
)
from wtforms.validators import DataRequired, Length

from authsvc.web.forms import PageForm, email_field


class LoginForm(PageForm):
    email = email_field()
    password = PasswordField(_l("Password"), validators=[DataRequired(), Length(max=1024)])
    # "continue" is a Python keyword; the field keeps the query parameter's name on the wire.
    next = HiddenField(name="continue")


class LogoutAllForm(PageForm):
    submit = SubmitField(_l("Sign out everywhere"))


class PasskeySignInForm(PageForm):
    """The sign-in page's passkey: the browser's answer (filled in by passkey-signin.js) and where to go on."""

    webauthn = HiddenField(validators=[DataRequired(), Length(max=20000)])
    next = HiddenField(name="continue")
