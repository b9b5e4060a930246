"""SAML 2.0 endpoints of a provider: our SP metadata, the ACS, the browser's finishing GET, and Single Logout.

The sign-in starts at GET /auth/oauth2?id= like every other protocol (views.start).
"""

from __future__ import annotations

from flask import Blueprint, Response, make_response, redirect, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.auth import sessions
from authsvc.core.errors import ApiError, SamlLogoutRefused, SamlUnavailable, UnknownSamlProvider
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import SsoProvider
from authsvc.core.policy import cross_site
from authsvc.core.security import safe_continue
from authsvc.core.tenancy import current_domain, issuer
from authsvc.sso import providers, saml, saml_flow, saml_logout, saml_slo
from authsvc.sso.views import FLOW_COOKIE, signed_in_or_refused
from authsvc.web.pages import page

bp = Blueprint("saml", __name__, url_prefix=saml.SAML_PREFIX)

REFUSED_MESSAGE = _l("The identity provider's answer could not be accepted. Start the sign-in again.")


def _saml_provider(provider_id: str) -> SsoProvider:
    provider = providers.find_provider(current_domain(), provider_id)
    if provider is None or provider.kind != "saml":
        raise UnknownSamlProvider()
    return provider


@bp.get("/<provider_id>/metadata")
def metadata(provider_id: str) -> Response:
    """Our SP metadata for this provider: what the IdP's administrator imports."""
    provider = _saml_provider(provider_id)
    try:
        document = saml.metadata_document(provider, current_domain().host)
    except saml.SamlError as exc:
        raise SamlUnavailable(exc.message) from None
    response = Response(document, mimetype="application/samlmetadata+xml")
    response.headers["Content-Disposition"] = f'inline; filename="{provider.id}-sp-metadata.xml"'
    return response


@bp.post("/<provider_id>/acs")
# The IdP's page posts the response (or its LogoutRequest, below) from its own origin.
@cross_site
def acs(provider_id: str) -> Response:
    """The IdP's HTTP-POST: verified here, finished by the browser's own GET (see saml_flow)."""
    domain = current_domain()
    provider = _saml_provider(provider_id)
    try:
        handoff = saml_flow.consume(domain, provider, request.form.get("SAMLResponse"), request.form.get("RelayState"))
    except saml.SamlError as exc:
        title = _("Sign-in provider unavailable") if exc.reason == "xmlsec1_missing" else _("Sign-in refused")
        status = 503 if exc.reason == "xmlsec1_missing" else 400
        message = exc.message if status == 503 else REFUSED_MESSAGE
        return page(
            "message.html", status, domain=domain, title=title, message=message, link=url_for("auth.login_page")
        )
    response = make_response(redirect(url_for("saml.finish", handoff=handoff), 303))
    uncached(response, referrer_policy=NO_REFERRER)
    return response


@bp.get("/finish")
def finish() -> Response:
    domain = current_domain()
    return signed_in_or_refused(
        domain,
        lambda: saml_flow.finish(
            domain, request.args.get("handoff"), request.cookies.get(FLOW_COOKIE), sessions.session_user(domain)
        ),
    )


SLO_FIELDS = ("SAMLRequest", "SAMLResponse", "RelayState", "SigAlg", "Signature")


@bp.route("/<provider_id>/slo", methods=["GET", "POST"])
@cross_site
def slo(provider_id: str) -> Response:
    """Single Logout: the IdP's LogoutRequest (HTTP-Redirect or HTTP-POST), or its LogoutResponse to ours.

    No cookie is read here: a LogoutRequest names whose sessions end (saml_slo),
    and a LogoutResponse is matched to our request by its RelayState.
    """
    domain = current_domain()
    provider = _saml_provider(provider_id)
    binding = saml_logout.REDIRECT if request.method == "GET" else saml_logout.POST
    source = request.args if request.method == "GET" else request.form
    fields = {name: source[name] for name in SLO_FIELDS if source.get(name)}
    if ("SAMLRequest" in fields) == ("SAMLResponse" in fields):
        raise ApiError(400, "invalid_request", "Send one SAMLRequest or one SAMLResponse.")
    # A certificate rollover at the IdP reaches us as it does for sign-ins.
    saml_flow.refresh_if_stale(provider)
    try:
        if "SAMLRequest" in fields:
            answer = saml_slo.idp_logout(domain, provider, binding, fields)
        else:
            target = saml_slo.idp_answered(domain, provider, binding, fields)
    except saml.SamlError as exc:
        if exc.reason == "xmlsec1_missing":
            raise SamlUnavailable(exc.message) from None
        saml_slo.refused(provider, exc.reason)
        raise SamlLogoutRefused(exc.message) from None
    if "SAMLResponse" in fields:
        response = make_response(redirect(safe_continue(target, issuer(), url_for("auth.login_page")), 303))
    elif answer is None:
        return page("message.html", domain=domain, title=_("Signed out"), message=_("You are signed out."))
    elif answer["binding"] == saml_logout.REDIRECT:
        response = make_response(redirect(answer["url"], 303))
    else:
        return page("saml_post.html", domain=domain, action=answer["url"], fields=answer["fields"])
    uncached(response, referrer_policy=NO_REFERRER)
    return response
