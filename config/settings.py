"""Settings read from the environment, Heroku-style.

Everything the service reads from the environment is named here, so the
table in docs/configuration.md and this file can be checked against each other.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from config.readers import (  # noqa: F401 - ConfigError is imported from here too
    LOG_FORMATS,
    ConfigError,
    _address,
    _bool,
    _float,
    _int,
    _log_format,
    _positive_int,
    _rate,
    _smtp_url,
    _text,
)
from config.waits import check_waits

log = logging.getLogger(__name__)

INSTANCE_DIR = Path(os.environ.get("AUTHSVC_INSTANCE_DIR", Path(__file__).resolve().parent.parent / "instance"))


def database_url(url: str | None) -> str:
    """Return a SQLAlchemy URL; Heroku's ``postgres://`` means psycopg 3."""
    if not url:
        INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{INSTANCE_DIR / 'authsvc.sqlite3'}"
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return _multi_host("postgresql+psycopg://" + url[len(prefix) :])
    return _multi_host(url) if url.startswith("postgresql") else url


def _multi_host(url: str) -> str:
    """libpq's ``h1:5432,h2:5432`` (several hosts, the first that fits ``target_session_attrs`` wins)
    as SQLAlchemy's ``?host=h1:5432&host=h2:5432``: SQLAlchemy's URL holds one host."""
    scheme, _, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    credentials, at, hosts = authority.rpartition("@")
    if "," not in hosts:
        return url
    database, question, query = tail.partition("?")
    pairs = "&".join(f"host={host.strip()}" for host in hosts.split(",") if host.strip())
    return f"{scheme}://{credentials}{at}/{database}?{pairs}{'&' + query if query else ''}"


def redis_sentinels(value: str | None) -> list[tuple[str, int]] | None:
    """``REDIS_SENTINELS`` (``host:port,host:port``) as (host, port) pairs, or None when unset."""
    if not value or not value.strip():
        return None
    sentinels = []
    for item in (part.strip() for part in value.split(",")):
        host, colon, port = item.rpartition(":")
        host = host.strip("[]")  # [::1]:26379
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"REDIS_SENTINELS must be host:port,host:port,...; {item!r} is not host:port")
        sentinels.append((host, int(port)))
    return sentinels


def _development_secret_key() -> str:
    # Shared by every worker of a local run and kept across restarts, so that
    # signed cookies survive; never used in production.
    INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    path = INSTANCE_DIR / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


def _setting(env: str, default: Any, read: Callable[[str, Any], Any] | None, key: str | None = None) -> Any:
    """A field of Settings: the environment variable ``env`` read by ``read`` (None: derived below), kept
    in app.config as ``key`` (the variable's own name unless Flask or an extension names it otherwise)."""
    return field(metadata={"env": env, "key": key or env, "default": default, "read": read})


