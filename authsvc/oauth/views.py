"""The authorisation, token, revocation and introspection endpoints (RFC 6749, RFC 7009, RFC 7662,
docs/platform.md), consent, the user's approvals, and dynamic client registration (RFC 7591, RFC 7592)."""

from __future__ import annotations

from typing import cast

from authlib.oauth2.rfc6749 import AccessDeniedError
from flask import Blueprint, Response, jsonify, make_response, redirect, request
from flask.typing import ResponseReturnValue
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc.api import lookup
from authsvc.auth import approvals, sessions
from authsvc.core import actors
from authsvc.core.database import db, without_transaction
from authsvc.core.errors import ApiError, NoApproval, SignInRequired
from authsvc.core.headers import NO_REFERRER, no_store, uncached
from authsvc.core.models import Application, Consent, Domain, User
from authsvc.core.policy import Rate, cross_site, rate_limited, unbudgeted
from authsvc.core.tenancy import current_domain
from authsvc.oauth import dpop, keys, oidc, oidc_request
from authsvc.oauth.consent_page import consent_view
from authsvc.oauth.forms import ConsentForm
from authsvc.oauth.parameters import parameter
from authsvc.oauth.server import authorization_server
from authsvc.web.pages import page

bp = Blueprint("oauth", __name__, url_prefix="/auth/oauth")


def _finish(response: Response) -> Response:
    # The redirect carries the code: no caching, and no Referer for the application.
    uncached(response, referrer_policy=NO_REFERRER)
    return response


@bp.route("/authorize", methods=["GET", "POST"])
def authorize() -> Response:
    if request.method == "GET":
        # Reads only (the code goes to Redis): no BEGIN/ROLLBACK around them.
        without_transaction()
    # Validate the client and redirect URI first: a bad request is reported
    # at once, not after the user has signed in. The client's lookup finds the
    # domain too, in the same statement (an unknown host is a 404 whatever
    # else is wrong); Authlib's own lookup of it below is answered from the
    # request's memo.
    client_id = request.args.get("client_id")
    if client_id:
        authorization_server().query_client(client_id)
    domain = current_domain()
    user = sessions.session_user(domain)
    # With the user known, OpenID Connect's prompt=none is answered from the session.
    grant = authorization_server().get_consent_grant(end_user=user)
    if oidc_request.needs_sign_in(grant, user, sessions.current_session(domain)):
        return make_response(redirect(oidc_request.sign_in_url(grant, user), 303))
    # Known from here: needs_sign_in sent a request without a signed-in user to sign in (or refused it).
    user = cast(User, user)
    application: Application = grant.client
    scope = grant.request.scope
    # A metadata document's client is whoever serves the document, and an openly registered one whoever
    # registered it: the user is asked every time.
    if (
        grant.authentication.asks_consent
        or application.metadata_document
        or application.openly_registered
        or (application.consent and not _approved(user, application, scope))
    ):
        oidc_request.refuse_consent_page(grant)
        form = ConsentForm()
        if request.method == "GET" or not form.validate_on_submit():
            return page(
                "consent.html",
                200 if request.method == "GET" else 400,
                domain=domain,
                application=application,
                consent=consent_view(domain, application, scope, grant.redirect_uri),
                user=user,
                form=form,
                action=request.full_path,
            )
        if not form.approve.data:
            # An error answered by redirect: its handler spends the request's request_uri and sign-in note.
            raise AccessDeniedError(redirect_uri=grant.redirect_uri, state=grant.request.payload.state)
        _remember_approval(user, application, scope)
    response = authorization_server().create_authorization_response(grant.request, grant=grant, grant_user=user)
    return _finish(response)


def _approved(user: User, application: Application, scope: str) -> bool:
    consent = db.session.scalar(
        select(Consent).where(Consent.user_id == user.id, Consent.application_id == application.id)
    )
    return consent is not None and consent.covers(scope)


def _remember_approval(user: User, application: Application, scope: str) -> None:
    user_id, application_id = user.id, application.id
    if _add_to_approval(user_id, application_id, scope):
        return
    try:
        db.session.add(Consent(user_id=user_id, application_id=application_id, scopes=scope))
        db.session.commit()
    except IntegrityError:
        # The same person approved the same client at the same moment in another request (two tabs, a client
        # that retried): that approval stands, and this one's scopes are added to it.
        db.session.rollback()
        if not _add_to_approval(user_id, application_id, scope):
            raise


def _add_to_approval(user_id: int, application_id: int, scope: str) -> bool:
    """Add ``scope`` to the person's approval of the client, if there is one (committed); whether there was."""
    consent = db.session.scalar(
        select(Consent).where(Consent.user_id == user_id, Consent.application_id == application_id)
    )
    if consent is None:
        return False
    consent.scopes = " ".join(dict.fromkeys(consent.scopes.split() + scope.split()))
    db.session.commit()
    return True


def _password_grant() -> bool:
    """Whether a token request tries a password (the resource owner password grant), for the sign-in rates."""
    return parameter("grant_type") == "password"


# Where the client authenticates: its requests count against it once it has, failures against the address.
_CLIENT_AUTHENTICATES = (Rate.TOKEN_CLIENT, Rate.CLIENT_FAILURE_ADDRESS)


