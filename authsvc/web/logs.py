"""Logging: one line per record, each with the request's id; secrets scrubbed before formatting.

``AUTHSVC_LOG_FORMAT`` chooses the line: a JSON object (``json``, the default, for a
deployment's log pipeline) or text a person reads at a terminal (``text``, what
``./scripts/run`` sets). The same formatter serves the app and gunicorn
(``config/gunicorn.py``), so the access log takes the same form, with the request
id of the response.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
from datetime import UTC, datetime
from typing import Any

from flask import Flask, Response, has_request_context, request

from authsvc.core import tracing
from authsvc.core.audit import scrub
from authsvc.core.request_state import state
from authsvc.core.settings import settings

REQUEST_ID_HEADER = "X-Request-Id"
# An incoming id is kept only when it cannot smuggle anything into a log line
# or a header: short, and from a safe alphabet (UUIDs, trace ids, ULIDs).
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")

# gunicorn's access log atoms that are safe to write: never the query string
# (the platform's code exchange carries the code there: docs/platform.md), cookies or Authorization.
_ACCESS_FIELDS = {
    "h": "remote",
    "m": "method",
    "U": "path",
    "s": "status",
    "B": "bytes",
    "M": "duration_ms",
    "a": "user_agent",
    "{x-request-id}o": "request_id",
    "{authsvc.trace_id}e": "trace_id",
}
_NUMERIC_FIELDS = {"status", "bytes", "duration_ms"}


def request_id() -> str | None:
    """The id of the current request: the client's ``X-Request-Id`` if well formed, else a new one."""
    if not has_request_context():
        return None
    noted = state()
    if noted.request_id is None:
        noted.request_id = choose_request_id(request.headers.get(REQUEST_ID_HEADER, ""))
    return noted.request_id


def choose_request_id(incoming: str) -> str:
    """``incoming`` (a client's ``X-Request-Id``) if well formed, else a new id."""
    return incoming if _VALID_REQUEST_ID.fullmatch(incoming) else secrets.token_hex(16)


def _access_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The safe fields of a gunicorn access record (never the query string, cookies or Authorization)."""
    fields: dict[str, Any] = {}
    if isinstance(record.args, dict):
        for atom, field in _ACCESS_FIELDS.items():
            value = record.args.get(atom)
            if value in (None, "-"):
                continue
            fields[field] = int(value) if field in _NUMERIC_FIELDS and str(value).isdigit() else value
    return fields


class ServiceFormatter(logging.Formatter):
    """The service's own formatters (either form): the root logger has one when logging is set up."""


class TextFormatter(ServiceFormatter):
    """``00:35:47 warning authsvc.core.store: message``: what a person reads at a terminal.

    A request's line ends with its id; an access record is ``GET /path 200 512 B 3 ms``.
    """

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S")
        if record.name == "gunicorn.access":
            access = _access_fields(record)
            text = (
                f"{access.get('method', '-')} {access.get('path', '-')} {access.get('status', '-')} "
                f"{access.get('bytes', 0)} B {access.get('duration_ms', '-')} ms"
            )
            trace_id = access.get("trace_id")
        else:
            text = f"{record.name}: {record.getMessage()}"
            rid = request_id()
            if rid:
                text += f" (request {rid})"
            trace_id = tracing.trace_id()
        if trace_id is not None:
            text += f" (trace {trace_id})"
        line = f"{when} {record.levelname.lower():<7} {text}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(ServiceFormatter):
    """``{"ts", "level", "logger", "message", "request_id", ...}``, one line per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "process": record.process,
        }
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            entry["message"] = "request"
            entry.update(_access_fields(record))
        else:
            entry["message"] = record.getMessage()
            entry["request_id"] = request_id()
        trace_id = tracing.trace_id()
        if trace_id is not None:
            entry["trace_id"] = trace_id
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def _scrub_args(args: Any) -> Any:
    if isinstance(args, dict):
        return scrub(args)
    if isinstance(args, tuple):
        return tuple(scrub(a) if isinstance(a, dict) else a for a in args)
    return args


FORMATTERS: dict[str, type[ServiceFormatter]] = {"json": JsonFormatter, "text": TextFormatter}


def install(log_format: str = "json") -> None:
    """Scrub secrets from every log record of the process, and write records in ``log_format`` if nobody else does.

    Libraries log whole token responses at DEBUG (Authlib: "Issue token %r");
    the record factory redacts secret keys in dict arguments before any
    handler formats them. The record factory is the process's (logging has one
    per process), so it is installed once per process, whatever number of apps
    are built: the factory in place says whether it is ours.
    """
    make_record = logging.getLogRecordFactory()
    if getattr(make_record, "scrubs_secrets", False):
        return

    def scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        # Not gunicorn's access records: their arguments are every header of
        # the request and the answer, keyed "{name}i" (no key scrub would
        # match), and JsonFormatter writes only the safe fields of them.
        if record.name != "gunicorn.access":
            record.args = _scrub_args(record.args)
        return record

    scrubbed_record.scrubs_secrets = True  # type: ignore[attr-defined]  # a mark on the factory
    logging.setLogRecordFactory(scrubbed_record)
    # Alembic 1.17 announces each of its plugins at INFO on every command,
    # seven lines of noise around every CLI command's answer.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    root = logging.getLogger()
    if not any(isinstance(h.formatter, ServiceFormatter) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(FORMATTERS[log_format]())
        root.addHandler(handler)


def init_app(app: Flask) -> None:
    install(settings(app).log_format)
    logging.getLogger().setLevel(settings(app).log_level)

    @app.after_request
    def add_request_id(response: Response) -> Response:
        response.headers[REQUEST_ID_HEADER] = request_id()
        return response
