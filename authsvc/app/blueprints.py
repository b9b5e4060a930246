"""Every surface's blueprint, registered on the app.

A package's main blueprint has the package's name ("auth", "account", "oauth", "sso", "api",
"scim", "ssf", "openapi"), so an endpoint's name says which package answers it. The others are named for
what they serve: "admin_api" and "console" (``authsvc.admin``), "mfa" and "mfa_settings"
(``authsvc.auth.mfa``), "end_session", "device" and "well_known" (``authsvc.oauth``), "protected_resource"
(``authsvc.api``: RFC 9728), "saml" and
"resource_tokens" (``authsvc.sso``), "health" (``authsvc.web``) and "front_door" (``authsvc.app``).
docs/development.md has the table of packages, blueprints and URL prefixes.
"""

from __future__ import annotations

from flask import Flask

from authsvc import openapi
from authsvc.account import views as account
from authsvc.admin import api as admin_api
from authsvc.admin import branding_api, consent_texts_api
from authsvc.admin.console import views as console
from authsvc.api import protected_resource
from authsvc.api import views as api
from authsvc.app import front_door
from authsvc.auth import passkey_signin
from authsvc.auth import views as auth
from authsvc.auth.mfa import settings as mfa_settings
from authsvc.auth.mfa import views as mfa
from authsvc.oauth import device_page, end_session, metadata
from authsvc.oauth import views as oauth
from authsvc.scim import views as scim
from authsvc.ssf import views as ssf
from authsvc.sso import saml_views
from authsvc.sso import views as sso
from authsvc.web import branding, health


def init_app(app: Flask) -> None:
    app.register_blueprint(auth.bp)
    app.register_blueprint(account.bp)
    app.register_blueprint(account.me.bp)
    app.register_blueprint(mfa.bp)
    app.register_blueprint(mfa_settings.bp)
    app.register_blueprint(passkey_signin.bp)
    app.register_blueprint(oauth.bp)
    app.register_blueprint(device_page.bp)
    app.register_blueprint(end_session.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(sso.resource_tokens)
    app.register_blueprint(openapi.bp)
    app.register_blueprint(sso.bp)
    app.register_blueprint(saml_views.bp)
    app.register_blueprint(metadata.bp)
    app.register_blueprint(protected_resource.bp)
    app.register_blueprint(admin_api.bp)
    app.register_blueprint(branding_api.bp)
    app.register_blueprint(consent_texts_api.bp)
    app.register_blueprint(console.bp)
    app.register_blueprint(health.bp)
    app.register_blueprint(branding.bp)
    health.show_servers_to(app, admin_api.system_admin_presented)
    app.register_blueprint(front_door.bp)
    app.register_blueprint(scim.bp)
    app.register_blueprint(ssf.bp)
