"""The service's settings as one typed, frozen object on the app: ``settings().access_token_ttl``.

app.config stays the source (Flask and its extensions read their keys there, and a caller's
config goes on top of the environment's): ``init_app`` checks it and builds ``Settings``
(config/settings.py) from it, and a later change to app.config (a test's) builds a new one.
"""

from __future__ import annotations

from typing import Any

from flask import Config as FlaskConfig
from flask import Flask, current_app

from config.settings import Settings

EXTENSION = "authsvc.settings"


class Config(FlaskConfig):
    """app.config, counting its changes, so that ``settings()`` sees a value set after the start."""

    changes = 0

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.changes += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.changes += 1

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.changes += 1

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.changes += 1
        return super().setdefault(key, default)

    def pop(self, key: str, *default: Any) -> Any:
        self.changes += 1
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self.changes += 1


def init_app(app: Flask) -> None:
    """Check app.config and keep its Settings on the app: a missing or mistyped setting stops the start."""
    app.extensions[EXTENSION] = (_changes(app), Settings.from_config(app.config))


def settings(app: Flask | None = None) -> Settings:
    """The settings of ``app`` (default: the current one)."""
    app = app or current_app._get_current_object()  # type: ignore[attr-defined]
    changes, built = app.extensions[EXTENSION]
    if changes != _changes(app):
        init_app(app)
        changes, built = app.extensions[EXTENSION]
    return built  # type: ignore[no-any-return]


def _changes(app: Flask) -> int:
    return getattr(app.config, "changes", 0)
