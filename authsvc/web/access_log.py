"""gunicorn's access log, built from the fields it writes only (``logger_class`` in config/gunicorn.py).

gunicorn's ``Logger.access`` gathers every atom of its format language for
each request (every request and response header, every environ variable, a
strftime of the time) and wraps them for case-insensitive lookup, then
JsonFormatter (authsvc.web.logs) keeps eight of them: on inspect that was
about a tenth of a worker's time. This logger hands the same record (logger
``gunicorn.access``, the format and a dictionary of atoms) to the same
handlers, with only the atoms JsonFormatter writes, so the line is the same.
"""

from __future__ import annotations

import traceback
from datetime import timedelta
from typing import Any

from gunicorn.glogging import Logger

from authsvc.core import tracing

_REQUEST_ID = "x-request-id"


class AccessLogger(Logger):
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: timedelta) -> None:
        if not self.access_log_enabled:
            return
        status = resp.status
        if isinstance(status, str):
            status = status.split(None, 1)[0]
        atoms = {
            "h": environ.get("REMOTE_ADDR", "-"),
            "m": environ.get("REQUEST_METHOD"),
            "U": environ.get("PATH_INFO"),
            "s": status,
            "B": getattr(resp, "sent", None),
            "M": request_time.seconds * 1000 + request_time.microseconds // 1000,
            "a": environ.get("HTTP_USER_AGENT", "-"),
        }
        trace_id = environ.get(tracing.ENVIRON_KEY)
        if trace_id:
            atoms["{authsvc.trace_id}e"] = trace_id  # the request's, its span ended (authsvc.web.traces_sdk)
        headers = resp.headers.items() if hasattr(resp.headers, "items") else resp.headers
        for name, value in headers:
            if name.lower() == _REQUEST_ID:
                atoms["{x-request-id}o"] = value
                break
        try:
            self.access_log.info(self.cfg.access_log_format, atoms)
        except Exception:  # noqa: BLE001 - as gunicorn's own: a log line never fails a request
            self.error(traceback.format_exc())
