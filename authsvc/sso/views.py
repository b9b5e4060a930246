"""Single sign-on (docs/platform.md#single-sign-on): GET /auth/oauth2?id= starts it, the callback finishes it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, jsonify, make_response, redirect, request, url_for
from flask_babel import gettext as _

from authsvc.api import lookup
from authsvc.auth import reauth, sessions
from authsvc.core import security
from authsvc.core.errors import SsoError, answer
from authsvc.core.headers import NO_REFERRER, uncached
from authsvc.core.models import Domain, SsoProvider, User
from authsvc.core.policy import Rate, rate_limited
from authsvc.core.security import safe_continue
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.sso import delegated, flow, providers, saml_flow, saml_slo
from authsvc.sso.forms import LinkForm
from authsvc.web.deployment import client_address
from authsvc.web.pages import page

bp = Blueprint("sso", __name__, url_prefix="/auth/oauth2")
# The caller's own delegated provider tokens (docs/platform.md#delegated-permissions), on the platform's API.
resource_tokens = Blueprint("resource_tokens", __name__, url_prefix="/api/engine/v2")

# Binds a flow to the browser that started it; read only by the callback.
FLOW_COOKIE = "authsvc_sso"


def callback_url() -> str:
    return url_for("sso.callback", _external=True)


@bp.get("")
@rate_limited(Rate.SSO_START_ADDRESS)
def start() -> Response:
    domain = current_domain()
    provider = providers.find_provider(domain, request.args.get("id"))
    if provider is None:
        return _unknown_provider(domain)
    continue_url = safe_continue(request.args.get("continue"), issuer(), default="")
    return _redirect_to_provider(domain, provider, continue_url, None)


@bp.route("/link", methods=["GET", "POST"])
def link() -> Response:
    """A signed-in user links their account at a provider: confirm (CSRF-protected), then sign in there.

    A plain GET never starts it: a link from elsewhere could otherwise tie the
    victim's account to an account at the provider that someone else holds.
    """
    domain = current_domain()
    provider = providers.find_provider(domain, request.values.get("id"))
    if provider is None:
        return _unknown_provider(domain)
    user = sessions.session_user(domain)
    if user is None:
        back: dict[str, Any] = {"continue": url_for("sso.link", id=provider.id)}
        return make_response(redirect(url_for("auth.login_page", **back), 303))
    # Linking adds a way into the account: it needs a recent sign-in, like a new factor.
    stale = reauth.required(user, domain, url_for("sso.link", id=provider.id))
    if stale is not None:
        return stale
    form = LinkForm()
    if request.method == "POST" and form.validate_on_submit():
        return _redirect_to_provider(domain, provider, "", user)
    return page(
        "sso_link.html", 200 if request.method == "GET" else 400, domain=domain, form=form, provider=provider, user=user
    )


def _unknown_provider(domain: Domain) -> Response:
    return page(
        "message.html",
        404,
        domain=domain,
        title=_("Unknown sign-in provider"),
        message=_("This sign-in option does not exist here."),
        link=url_for("auth.login_page"),
    )


def _redirect_to_provider(domain: Domain, provider: SsoProvider, continue_url: str, link_user: User | None) -> Response:
    # Before the provider's discovery document is fetched: a refused start costs nothing.
    flow.refuse_if_holding_too_many_flows()
    browser = security.new_secret()
    try:
        holder = client_address()
        if provider.kind == "saml":
            target = saml_flow.start(domain, provider, continue_url, browser, holder, link_user=link_user)
        else:
            target = flow.start(provider, callback_url(), continue_url, browser, holder, link_user=link_user)
    except SsoError as exc:
        return page(
            "message.html",
            answer(exc).status,
            domain=domain,
            # Marked where they are raised (N_); a provider's own words have no translation and show as they are.
            title=_(exc.title),
            message=_(exc.message),
            link=url_for("auth.login_page"),
        )
    response = make_response(redirect(target, 302 if link_user is None else 303))
    uncached(response, referrer_policy=NO_REFERRER)
    # SameSite=Lax: the provider's redirect back is a top-level GET, which carries it
    # (for SAML, our own redirect after the IdP's cross-site POST: see saml_flow).
    response.set_cookie(
        FLOW_COOKIE,
        browser,
        max_age=settings().sso_flow_ttl,
        path=bp.url_prefix,
        httponly=True,
        secure=settings().cookie_secure,
        samesite="Lax",
    )
    return response


@bp.get("/callback")
def callback() -> Response:
    domain = current_domain()
    return signed_in_or_refused(
        domain,
        lambda: flow.finish(
            domain,
            request.args.get("state"),
            request.args.get("code"),
            request.args.get("error"),
            request.cookies.get(FLOW_COOKIE),
            sessions.session_user(domain),
        ),
    )


def signed_in_or_refused(domain: Domain, finish: Callable[[], Any]) -> Response:
    """The end of a single sign-on of any protocol: a session and ``continue``, or what went wrong."""
    try:
        signed_in = finish()
    except providers.ProviderRefused as exc:
        # Back to the sign-in page, which words the message itself: nothing
        # the provider sent is shown to the user.
        code = exc.error if re.fullmatch(r"[a-z_]{1,40}", exc.error) else "provider_error"
        return make_response(redirect(url_for("auth.login_page") + "?" + urlencode({"sso_error": code}), 303))
    except SsoError as exc:
        return page(
            "message.html",
            answer(exc).status,
            domain=domain,
            # Marked where they are raised (N_); a provider's own words have no translation and show as they are.
            title=_(exc.title),
            message=_(exc.message),
            link=url_for("auth.login_page"),
        )
    response = make_response(redirect(signed_in.continue_url or url_for("auth.login_page"), 303))
    uncached(response, referrer_policy=NO_REFERRER)
    session_id = sessions.start_session(response, signed_in.user, domain, amr=["fed"], saml=signed_in.saml or None)
    if signed_in.saml:
        saml_slo.remember(domain, session_id, signed_in.saml)
    response.delete_cookie(FLOW_COOKIE, path=bp.url_prefix)
    return response


# Delegated provider tokens


def resource_token_response(fetch: Callable[[str | None], delegated.ResourceToken]) -> Response:
    # A token that cannot be handed out raises what happened (delegated.resource_token), answered by the table.
    response = jsonify(fetch(request.args.get("provider")).as_json())
    uncached(response)
    return response


def _own_delegating_user() -> User:
    """The caller's user, for a credential granted the ``resource_token`` scope."""
    credential = lookup.authenticate(current_domain())
    lookup.require_scopes(credential, "resource_token")
    return credential.user


@resource_tokens.post("/users/resource_token")
def own_resource_token() -> Response:
    """The caller's own delegated provider token (docs/platform.md#delegated-permissions)."""
    user = _own_delegating_user()
    return resource_token_response(lambda provider: delegated.resource_token(user, provider))


@resource_tokens.delete("/users/resource_token")
def clear_own_resource_token() -> Response:
    return jsonify(cleared=delegated.clear_tokens(_own_delegating_user()))
