"""``/auth/oauth/end_session``: OpenID Connect RP-Initiated Logout 1.0.

An application sends the user here to sign out. With a valid ``id_token_hint``
(one of this domain's ID tokens, expired or not) for the signed-in user, the
session ends at once; otherwise the user is asked first (a CSRF-protected
form), so that a link on another site cannot sign anyone out. The user goes
back to ``post_logout_redirect_uri`` (with ``state``) only when it is
registered exactly for the application the hint or ``client_id`` names;
otherwise a page says they are signed out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from authlib.common.urls import add_params_to_uri
from flask import Blueprint, Response, make_response, redirect, request
from flask_babel import gettext as _

from authsvc.auth import sessions
from authsvc.core.errors import ApiError
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Application, Domain, User
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import keys
from authsvc.oauth.forms import EndSessionForm
from authsvc.oauth.server import authorization_server
from authsvc.web.pages import page

bp = Blueprint("end_session", __name__, url_prefix="/auth/oauth")

PARAMETERS = ("id_token_hint", "client_id", "post_logout_redirect_uri", "state")
MAX_LENGTH = {"id_token_hint": 8000, "client_id": 200, "post_logout_redirect_uri": 2000, "state": 2000}


@dataclass
class LogoutRequest:
    params: dict[str, str]
    hint: dict[str, Any] | None  # the verified ID token's claims
    application: Application | None
    redirect_uri: str | None  # registered for the application: safe to send the user to


def _parameters() -> dict[str, str]:
    source = request.form if request.method == "POST" else request.args
    params = {}
    for name in PARAMETERS:
        value = source.get(name)
        if not value:
            continue
        if len(value) > MAX_LENGTH[name] or not value.isprintable():
            raise ApiError(400, "invalid_request", f"'{name}' is too long or holds control characters.")
        params[name] = value
    return params


def verify_hint(domain: Domain, hint: str) -> dict[str, Any]:
    """The claims of an ID token this domain issued; its expiry does not matter (RP-Initiated Logout 2)."""
    claims = keys.own_id_token_claims(domain, hint, issuer())
    if claims is None:
        raise ApiError(400, "invalid_request", "The id_token_hint is not an ID token of this domain.")
    return claims


def _audiences(claims: dict[str, Any]) -> list[str]:
    aud = claims.get("aud")
    return [aud] if isinstance(aud, str) else [a for a in aud or [] if isinstance(a, str)]


def _read(domain: Domain) -> LogoutRequest:
    params = _parameters()
    hint = verify_hint(domain, params["id_token_hint"]) if "id_token_hint" in params else None
    client_id = params.get("client_id")
    if hint is not None:
        audiences = _audiences(hint)
        if client_id is not None and client_id not in audiences:
            raise ApiError(400, "invalid_request", "The client_id is not an audience of the id_token_hint.")
        client_id = client_id or (audiences[0] if len(audiences) == 1 else hint.get("azp"))
    application = authorization_server().query_client(client_id) if client_id else None
    if client_id and application is None and "client_id" in params:
        raise ApiError(400, "invalid_request", "No such client.")
    uri = params.get("post_logout_redirect_uri")
    # Exact match only, as for redirect URIs: anything else never redirects.
    registered = application is not None and uri in (application.post_logout_redirect_uris or [])
    return LogoutRequest(params, hint, application, uri if registered else None)


def _signed_out(logout: LogoutRequest, domain: Domain) -> Response:
    if logout.redirect_uri:
        state = logout.params.get("state")
        target = add_params_to_uri(logout.redirect_uri, [("state", state)]) if state else logout.redirect_uri
        response = make_response(redirect(target, 303))
        uncached(response, referrer_policy=NO_REFERRER)
        return response
    return page(
        "message.html", domain=domain, title=_("Signed out"), message=_("You are signed out."), link="/auth/login"
    )


def _confirm_page(domain: Domain, user: User, logout: LogoutRequest, form: EndSessionForm, status: int) -> Response:
    return page("end_session.html", status, domain=domain, user=user, application=logout.application, form=form)


@bp.route("/end_session", methods=["GET", "POST"])
def end_session() -> Response:
    domain = current_domain()
    user = sessions.session_user(domain)
    if request.method == "POST" and ("confirm" in request.form or "cancel" in request.form):
        return _answer_confirmation(domain, user)
    logout = _read(domain)
    if user is not None and (logout.hint is None or logout.hint["sub"] != str(user.id)):
        # No hint, or one of someone else: the user says whether to sign out.
        form = EndSessionForm(formdata=None, **logout.params)
        return _confirm_page(domain, user, logout, form, 200)
    response = _signed_out(logout, domain)
    sessions.end_session(response)
    return response


def _answer_confirmation(domain: Domain, user: User | None) -> Response:
    form = EndSessionForm()
    logout = _read(domain)  # the same checks as the first time: the hidden fields are the user agent's
    if user is None:
        return _signed_out(logout, domain)  # nothing left to end (signed out in another tab)
    if not form.validate_on_submit():
        return _confirm_page(domain, user, logout, form, 400)
    if not form.confirm.data:
        return page("message.html", domain=domain, title=_("Still signed in"), message=_("You are still signed in."))
    response = _signed_out(logout, domain)
    sessions.end_session(response)
    return response
