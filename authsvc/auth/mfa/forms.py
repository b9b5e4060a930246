"""The second-factor pages' forms."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from wtforms import HiddenField, StringField, SubmitField
from wtforms.validators import DataRequired, Length, Optional

from authsvc.web.forms import PageForm


class CodeForm(PageForm):
    """A code from an authenticator app, a recovery code, or a passkey's answer, for a pending sign-in."""

    mfa_token = HiddenField(validators=[DataRequired(), Length(max=100)])
    code = StringField(_l("Code"), validators=[Optional(), Length(max=40)])
    webauthn = HiddenField(validators=[Optional(), Length(max=20000)])


class PasskeyForm(PageForm):
    """A new passkey: its name, and the browser's answer to the registration (filled in by mfa.js)."""

    name = StringField(_l("Name of this passkey"), validators=[Optional(), Length(max=100)])
    webauthn = HiddenField(validators=[DataRequired(), Length(max=20000)])


class EnrolForm(PageForm):
    """The first code of a new authenticator app (``mfa_token`` when enrolling during sign-in)."""

    mfa_token = HiddenField(validators=[Length(max=100)])
    code = StringField(_l("Code from the app"), validators=[DataRequired(), Length(max=40)])


class ActionForm(PageForm):
    """A bare CSRF-protected button: regenerate recovery codes, remove a factor."""

    submit = SubmitField(_l("Confirm"))
