"""How a setting's value is read from the environment: each reader takes the variable's name and its
default, and raises ConfigError for a value of the wrong kind."""

from __future__ import annotations

import os


class ConfigError(RuntimeError):
    """The environment does not describe a service that may start."""


def _bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {value!r}") from None


def _positive_int(name: str, default: int) -> int:
    value = _int(name, default)
    if value <= 0:
        raise ConfigError(f"{name} must be a positive number of seconds, not {value!r}")
    return value


def _float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {value!r}") from None


def _rate(name: str, default: str) -> str:
    """A rate limit in Flask-Limiter's notation ("30/minute", "5 per second; 100/hour")."""
    from limits import parse_many

    value = os.environ.get(name) or default
    try:
        parse_many(value)
    except ValueError:
        raise ConfigError(f"{name} must be a rate such as '30/minute', not {value!r}") from None
    return value


LOG_FORMATS = ("json", "text")


def _log_format(name: str, default: str) -> str:
    value = (os.environ.get(name) or default).lower()
    if value not in LOG_FORMATS:
        raise ConfigError(f"{name} must be one of {', '.join(LOG_FORMATS)}, not {value!r}")
    return value


def _text(name: str, default: str | None) -> str | None:
    return os.environ.get(name) or default


SMTP_SCHEMES = ("smtp", "smtps")


def _smtp_url(name: str, default: str | None) -> str | None:
    """``smtp://[user:password@]host:port`` (``?starttls=true``) or ``smtps://`` (TLS from the first byte)."""
    from urllib.parse import parse_qs, urlsplit

    value = os.environ.get(name) or default
    if not value:
        return None
    try:
        url = urlsplit(value)
        url.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise ConfigError(f"{name} must be smtp://[user:password@]host:port, not a malformed URL") from None
    if url.scheme not in SMTP_SCHEMES or not url.hostname:
        raise ConfigError(f"{name} must be smtp://[user:password@]host:port or smtps://...; a host is required")
    starttls = parse_qs(url.query).get("starttls", ["false"])[-1].lower()
    if starttls not in ("true", "false"):
        raise ConfigError(f"{name}: starttls must be true or false")
    return value


def _address(name: str, default: str | None) -> str | None:
    """A bare e-mail address (``accounts@example.com``): the From of every message, with the domain's name."""
    value = (os.environ.get(name) or default or "").strip()
    if not value:
        return None
    local, at, domain = value.rpartition("@")
    if not at or not local or "." not in domain or any(c in value for c in ' <>,;"\r\n'):
        raise ConfigError(f"{name} must be an e-mail address such as accounts@example.com, not {value!r}")
    return value