@dataclass(frozen=True)
class Settings:
    """Every setting of the service, typed; docs/configuration.md documents each (tests/test_settings.py).

    Built once from app.config at the start (``Settings.from_config``), which from_environment() fills
    from the environment; a caller's config (tests) goes on top. Read through ``authsvc.core.settings.settings()``.
    """

    environment: str = _setting("AUTHSVC_ENV", None, None)
    secret_key: str = _setting("SECRET_KEY", None, None)
    database_url: str = _setting("DATABASE_URL", None, None, key="SQLALCHEMY_DATABASE_URI")
    redis_url: str | None = _setting("REDIS_URL", None, _text)
    # Without Redis: a file the web worker keeps the in-process store in across restarts
    # (authsvc.core.store_snapshot; ./scripts/run sets instance/store.json). Unset: kept in memory only.
    store_snapshot: str | None = _setting("AUTHSVC_STORE_SNAPSHOT", None, _text)
    # Redis Sentinel: the primary is the one these name for the service (authsvc.core.redis_connection).
    redis_sentinels: list[tuple[str, int]] | None = _setting("REDIS_SENTINELS", None, None)
    redis_sentinel_service: str | None = _setting("REDIS_SENTINEL_SERVICE", None, None)
    redis_sentinel_password: str | None = _setting("REDIS_SENTINEL_PASSWORD", None, _text)
    default_domain: str | None = _setting("AUTHSVC_DEFAULT_DOMAIN", None, None)
    cookie_secure: bool = _setting("AUTHSVC_COOKIE_SECURE", True, _bool)
    cookie_samesite: str = _setting("AUTHSVC_COOKIE_SAMESITE", None, None)
    session_ttl: int = _setting("AUTHSVC_SESSION_TTL", 24 * 3600, _int)
    access_token_ttl: int = _setting("AUTHSVC_ACCESS_TOKEN_TTL", 7200, _int)
    refresh_token_ttl: int = _setting("AUTHSVC_REFRESH_TOKEN_TTL", 30 * 24 * 3600, _int)
    refresh_idle_ttl: int = _setting("AUTHSVC_REFRESH_IDLE_TTL", 14 * 24 * 3600, _int)
    refresh_reuse_grace: int = _setting("AUTHSVC_REFRESH_REUSE_GRACE", 10, _int)
    code_ttl: int = _setting("AUTHSVC_CODE_TTL", 300, _int)
    # How long a spent authorisation code is remembered, so that its replay revokes its tokens (RFC 6749 4.1.2).
    spent_code_ttl: int = _setting("AUTHSVC_SPENT_CODE_TTL", 24 * 3600, _int)
    # ID tokens' lifetime; a rotated-out signing key stays in the JWKS this long.
    id_token_ttl: int = _setting("AUTHSVC_ID_TOKEN_TTL", 3600, _int)
    # The device grant (RFC 8628): how long a device code lasts, and the polling interval it starts with.
    device_code_ttl: int = _setting("AUTHSVC_DEVICE_CODE_TTL", 600, _int)
    device_interval: int = _setting("AUTHSVC_DEVICE_INTERVAL", 5, _int)
    # Seconds between a correct password and the second factor (multi-factor sign-in).
    mfa_pending_ttl: int = _setting("AUTHSVC_MFA_PENDING_TTL", 300, _int)
    bcrypt_rounds: int = _setting("AUTHSVC_BCRYPT_ROUNDS", 12, _int)
    encryption_keys: list[str] = _setting("AUTHSVC_ENCRYPTION_KEYS", None, None)
    # One deadline per outbound exchange: an HTTP request to a provider, IdP, application, jwks_uri or webhook
    # (connect to last byte), or an LDAP sign-in (every directory it asks).
    outbound_deadline: float = _setting("AUTHSVC_OUTBOUND_DEADLINE", 10, _float)
    sso_timeout: int = _setting("AUTHSVC_SSO_TIMEOUT", 10, _int)
    sso_flow_ttl: int = _setting("AUTHSVC_SSO_FLOW_TTL", 600, _int)
    # LDAP directories: connect and each operation; a sign-in asks at most two binds and a search.
    ldap_timeout: float = _setting("AUTHSVC_LDAP_TIMEOUT", 3, _float)
    # How often a directory user's session or refresh asks the directory again (deprovisioning).
    ldap_recheck: int = _setting("AUTHSVC_LDAP_RECHECK", 300, _int)
    # Every provider may be on loopback, private networks and plain http (on-premises
    # deployments); otherwise only a provider a system admin allowed (allow_private_network).
    sso_allow_private_networks: bool = _setting("AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS", False, _bool)
    # An ID token signed with an unknown kid refetches the provider's JWKS at most once this often.
    sso_jwks_refetch_interval: int = _setting("AUTHSVC_SSO_JWKS_REFETCH_INTERVAL", 60, _int)
    # private_key_jwt (RFC 7523): an application's jwks_uri may be on loopback, private networks and
    # plain http only when the operator says so; it is fetched with this timeout and kept this long
    # (in Redis, for every worker); an unknown kid refetches it at most once an interval.
    client_jwks_allow_private_networks: bool = _setting("AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS", False, _bool)
    client_jwks_timeout: float = _setting("AUTHSVC_CLIENT_JWKS_TIMEOUT", 5, _float)
    client_jwks_ttl: int = _setting("AUTHSVC_CLIENT_JWKS_TTL", 300, _int)
    client_jwks_refetch_interval: int = _setting("AUTHSVC_CLIENT_JWKS_REFETCH_INTERVAL", 10, _int)
    # A client assertion may be valid at most this many seconds ahead (its exp), which bounds how long its
    # jti is kept. An hour, as Okta allows: Authlib's and other clients sign for an hour by default.
    client_assertion_max_lifetime: int = _setting("AUTHSVC_CLIENT_ASSERTION_MAX_LIFETIME", 3600, _int)
    # Trusted issuers (token exchange, ID-JAGs; docs/token-exchange.md): their jwks_uri may be on loopback,
    # private networks and plain http only when the operator says so; their keys are kept this long (in Redis)
    # and refetched on an unknown kid at most once an interval. An ID-JAG may live at most this long (exp - iat).
    trusted_issuer_allow_private_networks: bool = _setting(
        "AUTHSVC_TRUSTED_ISSUER_ALLOW_PRIVATE_NETWORKS", False, _bool
    )
    trusted_issuer_jwks_ttl: int = _setting("AUTHSVC_TRUSTED_ISSUER_JWKS_TTL", 300, _int)
    trusted_issuer_jwks_refetch_interval: int = _setting("AUTHSVC_TRUSTED_ISSUER_JWKS_REFETCH_INTERVAL", 10, _int)
    id_jag_max_lifetime: int = _setting("AUTHSVC_ID_JAG_MAX_LIFETIME", 300, _int)
    # Request objects (RFC 9101): exp at most this far ahead, nbf at most this long ago (FAPI 2.0: an hour).
    request_object_max_lifetime: int = _setting("AUTHSVC_REQUEST_OBJECT_MAX_LIFETIME", 3600, _int)
    # Pushed authorisation requests (RFC 9126): a request_uri must reach the authorisation endpoint
    # within this many seconds; once opened there, it lasts while the user signs in (at most 10 minutes).
    par_ttl: int = _setting("AUTHSVC_PAR_TTL", 60, _int)
    # DPoP (RFC 9449): the token endpoint and UserInfo require a server nonce in proofs, made per
    # NONCE_LIFETIME window in Redis (the current and the previous window's accepted); a proof's iat
    # may be at most PROOF_LIFETIME seconds old, and its jti is kept that long.
    dpop_nonce: bool = _setting("AUTHSVC_DPOP_NONCE", True, _bool)
    dpop_nonce_lifetime: int = _setting("AUTHSVC_DPOP_NONCE_LIFETIME", 300, _positive_int)
    dpop_proof_lifetime: int = _setting("AUTHSVC_DPOP_PROOF_LIFETIME", 60, _positive_int)
    # A SAML provider given by metadata URL refetches it (new signing certificates) when older than this.
    saml_metadata_max_age: int = _setting("AUTHSVC_SAML_METADATA_MAX_AGE", 24 * 3600, _int)
    # Back-channel logout (OpenID Connect): each POST to an application's backchannel_logout_uri
    # waits at most this long, and is tried this many times, waiting BACKOFF, 2 x BACKOFF... between.
    backchannel_timeout: float = _setting("AUTHSVC_BACKCHANNEL_TIMEOUT", 5, _float)
    backchannel_attempts: int = _setting("AUTHSVC_BACKCHANNEL_ATTEMPTS", 3, _int)
    backchannel_backoff: float = _setting("AUTHSVC_BACKCHANNEL_BACKOFF", 1, _float)
    # Every outbound delivery (back-channel logouts, webhooks) may go to loopback, private networks and plain http.
    backchannel_allow_private_networks: bool = _setting("AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS", False, _bool)
    max_body_bytes: int = _setting("AUTHSVC_MAX_BODY_BYTES", 64 * 1024, _int, key="MAX_CONTENT_LENGTH")
    # Form bodies: no more fields than any of our forms could use.
    max_form_fields: int = _setting("AUTHSVC_MAX_FORM_FIELDS", 100, _int, key="MAX_FORM_PARTS")
    log_level: str = _setting("AUTHSVC_LOG_LEVEL", None, None)
    # How log records are written: "json" (one object a line, for machines) or "text" (for a person at
    # a terminal; ./scripts/run's choice). config/gunicorn.py reads the same variable for gunicorn's logs.
    log_format: str = _setting("AUTHSVC_LOG_FORMAT", "json", _log_format)
    # Dependencies that do not answer fail the request fast (503), not after a long hang.
    redis_timeout: float = _setting("AUTHSVC_REDIS_TIMEOUT", 1.0, _float)
    # Every wait on PostgreSQL ends before gunicorn kills the worker (see config.waits);
    # AUTHSVC_DATABASE_TIMEOUT is also the database time of a whole request (authsvc.core.budget).
    database_timeout: float = _setting("AUTHSVC_DATABASE_TIMEOUT", 5, _float)
    statement_timeout: float = _setting("AUTHSVC_STATEMENT_TIMEOUT", 10, _float)
    retry_after: int = _setting("AUTHSVC_RETRY_AFTER", 5, _int)
    # A request that waited longer than this for a worker is answered 503 at once (authsvc.web.overload); 0: never.
    queue_timeout: float = _setting("AUTHSVC_QUEUE_TIMEOUT", 1.0, _float)
    # Request rates (Flask-Limiter, counted in Redis). The account rate counts failed attempts only.
    signin_rate_limit: str = _setting("AUTHSVC_SIGNIN_RATE_LIMIT", "30/minute", _rate)
    signin_account_rate_limit: str = _setting("AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT", "10/minute", _rate)
    # Per authenticated client: a request whose client did not authenticate counts per address instead,
    # and a failed authentication also against the client_id it named (refusing failures only).
    token_rate_limit: str = _setting("AUTHSVC_TOKEN_RATE_LIMIT", "300/minute", _rate)
    # Client registrations (RFC 7591) per address, on top of the token rate (open registration takes no token).
    registration_rate_limit: str = _setting("AUTHSVC_REGISTRATION_RATE_LIMIT", "30/minute", _rate)
    client_failure_rate_limit: str = _setting("AUTHSVC_CLIENT_FAILURE_RATE_LIMIT", "60/minute", _rate)
    client_failure_client_rate_limit: str = _setting("AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT", "300/minute", _rate)
    sso_start_rate_limit: str = _setting("AUTHSVC_SSO_START_RATE_LIMIT", "30/minute", _rate)
    # User codes entered at /auth/device, per client address (wrong ones also count towards lockouts).
    device_verify_rate_limit: str = _setting("AUTHSVC_DEVICE_VERIFY_RATE_LIMIT", "30/minute", _rate)
    # Unfinished SSO flows one address may hold in the store at a time; 0 turns the bound off.
    sso_flows_per_address: int = _setting("AUTHSVC_SSO_FLOWS_PER_ADDRESS", 100, _int)
    # Lockouts after failed sign-ins: the window doubles with every failure past the threshold.
    lockout_threshold: int = _setting("AUTHSVC_LOCKOUT_THRESHOLD", 5, _int)
    lockout_address_threshold: int = _setting("AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD", 20, _int)
    lockout_base: int = _setting("AUTHSVC_LOCKOUT_BASE", 30, _int)
    lockout_max: int = _setting("AUTHSVC_LOCKOUT_MAX", 3600, _int)
    failure_memory: int = _setting("AUTHSVC_FAILURE_MEMORY", 3600, _int)
    # Removing a factor, new recovery codes, a new passkey or authenticator, a password set in the
    # console and linking an SSO account need a sign-in (with the second factor) this recent.
    reauth_window: int = _setting("AUTHSVC_REAUTH_WINDOW", 300, _positive_int)
    # Deployment behind a TLS-terminating proxy.
    proxy_hops: int = _setting("AUTHSVC_PROXY_HOPS", 0, _int)
    hsts_max_age: int = _setting("AUTHSVC_HSTS_MAX_AGE", 365 * 24 * 3600, _int)
    metrics_token: str | None = _setting("AUTHSVC_METRICS_TOKEN", None, _text)
    # SCIM provisioning (docs/scim.md): the largest request body, requests per credential,
    # whether a DELETE removes the user's row (else it is disabled and unlinked, for the audit
    # trail), and whether a SCIM client may set passwords.
    scim_max_body: int = _setting("AUTHSVC_SCIM_MAX_BODY", 1024 * 1024, _int)
    scim_rate_limit: str = _setting("AUTHSVC_SCIM_RATE_LIMIT", "600/minute", _rate)
    scim_hard_delete: bool = _setting("AUTHSVC_SCIM_HARD_DELETE", False, _bool)
    scim_passwords: bool = _setting("AUTHSVC_SCIM_PASSWORDS", False, _bool)
    # E-mail (docs/account.md): the SMTP server (smtp://[user:password@]host:port, ?starttls=true, or
    # smtps://) and the From address. Without a server, development writes each message to instance/mail/
    # and production turns off what needs e-mail. Every SMTP wait ends after MAIL_TIMEOUT seconds.
    smtp_url: str | None = _setting("AUTHSVC_SMTP_URL", None, _smtp_url)
    mail_from: str | None = _setting("AUTHSVC_MAIL_FROM", None, _address)
    mail_timeout: float = _setting("AUTHSVC_MAIL_TIMEOUT", 10, _float)
    # The outbox (authsvc.outbox): a message not sent after MAIL_GIVE_UP seconds is given up (and audited);
    # a failed attempt waits BACKOFF seconds, doubling each time up to an hour; each sender looks for work
    # every POLL seconds (at once when its own process queued some) and holds what it claimed LEASE seconds.
    mail_give_up: int = _setting("AUTHSVC_MAIL_GIVE_UP", 24 * 3600, _positive_int)
    outbox_backoff: float = _setting("AUTHSVC_OUTBOX_BACKOFF", 30, _float)
    outbox_poll: float = _setting("AUTHSVC_OUTBOX_POLL", 5, _float)
    outbox_lease: int = _setting("AUTHSVC_OUTBOX_LEASE", 120, _positive_int)
    # Webhooks (docs/events.md): a failed delivery waits BACKOFF seconds, doubling up to LONGEST_WAIT; given up
    # (dead-lettered, replayable) after GIVE_UP. WORKERS deliveries at once per process. A secret replaced by a
    # rotation still signs, beside the new one, for SECRET_OVERLAP seconds.
    webhook_give_up: int = _setting("AUTHSVC_WEBHOOK_GIVE_UP", 24 * 3600, _positive_int)
    webhook_backoff: float = _setting("AUTHSVC_WEBHOOK_BACKOFF", 1, _float)
    webhook_longest_wait: float = _setting("AUTHSVC_WEBHOOK_LONGEST_WAIT", 60, _float)
    webhook_workers: int = _setting("AUTHSVC_WEBHOOK_WORKERS", 4, _positive_int)
    webhook_secret_overlap: int = _setting("AUTHSVC_WEBHOOK_SECRET_OVERLAP", 24 * 3600, _positive_int)
    # Shared Signals (docs/events.md): a poll asking to wait (RFC 8936 returnImmediately false) with nothing
    # waiting holds its request this many seconds at most for a SET to come; 0 answers at once.
    ssf_poll_wait: float = _setting("AUTHSVC_SSF_POLL_WAIT", 0, _float)
    # A forgotten password's link, and an address's verification link, last this many seconds.
    reset_ttl: int = _setting("AUTHSVC_RESET_TTL", 1800, _positive_int)
    verify_ttl: int = _setting("AUTHSVC_VERIFY_TTL", 3 * 24 * 3600, _positive_int)
    # An invitation's link works this many seconds (once).
    invitation_ttl: int = _setting("AUTHSVC_INVITATION_TTL", 7 * 24 * 3600, _positive_int)
    # Links sent on request (a forgotten password, a new verification link): per address asked for,
    # and per client address.
    account_mail_rate_limit: str = _setting("AUTHSVC_ACCOUNT_MAIL_RATE_LIMIT", "5/hour", _rate)
    account_mail_client_rate_limit: str = _setting("AUTHSVC_ACCOUNT_MAIL_CLIENT_RATE_LIMIT", "30/hour", _rate)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        """The settings in ``config`` (app.config), each there and of its type; else ConfigError."""
        hints = _hints()
        values = {}
        for setting in fields(cls):
            key = setting.metadata["key"]
            if key not in config:
                raise ConfigError(f"the setting {key} is missing")
            value = values[setting.name] = config[key]
            if not _is(value, hints[setting.name]):
                raise ConfigError(f"the setting {key} must be {_name(hints[setting.name])}, not {value!r}")
        return cls(**values)


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def _name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint)


