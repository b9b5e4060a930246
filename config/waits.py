"""The checks of settings that bound waits: every wait ends before something else gives up on it."""

from __future__ import annotations

from typing import Any

from config.readers import ConfigError, _int


def check_waits(config: dict[str, Any]) -> None:
    """Every wait ends before gunicorn kills the worker, so that the client gets a 503, not a closed connection."""
    worker_timeout = _int("GUNICORN_TIMEOUT", 30)
    # PostgreSQL: connecting, or one statement and the client's second of grace (authsvc.core.database).
    for name in ("AUTHSVC_DATABASE_TIMEOUT", "AUTHSVC_STATEMENT_TIMEOUT"):
        if not config[name] > 0:
            raise ConfigError(f"{name} must be a positive number of seconds")
    if max(config["AUTHSVC_DATABASE_TIMEOUT"], config["AUTHSVC_STATEMENT_TIMEOUT"] + 1) >= worker_timeout:
        raise ConfigError(
            "AUTHSVC_DATABASE_TIMEOUT and AUTHSVC_STATEMENT_TIMEOUT + 1 must be below GUNICORN_TIMEOUT "
            f"({worker_timeout} s), so that a database that does not answer gets a 503, not a killed worker"
        )
    if config["AUTHSVC_QUEUE_TIMEOUT"] < 0:
        raise ConfigError("AUTHSVC_QUEUE_TIMEOUT must be a number of seconds, 0 or more (0: no request is shed)")
    # A sign-in waits on a directory at most nine times: resolve + connect + StartTLS + service bind +
    # search, then resolve + connect + StartTLS + bind as the user.
    if config["AUTHSVC_LDAP_TIMEOUT"] * 9 >= worker_timeout:
        raise ConfigError(
            f"AUTHSVC_LDAP_TIMEOUT x 9 must be below GUNICORN_TIMEOUT ({worker_timeout} s), so that a directory "
            "that does not answer gets a 503, not a killed worker"
        )
    if not 0 < config["AUTHSVC_OUTBOUND_DEADLINE"] < worker_timeout:
        raise ConfigError(
            f"AUTHSVC_OUTBOUND_DEADLINE must be above 0 and below GUNICORN_TIMEOUT ({worker_timeout} s), so that "
            "a peer that answers slowly gets a clear error, not a killed worker"
        )
    # A claimed message is held for a lease: it must outlast the SMTP exchange's waits, or another
    # instance would take it over and send it a second time.
    if config["AUTHSVC_OUTBOX_LEASE"] < 9 * config["AUTHSVC_MAIL_TIMEOUT"]:
        raise ConfigError(
            "AUTHSVC_OUTBOX_LEASE must be at least 9 x AUTHSVC_MAIL_TIMEOUT (an SMTP exchange waits up to nine times)"
        )
    # The same for a webhook's delivery, which one deadline bounds.
    if config["AUTHSVC_OUTBOX_LEASE"] <= 2 * config["AUTHSVC_OUTBOUND_DEADLINE"]:
        raise ConfigError("AUTHSVC_OUTBOX_LEASE must be more than 2 x AUTHSVC_OUTBOUND_DEADLINE (a webhook's delivery)")
