"""The second-factor pages' forms."""

from __future__ import annotations

from wtforms import HiddenField, StringField, SubmitField
from wtforms.validators import DataRequired, Length

from authsvc.web.forms import PageForm


class CodeForm(PageForm):
    """A code from an authenticator app, or a recovery code, for a pending sign-in."""

    mfa_token = HiddenField(validators=[DataRequired(), Length(max=100)])
    code = StringField("Code", validators=[DataRequired(), Length(max=40)])


class EnrolForm(PageForm):
    """The first code of a new authenticator app (``mfa_token`` when enrolling during sign-in)."""

    mfa_token = HiddenField(validators=[Length(max=100)])
    code = StringField("Code from the app", validators=[DataRequired(), Length(max=40)])


class ActionForm(PageForm):
    """A bare CSRF-protected button: regenerate recovery codes, remove a factor."""

    submit = SubmitField("Confirm")
