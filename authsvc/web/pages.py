"""Server-rendered pages, all sent with the same protective headers."""

from __future__ import annotations

from typing import Any

from flask import Response, make_response, render_template

# No framing (clickjacking), nothing cached, no referrer leaving for another
# origin, and nothing loaded but our own stylesheet.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
}


def page(template: str, status: int = 200, **context: Any) -> Response:
    """Render ``template`` as a protected HTML page."""
    response = make_response(render_template(template, **context), status)
    response.headers.update(PAGE_HEADERS)
    return response
