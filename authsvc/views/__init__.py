"""One blueprint per surface."""

from flask import Flask


def init_app(app: Flask) -> None:
    from authsvc.views import admin_api, api, auth, console, health, oauth, sso, well_known

    app.register_blueprint(auth.bp)
    app.register_blueprint(oauth.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(sso.bp)
    app.register_blueprint(well_known.bp)
    app.register_blueprint(admin_api.bp)
    app.register_blueprint(console.bp)
    app.register_blueprint(health.bp)
