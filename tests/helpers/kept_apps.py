"""The apps a test process keeps from test to test (the ``make_app`` and ``app`` fixtures of tests/conftest.py)."""

from __future__ import annotations

from authsvc import create_app
from authsvc.core import store
from authsvc.core.database import db
from authsvc.core.store import is_embedded as store_is_embedded


class KeptApps:
    """A worker's apps, kept from test to test: building one (its URL map, its engine, whose cache of
    compiled statements starts cold) was a third of a simple test's CPU. An app is kept only while a
    test leaves it as it was made: one whose settings, routes, hooks or extensions a test changed is
    dropped, and the next test that asks gets a new one. The database and the store are emptied
    before each test (the ``app`` fixture), and the rate limits' counters live in the store."""

    KEPT = 3

    def __init__(self) -> None:
        self.kept: dict[tuple, tuple] = {}  # by settings, least recently used first

    def get(self, config: dict, handed: set, fresh: bool):
        """The kept app for these settings; a new one when this test has it already (two instances)."""
        key = tuple(sorted((name, repr(value)) for name, value in config.items()))
        if fresh or key in handed:
            return create_app(config)
        handed.add(key)
        if key not in self.kept:
            app = create_app(config)
            self.kept[key] = (app, self._shape(app))
            while len(self.kept) > self.KEPT:
                # The least recently used goes, with its connections (PostgreSQL has a hundred).
                self.dispose(self.kept.pop(next(iter(self.kept)))[0])
            return app
        self.kept[key] = self.kept.pop(key)  # now the most recently used
        app = self.kept[key][0]
        # As a new app has them (Flask's class defaults): the ``client`` fixture sets an https client class.
        for name in CLIENT_CLASSES:
            vars(app).pop(name, None)
        if store_is_embedded(app):
            # A new app's in-process store and rate counters start empty: so do a kept one's.
            with app.app_context():
                store.client().flushdb()
                app.extensions["authsvc.limiter"].reset()
        return app

    @staticmethod
    def _shape(app) -> tuple:
        return (
            dict(app.config),
            len(list(app.url_map.iter_rules())),
            {name: list(funcs) for name, funcs in app.before_request_funcs.items()},
            {name: list(funcs) for name, funcs in app.after_request_funcs.items()},
            {name: extension for name, extension in app.extensions.items() if name not in CACHES},
            app.wsgi_app,
            app.json,
            set(vars(app)) - CLIENT_CLASSES - CACHES,
        )

    def release(self, app) -> None:
        for key, (kept, shape) in list(self.kept.items()):
            if kept is app:
                if self._shape(app) == shape:
                    with app.app_context():
                        db.session.remove()
                    return
                del self.kept[key]
        self.dispose(app)

    @staticmethod
    def dispose(app) -> None:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


CLIENT_CLASSES = {"test_client_class", "test_cli_runner_class"}
# What an app fills in lazily as it serves, and is no change of its own: the typed settings (rebuilt
# when app.config changes, which the shape compares), Flask's cached Jinja loader and environment.
CACHES = {"authsvc.settings", "jinja_loader", "jinja_env"}