@bp.post("/par")
@rate_limited(*_CLIENT_AUTHENTICATES, parameter=parameter)
def par() -> ResponseReturnValue:
    """RFC 9126: push an authorisation request; the answer's request_uri stands for it at /authorize."""
    current_domain()
    # A request with a DPoP proof (RFC 9449 10.1) learns the nonce for its next one (RFC 9449 8.2).
    return dpop.add_nonce(authorization_server().create_endpoint_response("pushed_authorization"))


@bp.post("/token")
@cross_site
@rate_limited(
    Rate.SIGNIN_ADDRESS,
    Rate.SIGNIN_ACCOUNT,
    *_CLIENT_AUTHENTICATES,
    attempt=_password_grant,
    account="username",
    parameter=parameter,
)
def token() -> ResponseReturnValue:
    # The client's lookup finds the domain too (oauth2.query_client); an
    # unknown host is still a 404, whatever else is wrong with the request.
    # A request with a DPoP proof learns the nonce for its next one (RFC 9449 8.2).
    return dpop.add_nonce(authorization_server().create_token_response())


def _approving_user(domain: Domain) -> User:
    """The user of the session cookie or of a bearer token."""
    if lookup.presented():
        return lookup.authenticate(domain).user
    user = sessions.session_user(domain)
    if user is None:
        raise SignInRequired("Sign in, or present a bearer token.")
    return user


@bp.get("/authorized_applications")
@unbudgeted
@no_store
def authorized_applications() -> Response:
    """The applications the user approved, with the scopes approved (the account page lists more: authsvc.account)."""
    user = _approving_user(current_domain())
    return jsonify(
        applications=[
            {
                "client_id": c.application.client_id,
                "name": c.application.name,
                "scopes": c.scopes,
                "approved_at": c.created_at,
            }
            for c in approvals.approvals(user)
        ]
    )


@bp.delete("/authorized_applications/<client_id>")
@unbudgeted
@no_store
def revoke_authorized_application(client_id: str) -> Response:
    """Withdraw the approval of an application and revoke the user's tokens for it."""
    domain = current_domain()
    user = _approving_user(domain)
    try:
        revoked = approvals.disconnect(user, domain, client_id, actors.of_user(user.id))
    except approvals.NotConnected:
        db.session.rollback()
        raise NoApproval() from None
    db.session.commit()
    return jsonify(client_id=client_id, revoked_tokens=revoked)


@bp.post("/revoke")
@cross_site
def revoke() -> Response:
    current_domain()
    return authorization_server().create_endpoint_response("revocation")


@bp.post("/introspect")
@cross_site
def introspect() -> Response:
    current_domain()
    return authorization_server().create_endpoint_response("introspection")


@bp.get("/jwks")
def jwks() -> Response:
    """The domain's public signing keys (RFC 7517): public, cacheable, never a private part."""
    response = jsonify(keys.public_jwks(current_domain()))
    # Short enough that a relying party sees a new key soon after a rotation
    # (and it refetches on an unknown kid anyway); per Host, as each domain has its own.
    response.headers["Cache-Control"] = "public, max-age=300"
    response.headers["Vary"] = "Host"
    return response


@bp.route("/userinfo", methods=["GET", "POST"])
@no_store
def userinfo() -> ResponseReturnValue:
    """OpenID Connect UserInfo: the claims the access token's scopes allow, for a token with ``openid``."""
    domain = current_domain()
    # 401 with WWW-Authenticate for a missing or bad token; a DPoP-bound one needs a proof with the nonce.
    credential = lookup.authenticate(domain, dpop_nonce=True, any_audience=True)
    if credential.kind != "token":
        raise ApiError(
            401,
            "invalid_token",
            "UserInfo needs an access token issued with the 'openid' scope, not an API key.",
            headers={"WWW-Authenticate": 'Bearer realm="authsvc", error="invalid_token"'},
        )
    lookup.require_scopes(credential, "openid")  # 403 insufficient_scope
    return dpop.add_nonce(jsonify(dict(oidc.user_claims(credential.user, " ".join(credential.scopes)))))


@bp.post("/device_authorization")
@rate_limited(*_CLIENT_AUTHENTICATES, parameter=parameter)
@no_store
def device_authorization() -> Response:
    """RFC 8628 3.1: a device code and a user code; the person answers at /auth/device."""
    current_domain()
    return authorization_server().create_endpoint_response("device_authorization")


@bp.post("/register")
# A registration names no client yet: it counts against its address, also in a rate of registrations alone.
@rate_limited(Rate.TOKEN_CLIENT, Rate.REGISTRATION_ADDRESS, client=lambda: None)
def register() -> Response:
    """RFC 7591: register a client with an initial access token, or openly (authsvc.oauth.registration)."""
    current_domain()
    return authorization_server().create_endpoint_response("client_registration")


@bp.route("/register/<client_id>", methods=["GET", "PUT", "DELETE"])
# Per the client its URL names, and per address: made-up client_ids each have a count of their own.
@rate_limited(Rate.TOKEN_CLIENT, Rate.CLIENT_NAMING_ADDRESS, client=lambda: (request.view_args or {}).get("client_id"))
def client_configuration(client_id: str) -> Response:
    """RFC 7592: read, replace or delete a registration with its registration access token."""
    current_domain()
    return authorization_server().create_endpoint_response("client_configuration")
