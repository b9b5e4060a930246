"""Every surface's blueprint, registered on the app."""

from __future__ import annotations

from flask import Flask

from authsvc.accounts import views as accounts
from authsvc.accounts.mfa import settings as mfa_settings
from authsvc.accounts.mfa import views as mfa
from authsvc.admin import api as admin_api
from authsvc.admin import openapi
from authsvc.admin.console import views as console
from authsvc.credentials import views as credentials
from authsvc.identity import saml_views
from authsvc.identity import views as identity
from authsvc.oauth import device_page, end_session, metadata
from authsvc.oauth import views as oauth
from authsvc.scim import views as scim
from authsvc.web import health


def init_app(app: Flask) -> None:
    app.register_blueprint(accounts.bp)
    app.register_blueprint(mfa.bp)
    app.register_blueprint(mfa_settings.bp)
    app.register_blueprint(oauth.bp)
    app.register_blueprint(device_page.bp)
    app.register_blueprint(end_session.bp)
    app.register_blueprint(credentials.bp)
    app.register_blueprint(identity.resource_tokens)
    app.register_blueprint(openapi.bp)
    app.register_blueprint(identity.bp)
    app.register_blueprint(saml_views.bp)
    app.register_blueprint(metadata.bp)
    app.register_blueprint(admin_api.bp)
    app.register_blueprint(console.bp)
    app.register_blueprint(health.bp)
    app.register_blueprint(scim.bp)
