"""Settings read from the environment, Heroku-style.

Everything the service reads from the environment is named here, so the
table in docs/configuration.md and this file can be checked against each other.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

INSTANCE_DIR = Path(os.environ.get("AUTHSVC_INSTANCE_DIR", Path(__file__).resolve().parent.parent / "instance"))


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


def from_environment() -> dict[str, Any]:
    """Build the Flask configuration from ``os.environ``."""
    env = os.environ
    # A service given a database is a deployment unless told otherwise; the
    # embedded defaults (no DATABASE_URL) are a developer's machine.
    environment = env.get("AUTHSVC_ENV") or ("production" if env.get("DATABASE_URL") else "development")
    if environment not in ("production", "development"):
        raise ConfigError("AUTHSVC_ENV must be 'production' or 'development'")
    production = environment == "production"

    secret_key = env.get("SECRET_KEY")
    if not secret_key:
        if production:
            raise ConfigError(
                "SECRET_KEY is not set. Production refuses to start without it "
                "(set SECRET_KEY, or AUTHSVC_ENV=development for a local run)."
            )
        secret_key = _development_secret_key()

    cookie_secure = _bool("AUTHSVC_COOKIE_SECURE", True)
    samesite = (env.get("AUTHSVC_COOKIE_SAMESITE") or "Lax").capitalize()
    if samesite not in ("Lax", "Strict", "None"):
        raise ConfigError("AUTHSVC_COOKIE_SAMESITE must be Lax, Strict or None")
    if samesite == "None" and not cookie_secure:
        # Browsers drop SameSite=None cookies that are not Secure.
        raise ConfigError("AUTHSVC_COOKIE_SAMESITE=None requires AUTHSVC_COOKIE_SECURE=true")

    # Every wait on PostgreSQL ends before gunicorn kills the worker, so the
    # client gets a 503 rather than a closed connection: connecting, or one
    # statement and the client's second of grace (authsvc.core.database).
    # AUTHSVC_DATABASE_TIMEOUT is also the database time of a whole request (authsvc.core.budget).
    for name in ("AUTHSVC_DATABASE_TIMEOUT", "AUTHSVC_STATEMENT_TIMEOUT"):
        if not _float(name, 1) > 0:
            raise ConfigError(f"{name} must be a positive number of seconds")
    database_wait = max(_float("AUTHSVC_DATABASE_TIMEOUT", 5), _float("AUTHSVC_STATEMENT_TIMEOUT", 10) + 1)
    worker_timeout = _int("GUNICORN_TIMEOUT", 30)
    if database_wait >= worker_timeout:
        raise ConfigError(
            "AUTHSVC_DATABASE_TIMEOUT and AUTHSVC_STATEMENT_TIMEOUT + 1 must be below GUNICORN_TIMEOUT "
            f"({worker_timeout} s), so that a database that does not answer gets a 503, not a killed worker"
        )

    # A sign-in waits on a directory at most nine times: resolve + connect + StartTLS + service bind +
    # search, then resolve + connect + StartTLS + bind as the user.
    ldap_timeout = _float("AUTHSVC_LDAP_TIMEOUT", 3)
    if ldap_timeout * 9 >= worker_timeout:
        raise ConfigError(
            f"AUTHSVC_LDAP_TIMEOUT x 9 must be below GUNICORN_TIMEOUT ({worker_timeout} s), so that a directory "
            "that does not answer gets a 503, not a killed worker"
        )

    # One deadline per outbound exchange: an HTTP request to a provider, IdP, application or jwks_uri
    # (connect to last byte), or an LDAP sign-in (every directory it asks).
    outbound_deadline = _float("AUTHSVC_OUTBOUND_DEADLINE", 10)
    if not 0 < outbound_deadline < worker_timeout:
        raise ConfigError(
            f"AUTHSVC_OUTBOUND_DEADLINE must be above 0 and below GUNICORN_TIMEOUT ({worker_timeout} s), so that "
            "a peer that answers slowly gets a clear error, not a killed worker"
        )
    sentinels = redis_sentinels(env.get("REDIS_SENTINELS"))
    sentinel_service = (env.get("REDIS_SENTINEL_SERVICE") or "").strip() or None
    if sentinels and not sentinel_service:
        raise ConfigError("REDIS_SENTINELS needs REDIS_SENTINEL_SERVICE: the name the Sentinels monitor the primary by")

    return {
        "AUTHSVC_ENV": environment,
        "SECRET_KEY": secret_key,
        "SQLALCHEMY_DATABASE_URI": database_url(env.get("DATABASE_URL")),
        # No pool_pre_ping: a round trip on every request. database.ping_after_idle pings only
        # connections that sat idle, and a disconnect met in use invalidates the whole pool.
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_recycle": 1800},
        "REDIS_URL": env.get("REDIS_URL") or None,
        # Redis Sentinel: the primary is the one these name for the service (authsvc.core.redis_connection).
        "REDIS_SENTINELS": sentinels,
        "REDIS_SENTINEL_SERVICE": sentinel_service,
        "REDIS_SENTINEL_PASSWORD": env.get("REDIS_SENTINEL_PASSWORD") or None,
        "AUTHSVC_DEFAULT_DOMAIN": (env.get("AUTHSVC_DEFAULT_DOMAIN") or "").lower() or None,
        "AUTHSVC_COOKIE_SECURE": cookie_secure,
        "AUTHSVC_COOKIE_SAMESITE": samesite,
        "AUTHSVC_SESSION_TTL": _int("AUTHSVC_SESSION_TTL", 24 * 3600),
        "AUTHSVC_ACCESS_TOKEN_TTL": _int("AUTHSVC_ACCESS_TOKEN_TTL", 7200),
        "AUTHSVC_REFRESH_TOKEN_TTL": _int("AUTHSVC_REFRESH_TOKEN_TTL", 30 * 24 * 3600),
        "AUTHSVC_REFRESH_IDLE_TTL": _int("AUTHSVC_REFRESH_IDLE_TTL", 14 * 24 * 3600),
        "AUTHSVC_REFRESH_REUSE_GRACE": _int("AUTHSVC_REFRESH_REUSE_GRACE", 10),
        "AUTHSVC_CODE_TTL": _int("AUTHSVC_CODE_TTL", 300),
        # ID tokens' lifetime; a rotated-out signing key stays in the JWKS this long.
        "AUTHSVC_ID_TOKEN_TTL": _int("AUTHSVC_ID_TOKEN_TTL", 3600),
        # The device grant (RFC 8628): how long a device code lasts, and the polling interval it starts with.
        "AUTHSVC_DEVICE_CODE_TTL": _int("AUTHSVC_DEVICE_CODE_TTL", 600),
        "AUTHSVC_DEVICE_INTERVAL": _int("AUTHSVC_DEVICE_INTERVAL", 5),
        # Seconds between a correct password and the second factor (multi-factor sign-in).
        "AUTHSVC_MFA_PENDING_TTL": _int("AUTHSVC_MFA_PENDING_TTL", 300),
        "AUTHSVC_BCRYPT_ROUNDS": _int("AUTHSVC_BCRYPT_ROUNDS", 12),
        "AUTHSVC_ENCRYPTION_KEYS": [k.strip() for k in env.get("AUTHSVC_ENCRYPTION_KEYS", "").split(",") if k.strip()],
        "AUTHSVC_OUTBOUND_DEADLINE": outbound_deadline,
        "AUTHSVC_SSO_TIMEOUT": _int("AUTHSVC_SSO_TIMEOUT", 10),
        "AUTHSVC_SSO_FLOW_TTL": _int("AUTHSVC_SSO_FLOW_TTL", 600),
        # LDAP directories: connect and each operation; a sign-in asks at most two binds and a search.
        "AUTHSVC_LDAP_TIMEOUT": ldap_timeout,
        # How often a directory user's session or refresh asks the directory again (deprovisioning).
        "AUTHSVC_LDAP_RECHECK": _int("AUTHSVC_LDAP_RECHECK", 300),
        # Every provider may be on loopback, private networks and plain http (on-premises
        # deployments); otherwise only a provider a system admin allowed (allow_private_network).
        "AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS": _bool("AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS", False),
        # An ID token signed with an unknown kid refetches the provider's JWKS at most once this often.
        "AUTHSVC_SSO_JWKS_REFETCH_INTERVAL": _int("AUTHSVC_SSO_JWKS_REFETCH_INTERVAL", 60),
        # private_key_jwt (RFC 7523): an application's jwks_uri may be on loopback, private networks and
        # plain http only when the operator says so; it is fetched with this timeout and kept this long
        # (in Redis, for every worker); an unknown kid refetches it at most once an interval.
        "AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS": _bool("AUTHSVC_CLIENT_JWKS_ALLOW_PRIVATE_NETWORKS", False),
        "AUTHSVC_CLIENT_JWKS_TIMEOUT": _float("AUTHSVC_CLIENT_JWKS_TIMEOUT", 5),
        "AUTHSVC_CLIENT_JWKS_TTL": _int("AUTHSVC_CLIENT_JWKS_TTL", 300),
        "AUTHSVC_CLIENT_JWKS_REFETCH_INTERVAL": _int("AUTHSVC_CLIENT_JWKS_REFETCH_INTERVAL", 10),
        # A client assertion may be valid at most this many seconds ahead (its exp), which bounds how long its
        # jti is kept. An hour, as Okta allows: Authlib's and other clients sign for an hour by default.
        "AUTHSVC_CLIENT_ASSERTION_MAX_LIFETIME": _int("AUTHSVC_CLIENT_ASSERTION_MAX_LIFETIME", 3600),
        # Request objects (RFC 9101): exp at most this far ahead, nbf at most this long ago (FAPI 2.0: an hour).
        "AUTHSVC_REQUEST_OBJECT_MAX_LIFETIME": _int("AUTHSVC_REQUEST_OBJECT_MAX_LIFETIME", 3600),
        # Pushed authorisation requests (RFC 9126): a request_uri must reach the authorisation endpoint
        # within this many seconds; once opened there, it lasts while the user signs in (at most 10 minutes).
        "AUTHSVC_PAR_TTL": _int("AUTHSVC_PAR_TTL", 60),
        # A SAML provider given by metadata URL refetches it (new signing certificates) when older than this.
        "AUTHSVC_SAML_METADATA_MAX_AGE": _int("AUTHSVC_SAML_METADATA_MAX_AGE", 24 * 3600),
        # Back-channel logout (OpenID Connect): each POST to an application's backchannel_logout_uri
        # waits at most this long, and is tried this many times, waiting BACKOFF, 2 x BACKOFF... between.
        "AUTHSVC_BACKCHANNEL_TIMEOUT": _float("AUTHSVC_BACKCHANNEL_TIMEOUT", 5),
        "AUTHSVC_BACKCHANNEL_ATTEMPTS": _int("AUTHSVC_BACKCHANNEL_ATTEMPTS", 3),
        "AUTHSVC_BACKCHANNEL_BACKOFF": _float("AUTHSVC_BACKCHANNEL_BACKOFF", 1),
        # Applications' backchannel_logout_uri may be on loopback, private networks and plain http.
        "AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS": _bool("AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS", False),
        "MAX_CONTENT_LENGTH": _int("AUTHSVC_MAX_BODY_BYTES", 64 * 1024),
        # Form bodies: no more fields than any of our forms could use.
        "MAX_FORM_PARTS": _int("AUTHSVC_MAX_FORM_FIELDS", 100),
        "AUTHSVC_LOG_LEVEL": (env.get("AUTHSVC_LOG_LEVEL") or "INFO").upper(),
        # Dependencies that do not answer fail the request fast (503), not after a long hang.
        "AUTHSVC_REDIS_TIMEOUT": _float("AUTHSVC_REDIS_TIMEOUT", 1.0),
        "AUTHSVC_DATABASE_TIMEOUT": _float("AUTHSVC_DATABASE_TIMEOUT", 5),
        "AUTHSVC_STATEMENT_TIMEOUT": _float("AUTHSVC_STATEMENT_TIMEOUT", 10),
        "AUTHSVC_RETRY_AFTER": _int("AUTHSVC_RETRY_AFTER", 5),
        # Request rates (Flask-Limiter, counted in Redis). The account rate counts failed attempts only.
        "AUTHSVC_SIGNIN_RATE_LIMIT": _rate("AUTHSVC_SIGNIN_RATE_LIMIT", "30/minute"),
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT": _rate("AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT", "10/minute"),
        "AUTHSVC_TOKEN_RATE_LIMIT": _rate("AUTHSVC_TOKEN_RATE_LIMIT", "300/minute"),
        "AUTHSVC_SSO_START_RATE_LIMIT": _rate("AUTHSVC_SSO_START_RATE_LIMIT", "30/minute"),
        # User codes entered at /auth/device, per client address (wrong ones also count towards lockouts).
        "AUTHSVC_DEVICE_VERIFY_RATE_LIMIT": _rate("AUTHSVC_DEVICE_VERIFY_RATE_LIMIT", "30/minute"),
        # Unfinished SSO flows one address may hold in the store at a time; 0 turns the bound off.
        "AUTHSVC_SSO_FLOWS_PER_ADDRESS": _int("AUTHSVC_SSO_FLOWS_PER_ADDRESS", 100),
        # Lockouts after failed sign-ins: the window doubles with every failure past the threshold.
        "AUTHSVC_LOCKOUT_THRESHOLD": _int("AUTHSVC_LOCKOUT_THRESHOLD", 5),
        "AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD": _int("AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD", 20),
        "AUTHSVC_LOCKOUT_BASE": _int("AUTHSVC_LOCKOUT_BASE", 30),
        "AUTHSVC_LOCKOUT_MAX": _int("AUTHSVC_LOCKOUT_MAX", 3600),
        "AUTHSVC_FAILURE_MEMORY": _int("AUTHSVC_FAILURE_MEMORY", 3600),
        # Removing a factor, new recovery codes, a new passkey or authenticator, a password set in the
        # console and linking an SSO account need a sign-in (with the second factor) this recent.
        "AUTHSVC_REAUTH_WINDOW": _positive_int("AUTHSVC_REAUTH_WINDOW", 300),
        # Deployment behind a TLS-terminating proxy.
        "AUTHSVC_PROXY_HOPS": _int("AUTHSVC_PROXY_HOPS", 0),
        "AUTHSVC_HSTS_MAX_AGE": _int("AUTHSVC_HSTS_MAX_AGE", 365 * 24 * 3600),
        "AUTHSVC_METRICS_TOKEN": env.get("AUTHSVC_METRICS_TOKEN") or None,
        # SCIM provisioning (docs/scim.md): the largest request body, requests per credential,
        # whether a DELETE removes the user's row (else it is disabled and unlinked, for the audit
        # trail), and whether a SCIM client may set passwords.
        "AUTHSVC_SCIM_MAX_BODY": _int("AUTHSVC_SCIM_MAX_BODY", 1024 * 1024),
        "AUTHSVC_SCIM_RATE_LIMIT": _rate("AUTHSVC_SCIM_RATE_LIMIT", "600/minute"),
        "AUTHSVC_SCIM_HARD_DELETE": _bool("AUTHSVC_SCIM_HARD_DELETE", False),
        "AUTHSVC_SCIM_PASSWORDS": _bool("AUTHSVC_SCIM_PASSWORDS", False),
    }
