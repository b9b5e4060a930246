"""Inspect's fast path: a bearer token or API key in a header, answered below Flask.

``GET /api/engine/v2/api_keys/inspect`` is on the path of every API request
of the platform. Flask's request machinery and the app's hooks cost several
times the one prepared lookup that answers it, so this WSGI layer, inside
ProxyFix and in front of Flask, answers the common case itself: a header
credential that is valid. It reads the same statement (credentials.find_token
or find_api_key), builds the same claims (lookup.claims) and sends the
headers every answer carries (request id, no-store, nosniff, HSTS), and it
counts the request in the same metrics.

Everything else goes to Flask untouched, which then answers as it always
does: a query string or cookie credential, any miss (unknown, expired or
revoked credential, unknown host: Flask tells 401 from 404), a DPoP-bound
token as Bearer or without a valid proof (RFC 9449 7; a valid one is
answered here too), an API key whose
last use is due to be recorded or that comes with a ``bearer_token`` cookie
(which Flask takes first). After a database error Flask raises the same error
(503) without a second try. The database is read on every request; nothing
is cached.

Only on PostgreSQL: the embedded SQLite default serves inspect through Flask.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from flask import Flask, request
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from werkzeug.sansio.utils import get_host

from authsvc.api import credentials, lookup, proofs
from authsvc.api.protected_resource import PREFIX
from authsvc.core import tracing
from authsvc.core.errors import REDIS_DOWN
from authsvc.core.models import FAPI2_PROFILE
from authsvc.core.readers.pool import READERS, Readers
from authsvc.core.settings import settings
from authsvc.core.tenancy import host_name
from authsvc.web import deployment, logs, metrics

# Inspect's rule under the platform API's prefix (authsvc.api.protected_resource): the view's route and the fast
# path's match are this one path.
RULE = "/api_keys/inspect"
PATH = PREFIX + RULE
ENDPOINT = "api.inspect"
# Where the fast path leaves a database error for Flask's view to raise (``database_error_left``): a key of
# the WSGI environ, since the fast path runs before Flask has a request context and with it the typed
# request state (authsvc.core.request_state). Written and read only here.
_DATABASE_ERROR = "authsvc.fastpath.database_error"

log = logging.getLogger(__name__)
# As Flask's jsonify writes it (compact, ASCII, a final newline added), so that both paths send the
# same bytes; one encoder for the process (json.dumps with these arguments makes one per call).
_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class InspectFastPath:
    """WSGI middleware: answers a valid header credential at inspect, else passes the request on."""

    def __init__(self, app: Flask, wsgi_app: Wsgi):
        self.flask_app = app
        self.wsgi_app = wsgi_app
        self.default_host = settings(app).default_domain or None
        self.hsts_max_age = settings(app).hsts_max_age
        # The samples every answer of this path adds to, looked up once.
        self._answered = metrics.REQUESTS.labels(endpoint=ENDPOINT, method="GET", status="200")
        self._latency = metrics.LATENCY.labels(endpoint=ENDPOINT)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == PATH and environ.get("REQUEST_METHOD") == "GET":
            started = time.perf_counter()
            try:
                answer = self._answer(environ)
            except (DBAPIError, PoolTimeoutError) as exc:
                # Flask answers (503), without trying the database a second time.
                environ[_DATABASE_ERROR] = exc
                answer = None
            except Exception:
                # A fault here: Flask still answers, but it must not pass unseen.
                log.exception("inspect fast path failed; Flask answers instead")
                answer = None
            if answer is not None:
                body, headers = answer
                start_response("200 OK", headers)
                self._answered.inc()
                self._latency.observe(time.perf_counter() - started)
                tracing.served(environ, PATH, "200 OK", started)
                return [body]
        return self.wsgi_app(environ, start_response)

    def _answer(self, environ: dict[str, Any]) -> tuple[bytes, list[tuple[str, str]]] | None:
        if environ.get("QUERY_STRING") or not environ.get("HTTP_HOST"):
            return None
        authorization = environ.get("HTTP_AUTHORIZATION")
        api_key: str = environ.get("HTTP_X_API_KEY") or ""
        if authorization is None and not api_key:
            return None
        scheme = environ["wsgi.url_scheme"]
        # werkzeug's own reading of the host, as request.host gives it to Flask.
        host = get_host(scheme, environ["HTTP_HOST"], None)
        if authorization is not None:
            kind, _, value = authorization.partition(" ")
            value = value.strip()
            kind = kind.lower()
            if kind not in ("bearer", "dpop") or not value:
                return None
            credential = credentials.find_token(value, host_name(host), self.default_host, self.readers)
            if credential is not None and (kind == "dpop" or credential.dpop_jkt is not None):
                if not self._proven(environ, kind, f"{scheme}://{host}", value, credential):
                    return None
        else:
            if "bearer_token" in environ.get("HTTP_COOKIE", ""):
                return None  # Flask takes a bearer token in a cookie before an API key
            credential = credentials.find_api_key(api_key, host_name(host), self.default_host, self.readers)
            if credential is not None and credentials.use_to_note(credential):
                return None  # Flask records the use
        if credential is None:
            return None
        claims = lookup.claims(credential, f"{scheme}://{host}")
        body = (_JSON.encode(claims) + "\n").encode()
        headers = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            (logs.REQUEST_ID_HEADER, logs.choose_request_id(environ.get("HTTP_X_REQUEST_ID", ""))),
            *deployment.protective_header_values(scheme == "https", self.hsts_max_age),
        ]
        return body, headers

    def _proven(self, environ: dict[str, Any], kind: str, origin: str, token: str, credential: Any) -> bool:
        """A DPoP-bound token with the DPoP scheme and a valid proof for this request (RFC 9449 7).

        Anything else (a bound token as Bearer, an unbound one as DPoP, no proof or a refused
        one) is Flask's to refuse: every check that can fail comes before the proof's jti is
        spent, so Flask finds the same fault.
        """
        proof = environ.get("HTTP_DPOP")
        if kind != "dpop" or credential.dpop_jkt is None or not proof or "," in proof:  # "," joins two headers
            return False
        url = f"{origin}{environ.get('SCRIPT_NAME', '')}{PATH}"
        with self.flask_app.app_context():
            try:
                proofs.verify(
                    proof,
                    "GET",
                    url,
                    access_token=token,
                    jkt=credential.dpop_jkt,
                    resource=True,
                    fapi2=credential.profile == FAPI2_PROFILE,
                )
            except (proofs.DPoPError, *REDIS_DOWN):
                return False
        return True

    @property
    def readers(self) -> Readers:
        # Made by create_app after this layer is in place (readers.init_app).
        return cast(Readers, self.flask_app.extensions[READERS])


def init_app(app: Flask) -> None:
    """Put the fast path in front of Flask, when the database is PostgreSQL."""
    if settings(app).database_url.startswith("postgresql"):
        app.wsgi_app = InspectFastPath(app, app.wsgi_app)  # type: ignore[method-assign]


def database_error_left() -> DBAPIError | PoolTimeoutError | None:
    """The database error the fast path met on this request, for inspect's view to raise (503), once."""
    failed: DBAPIError | PoolTimeoutError | None = request.environ.pop(_DATABASE_ERROR, None)
    return failed
