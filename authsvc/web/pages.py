"""Server-rendered pages, all sent with the same protective headers; what their templates share for accessible
forms (docs/accessibility.md)."""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, make_response, render_template

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


# The id of a form's error message (``<p class="error" id="form-error" role="alert">``).
FORM_ERROR = "form-error"


def field_error(error: Any, message_id: str = FORM_ERROR) -> dict[str, str]:
    """A field's attributes while its form shows ``error``: marked invalid, and described by the message,
    so that a screen reader reads the error with the field (WCAG 2.1 3.3.1). Nothing when there is none.

    In a template: ``{{ form.email(autocomplete="email", **field_error(error)) }}``.
    """
    return {"aria-invalid": "true", "aria-describedby": message_id} if error else {}


def init_app(app: Flask) -> None:
    app.jinja_env.globals.update(field_error=field_error, form_error_id=FORM_ERROR)
