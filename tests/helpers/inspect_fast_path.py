"""A request to the inspect endpoint's fast path, for the tests that count what it reads."""

from __future__ import annotations

from tests.helpers import HOST

INSPECT = "/api/engine/v2/api_keys/inspect"


def passed_on(environ, start_response):
    """Stands in for Flask behind the fast path: says that the request reached it."""
    start_response("418 I'm a teapot", [("Content-Type", "text/plain")])
    return [b"reached flask"]


def through_fast_path(app, **request):
    from werkzeug.test import Client
    from werkzeug.wrappers import Response

    from authsvc.api.fastpath import InspectFastPath

    client = Client(InspectFastPath(app, passed_on), Response, use_cookies=False)  # so a Cookie header goes through
    return client.get(INSPECT, base_url=f"https://{HOST}", **request)
