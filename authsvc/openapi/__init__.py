"""The OpenAPI 3.1 document of the API, served at /api/engine/v2/openapi.json.

openapi.json is generated (``python -m authsvc.openapi``, or ``make
openapi``) from base.json, written by hand, and the admin schemas; it is
served as a file, so serving it costs no generation.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response

from authsvc.core.policy import unbudgeted

bp = Blueprint("openapi", __name__, url_prefix="/api/engine/v2")

OPENAPI_DOCUMENT = Path(__file__).resolve().parent / "openapi.json"


@bp.get("/openapi.json")
@unbudgeted  # with the admin API it describes (docs/operations.md)
def openapi() -> Response:
    return Response(OPENAPI_DOCUMENT.read_bytes(), mimetype="application/json")
