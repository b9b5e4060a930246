"""authsvc: an OAuth 2.0 and OpenID Connect authorisation service; access tokens opaque or JWTs (RFC 9068)."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

__all__ = ["create_app"]

# Set by config/gunicorn.py: a web worker keeps the in-process store's snapshot (a flask command does not).
WEB_WORKER_ENV = "AUTHSVC_WEB_WORKER"
# Whether this process built an app already (create_app: the first build imports the service).
_BUILT: list[bool] = []


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Build the application: settings from the environment, then ``config`` on top."""
    # Read (and refused) first, before anything heavy is imported: a start that a setting stops
    # stops in a fraction of a second (config.settings needs nothing of the service).
    from config.settings import from_environment

    environment = from_environment()
    if _BUILT:
        return _build(environment, config)
    # The first build in a process imports about a thousand modules and makes the objects they keep for
    # the life of the process: the cyclic collector's passes over them, while it runs and at the first
    # collections after it, free nothing and cost a seventh of a ``flask`` command's CPU. So none while it
    # runs; then what is there goes to the oldest generation unscanned (``gc.freeze`` then ``gc.unfreeze``),
    # where a collection that found it alive would have put it. A later build (a test's) changes nothing
    # of the collector's: its garbage, and the apps it replaces, are collected as usual.
    _BUILT.append(True)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build(environment, config)
    finally:
        gc.freeze()
        gc.unfreeze()
        if collecting:
            gc.enable()


def _build(environment: dict[str, Any], config: dict[str, Any] | None) -> Flask:
    # Imported here, not at the top: ``import authsvc.web.logs`` (gunicorn's log
    # config) or ``authsvc.core.models`` (Alembic) must not load the whole service.
    from flask import Flask

    from authsvc import cli
    from authsvc.account import devices as account_devices
    from authsvc.account import notices as account_notices
    from authsvc.account import password as account_password
    from authsvc.account import signup as account_signup
    from authsvc.api import fastpath, protected_resource
    from authsvc.app import blueprints, client_failures, errors, limits
    from authsvc.core import budget, database, request_state, security, store
    from authsvc.core import settings as typed_settings
    from authsvc.core.database import db
    from authsvc.core.readers import pool as readers
    from authsvc.mail import messages as mail
    from authsvc.oauth import server
    from authsvc.outbox import sender as outbox
    from authsvc.ssf import init_app as init_ssf
    from authsvc.web import deployment, i18n, logs, metrics, overload, pages, traces
    from authsvc.webhooks import init_app as init_webhooks

    app = Flask(__name__, instance_relative_config=False)
    # app.config counts its changes, so that the typed settings follow one made after the start.
    app.config = typed_settings.Config(app.config.root_path, app.config)
    app.config.update(environment)
    if config:
        app.config.update(config)
    # Checked now, typed from here on: a missing or mistyped setting stops the start.
    typed_settings.init_app(app)
    settings = typed_settings.settings(app)
    # Flask's own (signed) session cookie only carries the forms' CSRF token;
    # sign-in sessions are the ``user`` cookie, kept in Redis.
    app.config.update(
        SESSION_COOKIE_NAME="authsvc_csrf",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE=settings.cookie_samesite,
        SESSION_COOKIE_SECURE=settings.cookie_secure,
    )
    if settings.database_url.startswith("postgresql"):
        # A database that does not answer fails the request (503) instead of
        # hanging it: bounded connecting, statements, TCP, and pool waits.
        options = app.config.setdefault("SQLALCHEMY_ENGINE_OPTIONS", {})
        connect_args = options.setdefault("connect_args", {})
        for name, value in database.connect_settings(settings).items():
            connect_args.setdefault(name, value)
        options.setdefault("pool_timeout", settings.database_timeout)
    app.json.sort_keys = False  # type: ignore[attr-defined]  # Flask's DefaultJSONProvider has it

    # Each request's typed state starts empty, before any hook writes to it.
    request_state.init_app(app)
    # First in, so that the request id and the clock are there for every
    # answer, including a 429 from the limiter's own before_request.
    logs.init_app(app)
    metrics.init_app(app)
    # Around Flask only (nothing of OpenTelemetry is imported unless OTEL_ variables ask): what the
    # middlewares below answer themselves, inspect's fast path first, is not traced and pays nothing.
    traces.init_app(app)
    # Before deployment: its ProxyFix must wrap the fast path too.
    fastpath.init_app(app)
    # Around the fast path and Flask: one database budget per request (authsvc.core.budget).
    budgeting = budget.DatabaseBudget(app.wsgi_app, settings.database_timeout)
    app.wsgi_app = budgeting  # type: ignore[method-assign]
    # In front of both: a request that waited too long for a worker costs it nothing more.
    overload.init_app(app)
    deployment.init_app(app)
    security.init_app(app)
    db.init_app(app)
    database.end_sessions_quietly(app)
    with app.app_context():
        for engine in db.engines.values():
            database.init_app(app, engine)
            readers.init_app(app, engine)
    store.init_app(app)
    if os.environ.get(WEB_WORKER_ENV) and settings.store_snapshot and store.is_embedded(app):
        # Only a web worker: a flask command beside the running service would write back a stale copy.
        from authsvc.core import store_snapshot

        store_snapshot.keep(store.client_of(app), Path(settings.store_snapshot))
    server.init_app(app)
    errors.init_app(app)
    # Pages and e-mails in the person's language (before anything renders one).
    i18n.init_app(app)
    pages.init_app(app)
    blueprints.init_app(app)
    # Each declared on its view (authsvc.core.policy), so after the blueprints that bring them.
    budgeting.paths = budget.declared_paths(app)
    limits.init_app(app)
    client_failures.init_app(app)
    # After every hook of the API's blueprints: the RFC 9728 challenge is the last word on their 401s.
    protected_resource.init_app(app)
    # What the outbox's senders do: e-mail (where it can be sent), and what e-mail answers.
    outbox.init_app(app)
    mail.init_app(app)
    init_webhooks(app)
    init_ssf(app)
    account_password.init_app(app)
    account_signup.init_app(app)
    account_notices.init_app(app)
    account_devices.init_app(app)
    cli.init_app(app)
    # The SQL spans, on the engines made above.
    traces.init_database(app)
    return app