def _is(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the type ``hint`` (the few kinds Settings uses; an int is a float too)."""
    if isinstance(hint, types.UnionType):
        return any(_is(value, option) for option in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, typing.get_origin(hint) or hint)


# What the environment sets besides Settings: gunicorn's own (config/gunicorn.py) and where the
# development files go. docs/configuration.md documents these too.
SERVER_VARIABLES = (
    "PORT",
    "WEB_CONCURRENCY",
    "GUNICORN_TIMEOUT",
    "GUNICORN_GRACEFUL_TIMEOUT",
    "GUNICORN_KEEPALIVE",
    "GUNICORN_THREADS",
    "GUNICORN_BACKLOG",
    "AUTHSVC_ACCESS_LOG",
    "AUTHSVC_MAX_REQUEST_LINE",
    "AUTHSVC_MAX_HEADERS",
    "AUTHSVC_MAX_HEADER_BYTES",
    "PROMETHEUS_MULTIPROC_DIR",
    "AUTHSVC_INSTANCE_DIR",
)


def from_environment() -> dict[str, Any]:
    """Build the Flask configuration from ``os.environ`` (Settings' keys, and the engine's options)."""
    config = _derived()
    for setting in fields(Settings):
        meta = setting.metadata
        if meta["read"] is not None:
            config[meta["key"]] = meta["read"](meta["env"], meta["default"])
    check_waits(config)
    # No pool_pre_ping: a round trip on every request. database.ping_after_idle pings only
    # connections that sat idle, and a disconnect met in use invalidates the whole pool.
    config["SQLALCHEMY_ENGINE_OPTIONS"] = {"pool_recycle": 1800}
    return config


def _derived() -> dict[str, Any]:
    """The settings that are more than one variable read with its default."""
    env = os.environ
    # A service given a database is a deployment unless told otherwise; the
    # embedded defaults (no DATABASE_URL) are a developer's machine.
    environment = env.get("AUTHSVC_ENV") or ("production" if env.get("DATABASE_URL") else "development")
    if environment not in ("production", "development"):
        raise ConfigError("AUTHSVC_ENV must be 'production' or 'development'")
    secret_key = env.get("SECRET_KEY")
    if not secret_key:
        if environment == "production":
            raise ConfigError(
                "SECRET_KEY is not set. Production refuses to start without it "
                "(set SECRET_KEY, or AUTHSVC_ENV=development for a local run)."
            )
        secret_key = _development_secret_key()
    samesite = (env.get("AUTHSVC_COOKIE_SAMESITE") or "Lax").capitalize()
    if samesite not in ("Lax", "Strict", "None"):
        raise ConfigError("AUTHSVC_COOKIE_SAMESITE must be Lax, Strict or None")
    if samesite == "None" and not _bool("AUTHSVC_COOKIE_SECURE", True):
        # Browsers drop SameSite=None cookies that are not Secure.
        raise ConfigError("AUTHSVC_COOKIE_SAMESITE=None requires AUTHSVC_COOKIE_SECURE=true")
    sentinels = redis_sentinels(env.get("REDIS_SENTINELS"))
    sentinel_service = (env.get("REDIS_SENTINEL_SERVICE") or "").strip() or None
    if sentinels and not sentinel_service:
        raise ConfigError("REDIS_SENTINELS needs REDIS_SENTINEL_SERVICE: the name the Sentinels monitor the primary by")
    return {
        "AUTHSVC_ENV": environment,
        "SECRET_KEY": secret_key,
        "SQLALCHEMY_DATABASE_URI": database_url(env.get("DATABASE_URL")),
        "REDIS_SENTINELS": sentinels,
        "REDIS_SENTINEL_SERVICE": sentinel_service,
        "AUTHSVC_DEFAULT_DOMAIN": (env.get("AUTHSVC_DEFAULT_DOMAIN") or "").lower() or None,
        "AUTHSVC_COOKIE_SAMESITE": samesite,
        "AUTHSVC_ENCRYPTION_KEYS": [k.strip() for k in env.get("AUTHSVC_ENCRYPTION_KEYS", "").split(",") if k.strip()],
        "AUTHSVC_LOG_LEVEL": (env.get("AUTHSVC_LOG_LEVEL") or "INFO").upper(),
    }
