"""The consent page's form and the device verification page's."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from wtforms import HiddenField, StringField, SubmitField
from wtforms.validators import Length

from authsvc.web.forms import PageForm


class ConsentForm(PageForm):
    approve = SubmitField(_l("Allow"))
    deny = SubmitField(_l("Deny"))


class DeviceCodeForm(PageForm):
    """The user code a device shows, typed in (case and dashes do not matter)."""

    user_code = StringField(_l("Code"), validators=[Length(max=20)])
    submit = SubmitField(_l("Continue"))


class DeviceDecisionForm(PageForm):
    user_code = HiddenField()
    approve = SubmitField(_l("Allow"))
    deny = SubmitField(_l("Deny"))


class EndSessionForm(PageForm):
    """Sign out here? The relying party's parameters ride along, to be checked again."""

    id_token_hint = HiddenField(validators=[Length(max=8000)])
    client_id = HiddenField(validators=[Length(max=200)])
    post_logout_redirect_uri = HiddenField(validators=[Length(max=2000)])
    state = HiddenField(validators=[Length(max=2000)])
    confirm = SubmitField(_l("Sign out"))
    cancel = SubmitField(_l("Stay signed in"))
