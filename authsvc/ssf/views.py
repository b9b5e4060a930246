"""The transmitter's HTTP surface: ``/.well-known/ssf-configuration`` (SSF 1.0 7) and, under the domain's
issuer as its other endpoints are, stream management (SSF 1.0 8.1) and the poll endpoint (RFC 8936).

Every request but the configuration document is a receiver's (authsvc.ssf.receivers); every
refusal is answered ``{"err", "description"}`` (RFC 8935 2.4) with its status: 400 malformed, 401
no usable token, 403 no ``ssf`` scope, 404 no such stream of this receiver, 409 a second stream,
429 a verification too soon.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request, url_for
from sqlalchemy.exc import IntegrityError
from werkzeug.exceptions import HTTPException

from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.headers import no_store, uncached
from authsvc.core.policy import cross_site, writes_errors
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.ssf import streams, waiting
from authsvc.ssf.models import METHODS
from authsvc.ssf.receivers import Receiver, Refused, authenticate, invalid


def refusal(status: int, err: str, description: str) -> Response:
    """RFC 8935 2.4's error body, uncached; every refusal of the transmitter's is one (the app's error
    handlers write theirs with it too: ``writes_errors``)."""
    response = jsonify(err=err, description=description)
    response.status_code = status
    return uncached(response)


bp = writes_errors(refusal)(Blueprint("ssf", __name__))

CONFIGURATION_PATH = "/ssf/streams"


@bp.errorhandler(Refused)
def refused(exc: Refused) -> Response:
    response = refusal(exc.status, exc.err, exc.description)
    if exc.status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer scope="ssf"'
    return response


@bp.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    return refusal(exc.code or 400, "invalid_request", exc.description or exc.name)


def _receiver() -> Receiver:
    return authenticate(current_domain())


def _body() -> Any:
    try:
        return validation.json_body(request.get_data(cache=False), None, allow_nul=False)
    except validation.Invalid as exc:
        raise invalid(str(exc)) from None


def _poll_url(stream_id: str) -> str:
    return issuer() + url_for("ssf.poll", stream_id=stream_id)


def _configuration(stream: streams.SsfStream) -> dict[str, Any]:
    return streams.as_json(stream, _poll_url(stream.id))


@bp.get("/.well-known/ssf-configuration")
def configuration() -> Response:
    """SSF 1.0 7.1: the transmitter's metadata, per domain (the issuer is the request's)."""
    current_domain()
    base = issuer()
    response = jsonify(
        spec_version="1_0",
        issuer=base,
        jwks_uri=base + url_for("oauth.jwks"),
        delivery_methods_supported=list(METHODS),
        configuration_endpoint=base + CONFIGURATION_PATH,
        status_endpoint=base + url_for("ssf.status"),
        add_subject_endpoint=base + url_for("ssf.add_subject"),
        remove_subject_endpoint=base + url_for("ssf.remove_subject"),
        verification_endpoint=base + url_for("ssf.verification"),
        authorization_schemes=[{"spec_urn": "urn:ietf:rfc:6749"}],
        default_subjects="ALL",
    )
    response.headers["Vary"] = "Host"
    return response


@bp.post(CONFIGURATION_PATH)
@cross_site
@no_store
def create_stream() -> tuple[Response, int]:
    receiver = _receiver()
    stream = streams.create(receiver, issuer(), _body())
    try:
        db.session.commit()
    except IntegrityError:
        # Another request of this receiver made its stream first (one per application, a unique key).
        db.session.rollback()
        raise streams.conflict() from None
    return jsonify(_configuration(stream)), 201


@bp.get(CONFIGURATION_PATH)
@no_store
def read_stream() -> Response:
    receiver = _receiver()
    if "stream_id" in request.args:
        return jsonify(_configuration(streams.find(receiver, request.args["stream_id"])))
    return jsonify([_configuration(stream) for stream in streams.mine(receiver)])


@bp.route(CONFIGURATION_PATH, methods=["PATCH", "PUT"])
@cross_site
@no_store
def update_stream() -> Response:
    receiver = _receiver()
    stream = streams.update(receiver, _body(), replace=request.method == "PUT")
    db.session.commit()
    return jsonify(_configuration(stream))


@bp.delete(CONFIGURATION_PATH)
@cross_site
def delete_stream() -> tuple[str, int]:
    streams.remove(_receiver(), request.args.get("stream_id"))
    db.session.commit()
    return "", 204


@bp.route("/ssf/status", methods=["GET", "POST"])
@cross_site
@no_store
def status() -> Response:
    receiver = _receiver()
    if request.method == "GET":
        return jsonify(streams.status(streams.find(receiver, request.args.get("stream_id"))))
    stream = streams.set_status(receiver, _body())
    db.session.commit()
    return jsonify(streams.status(stream))


def _change_subject(included: bool) -> None:
    """Add or leave out a subject. Two requests naming one subject at once may both find no row and insert
    it: the second, refused by the unique (stream, user) key, is done again, and finds and sets the first's."""
    receiver, body = _receiver(), _body()
    for attempt in range(2):
        streams.change_subject(receiver, body, included=included)
        try:
            db.session.commit()
            return
        except IntegrityError:
            db.session.rollback()
            if attempt:
                raise


@bp.post("/ssf/subjects/add")
@cross_site
def add_subject() -> tuple[str, int]:
    _change_subject(included=True)
    return "", 200


@bp.post("/ssf/subjects/remove")
@cross_site
def remove_subject() -> tuple[str, int]:
    _change_subject(included=False)
    return "", 204


@bp.post("/ssf/verify")
@cross_site
def verification() -> tuple[str, int]:
    streams.verify(_receiver(), _body())
    db.session.commit()
    return "", 204


@bp.post("/ssf/poll/<stream_id>")
@cross_site
@no_store
def poll(stream_id: str) -> Response:
    """RFC 8936 2.4: acknowledge, and take what waits (waiting AUTHSVC_SSF_POLL_WAIT at most for one)."""
    stream = streams.find(_receiver(), stream_id)
    body = _body()
    answer = waiting.poll(stream, {} if body is None else body, settings().ssf_poll_wait)
    db.session.commit()
    return jsonify(answer)
