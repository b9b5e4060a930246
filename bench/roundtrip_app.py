"""The round-trip floor: the bare route plus one prepared primary-key SELECT on the service's PostgreSQL.

Inspect cannot answer without asking the database (a revoked credential fails
on its next use, on every worker), so its floor is not the bare route
(``bench/bare_app.py``) but this: the same gunicorn command and settings, one
connection per worker (opened after the fork, autocommit), one SELECT of a
token row by its primary key, prepared on the server from the first request
on, and a small JSON body. bench/README.md, "The floors".
"""

import os
import random

import psycopg
from flask import Flask, Response, jsonify

app = Flask(__name__)

# prepare_threshold=0: the statement is prepared on the server at its first execution.
QUERY = "SELECT id, scope, issued_at, expires_in FROM token WHERE id = %s"
_connection: psycopg.Connection | None = None
_highest_id = 1


def connection() -> psycopg.Connection:
    """This worker's connection (gunicorn forks the workers: each opens its own on its first request)."""
    global _connection, _highest_id
    if _connection is None or _connection.closed:
        _connection = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, prepare_threshold=0)
        _highest_id = _connection.execute("SELECT coalesce(max(id), 1) FROM token").fetchone()[0]
    return _connection


@app.get("/")
def index() -> Response:
    conn = connection()
    row = conn.execute(QUERY, (random.randint(1, _highest_id),)).fetchone()
    response = jsonify({"ok": row is not None, "service": "roundtrip", "scope": ["public"]})
    response.headers["Cache-Control"] = "no-store"
    return response
