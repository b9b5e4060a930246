"""The consent page's form and the device verification page's."""

from __future__ import annotations

from wtforms import HiddenField, StringField, SubmitField
from wtforms.validators import Length

from authsvc.web.forms import PageForm


class ConsentForm(PageForm):
    approve = SubmitField("Allow")
    deny = SubmitField("Deny")


class DeviceCodeForm(PageForm):
    """The user code a device shows, typed in (case and dashes do not matter)."""

    user_code = StringField("Code", validators=[Length(max=20)])
    submit = SubmitField("Continue")


class DeviceDecisionForm(PageForm):
    user_code = HiddenField()
    approve = SubmitField("Allow")
    deny = SubmitField("Deny")


class EndSessionForm(PageForm):
    """Sign out here? The relying party's parameters ride along, to be checked again."""

    id_token_hint = HiddenField(validators=[Length(max=8000)])
    client_id = HiddenField(validators=[Length(max=200)])
    post_logout_redirect_uri = HiddenField(validators=[Length(max=2000)])
    state = HiddenField(validators=[Length(max=2000)])
    confirm = SubmitField("Sign out")
    cancel = SubmitField("Stay signed in")
