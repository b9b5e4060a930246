"""The typed settings: docs/configuration.md documents exactly them, and app.config's changes reach them."""

import re
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

from authsvc.core.settings import settings
from config.settings import SERVER_VARIABLES, ConfigError, Settings

ROOT = Path(__file__).resolve().parents[2]


def documented_variables() -> set[str]:
    """The variables named in the first column of docs/configuration.md's table (a row may name several)."""
    names = set()
    for line in (ROOT / "docs" / "configuration.md").read_text().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_setting_is_documented_and_nothing_documented_is_missing():
    settings_variables = {setting.metadata["env"] for setting in fields(Settings)}
    assert settings_variables - documented_variables() == set(), "settings docs/configuration.md does not name"
    assert documented_variables() - settings_variables - set(SERVER_VARIABLES) == set(), "documented, read nowhere"


def test_the_server_variables_are_read_by_gunicorns_config_or_the_settings_module():
    read = (ROOT / "config" / "gunicorn.py").read_text() + (ROOT / "config" / "settings.py").read_text()
    for name in SERVER_VARIABLES:
        assert f'"{name}"' in read or f"'{name}'" in read, name


def test_the_settings_are_typed_and_frozen(app):
    with app.app_context():
        current = settings()
        assert current.access_token_ttl == app.config["AUTHSVC_ACCESS_TOKEN_TTL"]
        assert current.max_body_bytes == app.config["MAX_CONTENT_LENGTH"]
        with pytest.raises(FrozenInstanceError):
            current.access_token_ttl = 1


def test_a_change_to_app_config_after_the_start_reaches_the_settings(make_app):
    app = make_app()
    with app.app_context():
        before = settings()
        app.config["AUTHSVC_ACCESS_TOKEN_TTL"] = 60
        assert settings().access_token_ttl == 60
        assert before.access_token_ttl != 60
        app.config.update(AUTHSVC_CODE_TTL=30)
        assert settings().code_ttl == 30


@pytest.mark.parametrize(
    "override,message",
    [
        ({"AUTHSVC_ACCESS_TOKEN_TTL": "two hours"}, "AUTHSVC_ACCESS_TOKEN_TTL must be int, not 'two hours'"),
        ({"AUTHSVC_COOKIE_SECURE": "yes"}, "AUTHSVC_COOKIE_SECURE must be bool, not 'yes'"),
        ({"REDIS_SENTINELS": "h:1"}, "REDIS_SENTINELS must be list[tuple[str, int]] | None"),
    ],
)
def test_a_mistyped_setting_stops_the_start(make_app, override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        make_app(**override)


def test_the_log_format_is_json_or_text(monkeypatch):
    from config.settings import from_environment

    monkeypatch.setenv("AUTHSVC_LOG_FORMAT", "xml")
    with pytest.raises(ConfigError, match="AUTHSVC_LOG_FORMAT must be one of json, text, not 'xml'"):
        from_environment()
    monkeypatch.setenv("AUTHSVC_LOG_FORMAT", "TEXT")
    assert from_environment()["AUTHSVC_LOG_FORMAT"] == "text"
    monkeypatch.delenv("AUTHSVC_LOG_FORMAT")
    assert from_environment()["AUTHSVC_LOG_FORMAT"] == "json"


def test_the_queue_timeout_is_zero_or_more(monkeypatch):
    from config.settings import from_environment

    monkeypatch.setenv("AUTHSVC_QUEUE_TIMEOUT", "-0.5")
    with pytest.raises(ConfigError, match="AUTHSVC_QUEUE_TIMEOUT must be a number of seconds, 0 or more"):
        from_environment()
    monkeypatch.setenv("AUTHSVC_QUEUE_TIMEOUT", "0")
    assert from_environment()["AUTHSVC_QUEUE_TIMEOUT"] == 0
