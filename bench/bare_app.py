"""The stack's ceiling: a bare Flask route returning a small JSON body.

Served by the same gunicorn command and settings as the service
(``gunicorn -c config/gunicorn.py bench.bare_app:app``), so the difference
between the two is what authsvc itself costs per request.
"""

from flask import Flask, Response, jsonify

app = Flask(__name__)


@app.get("/")
def index() -> Response:
    response = jsonify({"ok": True, "service": "bare", "scope": ["public"]})
    response.headers["Cache-Control"] = "no-store"
    return response
