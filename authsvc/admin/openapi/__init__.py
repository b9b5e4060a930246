"""The OpenAPI 3.1 document of the API (kept by hand), served at /api/engine/v2/openapi.json."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response

bp = Blueprint("openapi", __name__, url_prefix="/api/engine/v2")

OPENAPI_DOCUMENT = Path(__file__).resolve().parent / "openapi.json"


@bp.get("/openapi.json")
def openapi() -> Response:
    return Response(OPENAPI_DOCUMENT.read_bytes(), mimetype="application/json")
