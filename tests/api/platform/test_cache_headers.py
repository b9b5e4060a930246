"""The no-store and Referrer-Policy headers come from one place."""

from __future__ import annotations

import pytest
from flask import Blueprint, Flask, jsonify, redirect

from authsvc.core.headers import NO_REFERRER, no_store, uncached


@pytest.fixture
def app() -> Flask:
    app = Flask(__name__)

    @app.get("/plain")
    @no_store
    def plain():
        return jsonify(ok=True)

    @app.get("/tuple")
    @no_store(referrer_policy=NO_REFERRER)
    def as_tuple():
        return {"ok": True}, 201

    @app.get("/redirect")
    @no_store(referrer_policy=NO_REFERRER)
    def moved():
        return redirect("https://rp.example/cb?code=x", 303)

    @app.get("/raises")
    @no_store
    def raises():
        raise ValueError("answered by the error handler")

    @app.errorhandler(ValueError)
    def handled(exc):
        return jsonify(error="bad"), 400

    @app.get("/cacheable")
    def cacheable():
        response = jsonify(keys=[])
        response.headers["Cache-Control"] = "public, max-age=300"
        return response

    whole = Blueprint("whole", __name__, url_prefix="/whole")
    whole.after_request(uncached)
    whole.add_url_rule("/a", "a", lambda: "a")
    app.register_blueprint(whole)
    return app


def test_a_marked_view_is_never_stored(app):
    client = app.test_client()
    answer = client.get("/plain")
    assert answer.headers["Cache-Control"] == "no-store"
    assert "Referrer-Policy" not in answer.headers


def test_the_decorator_keeps_status_and_body_and_adds_the_referrer_policy(app):
    answer = app.test_client().get("/tuple")
    assert answer.status_code == 201
    assert answer.json == {"ok": True}
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.headers["Referrer-Policy"] == "no-referrer"
    moved = app.test_client().get("/redirect")
    assert moved.status_code == 303
    assert moved.headers["Location"] == "https://rp.example/cb?code=x"
    assert moved.headers["Referrer-Policy"] == "no-referrer"


def test_errors_are_left_to_their_handler(app):
    answer = app.test_client().get("/raises")
    assert answer.status_code == 400
    assert "Cache-Control" not in answer.headers


def test_unmarked_views_keep_their_own_caching(app):
    assert app.test_client().get("/cacheable").headers["Cache-Control"] == "public, max-age=300"


def test_a_blueprint_marks_all_of_its_answers(app):
    assert app.test_client().get("/whole/a").headers["Cache-Control"] == "no-store"
