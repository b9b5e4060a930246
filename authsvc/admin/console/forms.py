"""The console's forms (/auth/admin/), CSRF-protected by Flask-WTF."""

from __future__ import annotations

from typing import Any

from wtforms import (
    BooleanField,
    EmailField,
    IntegerField,
    PasswordField,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
    TextAreaField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.validators import Length, NumberRange, Optional, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

from authsvc.core import clock
from authsvc.core.models import API_KEY_PERMISSIONS
from authsvc.web.forms import PageForm
from authsvc.webhooks.events import TYPES

# The console (/auth/admin/). These forms check only CSRF and the shape of the
# input; the rules (valid URIs, known scopes, unique e-mails) are decided once,
# by the verbs of authsvc.admin, whose messages the pages show per field.


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class ApplicationForm(PageForm):
    name = StringField("Name", validators=[Length(max=200)])
    redirect_uris = TextAreaField("Redirect URIs", description="One per line, matched exactly.")
    scopes = StringField("Scopes", description="Space separated.")
    consent = BooleanField("Ask users for consent before issuing a code")
    require_pkce = BooleanField("Require PKCE with S256 (unchecked: legacy mode, for clients without PKCE)")
    allow_plain_pkce = BooleanField("Also accept PKCE's plain method (not recommended)")
    device = BooleanField("Allow the device grant (RFC 8628): screens and kiosks show a code that a person approves")
    require_pushed_authorization_requests = BooleanField(
        "Require pushed authorisation requests (PAR, RFC 9126): the browser carries only a request_uri"
    )
    introspect = BooleanField(
        "Resource server: may introspect other applications' tokens (RFC 7662; confidential applications only)"
    )
    dpop_bound_access_tokens = BooleanField(
        "Require DPoP (RFC 9449): every token is bound to a key the application proves it holds"
    )
    access_token_format = SelectField(
        "Access token format",
        choices=[SelectChoice("opaque", "Opaque (the default)"), SelectChoice("jwt", "JWT (RFC 9068)")],
        validate_choice=False,  # the verb decides, and says why
    )
    resources = TextAreaField(
        "Resources (RFC 8707)",
        description="Absolute URIs its tokens may be for (their audience); one per line.",
    )
    # OpenID Connect.
    id_token_signed_response_alg = SelectField(
        "ID token signature",
        choices=[SelectChoice("", "RS256 (the default)"), SelectChoice("RS256"), SelectChoice("ES256")],
        validate_choice=False,  # the verb decides, and says why
    )
    post_logout_redirect_uris = TextAreaField(
        "Post-logout redirect URIs", description="Where sign-out may send users back; one per line, matched exactly."
    )
    backchannel_logout_uri = StringField(
        "Back-channel logout URI",
        validators=[Length(max=2000)],
        description="Receives a Logout Token by POST when a user's session ends (https).",
    )
    # Token exchange (RFC 8693; docs/token-exchange.md): the admin API's ``token_exchange`` policy.
    token_exchange = BooleanField("May exchange tokens (RFC 8693; confidential applications only)")
    token_exchange_impersonation = BooleanField("Impersonation: without an actor token, a token without act")
    token_exchange_refresh_tokens = BooleanField("An exchanged token comes with a refresh token")
    submit = SubmitField("Save")

    def validate_token_exchange(self, field: BooleanField) -> None:
        if not field.data and (self.token_exchange_impersonation.data or self.token_exchange_refresh_tokens.data):
            raise ValidationError("Impersonation and refresh tokens are options of token exchange: allow it too.")

    def token_exchange_policy(self) -> dict[str, bool] | None:
        """The admin API's ``token_exchange``: null (may not), or its two options."""
        if not self.token_exchange.data:
            return None
        return {
            "impersonation": bool(self.token_exchange_impersonation.data),
            "refresh_tokens": bool(self.token_exchange_refresh_tokens.data),
        }

    def values(self) -> dict[str, Any]:
        """The verbs' input: redirect URIs as a list, checkboxes as booleans, empty settings as null."""
        return {
            "name": self.name.data or "",
            "redirect_uris": _lines(self.redirect_uris.data),
            "scopes": self.scopes.data or "",
            "consent": bool(self.consent.data),
            "require_pkce": bool(self.require_pkce.data),
            "allow_plain_pkce": bool(self.allow_plain_pkce.data),
            "device": bool(self.device.data),
            "introspect": bool(self.introspect.data),
            "dpop_bound_access_tokens": bool(self.dpop_bound_access_tokens.data),
            "require_pushed_authorization_requests": bool(self.require_pushed_authorization_requests.data),
            "access_token_format": self.access_token_format.data or "opaque",
            "resources": _lines(self.resources.data) or None,
            "id_token_signed_response_alg": self.id_token_signed_response_alg.data or None,
            "post_logout_redirect_uris": _lines(self.post_logout_redirect_uris.data) or None,
            "backchannel_logout_uri": (self.backchannel_logout_uri.data or "").strip() or None,
            "token_exchange": self.token_exchange_policy(),
        }


class NewApplicationForm(ApplicationForm):
    confidential = BooleanField("Confidential: the application keeps a client secret (a server, not a browser app)")
    service_account = StringField(
        "Service account (user id)",
        validators=[Length(max=20)],
        description="Confidential only: client_credentials tokens act as this service account.",
    )
    submit = SubmitField("Create application")

    def values(self) -> dict[str, Any]:
        values = super().values() | {"confidential": bool(self.confidential.data)}
        if (self.service_account.data or "").strip():
            values["service_account"] = self.service_account.data.strip()
        return values


class RotateKeyForm(PageForm):
    alg = SelectField("Algorithm", choices=["RS256", "ES256"])
    submit = SubmitField("Rotate key")


class ConfirmForm(PageForm):
    """The second step of a destructive action: only the CSRF token and a button."""

    submit = SubmitField("Confirm")


class UserForm(PageForm):
    email = EmailField("E-mail address", validators=[Length(max=320)])
    name = StringField("Name", validators=[Length(max=200)])
    service_account = BooleanField("Service account (may use the password grant)")
    admin = BooleanField("Admin of this domain")
    support = BooleanField("Support (reads this domain in the console)")
    submit = SubmitField("Save")

    def values(self) -> dict[str, Any]:
        return {
            "email": self.email.data or "",
            "name": self.name.data or "",
            "service_account": bool(self.service_account.data),
            "admin": bool(self.admin.data),
            "support": bool(self.support.data),
        }


class NewUserForm(UserForm):
    password = PasswordField(
        "Password", validators=[Length(max=1024)], description="Leave empty for a user who signs in with SSO only."
    )
    submit = SubmitField("Create user")

    def values(self) -> dict[str, Any]:
        # No password at all is allowed; an empty one is not a password.
        return super().values() | ({"password": self.password.data} if self.password.data else {})


class PasswordForm(PageForm):
    password = PasswordField("New password", validators=[Length(max=1024)])
    submit = SubmitField("Set password")

    def values(self) -> dict[str, Any]:
        return {"password": self.password.data or ""}


class ApiKeyForm(PageForm):
    user = EmailField("User (e-mail)", validators=[Length(max=320)], description="The key acts as this user.")
    name = StringField("Name", validators=[Length(max=200)])
    scopes = StringField("Scopes", description="Space separated.")
    permission = SelectField("Permission", choices=list(API_KEY_PERMISSIONS), default="user")
    expires_in_days = IntegerField(
        "Expires in (days)",
        validators=[Optional(), NumberRange(min=1, max=3650)],
        description="Leave empty for a key that does not expire.",
    )
    submit = SubmitField("Create API key")

    def values(self) -> dict[str, Any]:
        values = {
            "user": self.user.data or "",
            "name": self.name.data or "",
            "scopes": self.scopes.data or "",
            "permission": self.permission.data,
        }
        if self.expires_in_days.data:
            values["expires_at"] = clock.now() + self.expires_in_days.data * 86400
        return values


class RegistrationTokenForm(PageForm):
    name = StringField("Name", validators=[Length(max=200)], description="Whom it is for, for your records.")
    expires_in_hours = IntegerField(
        "Expires in (hours)", validators=[Optional(), NumberRange(min=1, max=8760)], default=24
    )
    max_uses = IntegerField("Registrations allowed", validators=[Optional(), NumberRange(min=1, max=1000)], default=1)
    submit = SubmitField("Create token")

    def values(self) -> dict[str, Any]:
        return {
            "name": self.name.data or "",
            "expires_in": (self.expires_in_hours.data or 24) * 3600,
            "max_uses": self.max_uses.data or 1,
        }


class ResourceServerForm(PageForm):
    uri = StringField(
        "URI",
        validators=[Length(max=2000)],
        description="As clients send it in resource, e.g. https://mcp.example.com/mcp.",
    )
    name = StringField("Name", validators=[Length(max=200)], description="What the consent page calls it.")
    scopes = StringField(
        "Scopes",
        validators=[Length(max=2000)],
        description="Space-separated scopes of the domain a token for it may carry.",
    )
    submit = SubmitField("Register resource")

    def values(self) -> dict[str, Any]:
        return {"uri": self.uri.data or "", "name": self.name.data or "", "scopes": self.scopes.data or ""}


class TrustIssuerForm(PageForm):
    """Trust another issuer's tokens (docs/token-exchange.md#trusted-issuers); the same issuer again changes it."""

    issuer = StringField(
        "Issuer",
        validators=[Length(max=2000)],
        description="Its tokens' iss, compared exactly, e.g. https://idp.example.",
    )
    jwks_uri = StringField(
        "JWKS URI", validators=[Length(max=2000)], description="Where its signing keys are (https, a public address)."
    )
    subject_tokens = BooleanField("Accept its JWTs as subject and actor tokens of a token exchange (RFC 8693)")
    id_jag = BooleanField("Accept its ID-JAGs at the JWT bearer grant (RFC 7523): a company's identity provider")
    create_users = BooleanField("With ID-JAGs: an ID-JAG for an e-mail no user has creates that user")
    submit = SubmitField("Trust issuer")

    def validate_subject_tokens(self, field: BooleanField) -> None:
        if not (field.data or self.id_jag.data):
            raise ValidationError("Say what to accept: its subject tokens, its ID-JAGs or both.")

    def values(self) -> dict[str, Any]:
        return {
            "issuer": (self.issuer.data or "").strip(),
            "jwks_uri": (self.jwks_uri.data or "").strip(),
            "subject_tokens": bool(self.subject_tokens.data),
            "id_jag": bool(self.id_jag.data),
            "create_users": bool(self.create_users.data),
        }


class IdJagAudienceForm(PageForm):
    """A resource authorisation server the domain issues ID-JAGs for, and its names of our applications."""

    audience = StringField(
        "Resource authorisation server",
        validators=[Length(max=2000)],
        description="Its issuer identifier: the ID-JAG's aud, e.g. https://tool-as.example.",
    )
    client_ids = TextAreaField(
        "Client ids there",
        description="One per line, OURS=THEIRS: an application's client_id at that server (the ID-JAG's client_id); "
        "an application not named is known there by its own.",
    )
    submit = SubmitField("Add audience")

    def validate_client_ids(self, field: TextAreaField) -> None:
        if not all("=" in line for line in _lines(field.data)):
            raise ValidationError("Write each as OURS=THEIRS, one per line.")

    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = {"issuer": (self.audience.data or "").strip(), "id_jag_audience": True}
        pairs = [line.split("=", 1) for line in _lines(self.client_ids.data)]
        if pairs:
            values["client_ids"] = {ours.strip(): theirs.strip() for ours, theirs in pairs}
        return values


class WebhookForm(PageForm):
    url = StringField(
        "URL",
        validators=[Length(max=2000)],
        description="Where each event is POSTed: https to a public address.",
    )
    events = SelectMultipleField(
        "Event types",
        choices=[SelectChoice(kind) for kind in TYPES],
        option_widget=CheckboxInput(),
        widget=ListWidget(prefix_label=False),
        validate_choice=False,  # the verb decides, and says why
    )
    submit = SubmitField("Create webhook")

    def values(self) -> dict[str, Any]:
        return {"url": self.url.data or "", "events": list(self.events.data or [])}


class MicrosoftSsoForm(PageForm):
    name = StringField("Name", validators=[Length(max=200)], description="Shown on the sign-in button.")
    client_id = StringField("Application (client) id", validators=[Length(max=255)])
    client_secret = PasswordField("Client secret", validators=[Length(max=2000)])
    tenant = StringField("Tenant", validators=[Length(max=100)], description="Tenant id or domain, or organizations.")
    submit = SubmitField("Create provider")

    def values(self) -> dict[str, Any]:
        return {
            "preset": "microsoft",
            "name": self.name.data or "",
            "client_id": self.client_id.data or "",
            "client_secret": self.client_secret.data or "",
            "tenant": (self.tenant.data or "").strip(),
        }


class LdapDirectoryForm(PageForm):
    name = StringField("Name", validators=[Length(max=200)], description="For admins; users never see it.")
    url = StringField(
        "URL", validators=[Length(max=500)], description="ldaps://dc1.acme.example:636, or ldap://…:389 with StartTLS."
    )
    starttls = BooleanField("Use StartTLS (with ldap://)")
    bind_dn = StringField(
        "Bind DN", validators=[Length(max=500)], description="The service account that searches for users."
    )
    bind_password = PasswordField("Bind password", validators=[Length(max=1000)])
    base_dn = StringField(
        "Base DN", validators=[Length(max=500)], description="Where users are searched for (subtree)."
    )
    user_filter = StringField(
        "User filter", validators=[Length(max=1000)], description="{email} is the escaped address."
    )
    group_attribute = StringField("Group attribute", validators=[Length(max=100)])
    disabled_attribute = StringField(
        "Disabled attribute", validators=[Length(max=100)], description="Optional: its presence disables an entry."
    )
    ca_pem = TextAreaField(
        "CA certificates (PEM)", description="Optional: the CA(s) that sign the directory's certificate."
    )
    enabled = BooleanField("Enabled")
    submit = SubmitField("Save")

    def values(self, *, new: bool) -> dict[str, Any]:
        """The verbs' fields; an empty bind password on an edit keeps the stored one."""
        values: dict[str, Any] = {
            name: (getattr(self, name).data or "").strip()
            for name in ("name", "url", "bind_dn", "base_dn", "user_filter", "group_attribute")
        }
        values |= {"starttls": bool(self.starttls.data), "enabled": bool(self.enabled.data)}
        values |= {name: (getattr(self, name).data or "").strip() or None for name in ("disabled_attribute", "ca_pem")}
        if new or self.bind_password.data:
            values["bind_password"] = self.bind_password.data or ""
        if new:
            values = {k: v for k, v in values.items() if v not in ("", None) or k in ("name", "url", "bind_dn")}
        return values


class SamlSsoForm(PageForm):
    name = StringField("Name", validators=[Length(max=200)], description="Shown on the sign-in button.")
    metadata_url = StringField(
        "IdP metadata URL",
        validators=[Length(max=500)],
        description="Refetched when a day old, so a new IdP signing certificate arrives by itself. Or paste the XML.",
    )
    metadata_xml = TextAreaField("IdP metadata XML", validators=[Length(max=1_000_000)])
    email_attribute = StringField(
        "E-mail attribute",
        validators=[Length(max=255)],
        description="Default: mail, email, or the emailaddress claim URI.",
    )
    name_attribute = StringField("Name attribute", validators=[Length(max=255)])
    groups_attribute = StringField(
        "Groups attribute", validators=[Length(max=255)], description="Its values become the user's groups."
    )
    allow_unsolicited = BooleanField("Accept IdP-initiated sign-ins (not bound to a browser: leave off unless needed)")
    submit = SubmitField("Create provider")

    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = {"protocol": "saml", "name": self.name.data or ""}
        for name in ("metadata_url", "metadata_xml", "email_attribute", "name_attribute", "groups_attribute"):
            value = (getattr(self, name).data or "").strip()
            if value:
                values[name] = value
        values["allow_unsolicited"] = bool(self.allow_unsolicited.data)
        return values
