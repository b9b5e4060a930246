"""The peer's Django settings: django-oauth-toolkit's documented setup, on the service's PostgreSQL server.

Production-like as the service is under the benchmark: DEBUG off, persistent
database connections (the service keeps a pool), the session in the database
(Django's default), no middleware beyond what the authorisation view needs.
"""

import os
from urllib.parse import unquote, urlsplit

_db = urlsplit(os.environ["DATABASE_URL"])

SECRET_KEY = os.environ["SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "bench.dot.urls"
WSGI_APPLICATION = "bench.dot.wsgi.application"
USE_TZ = True

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.path.lstrip("/"),
        "USER": unquote(_db.username or ""),
        "PASSWORD": unquote(_db.password or ""),
        "HOST": _db.hostname or "",
        "PORT": str(_db.port or ""),
        "CONN_MAX_AGE": None,
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

OAUTH2_PROVIDER = {
    "SCOPES": {"public": "the benchmark's scope"},
    "DEFAULT_SCOPES": ["public"],
    # The benchmark's code flow is the specification's, without PKCE, as ours runs it (--no-require-pkce).
    "PKCE_REQUIRED": False,
    "ROTATE_REFRESH_TOKEN": True,
    # Ours revokes a refresh token's family when it is used twice: the peer does the same work.
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
}
