"""``/auth/device``: where a signed-in person enters a device's user code and approves or denies it (RFC 8628 3.3).

Wrong user codes count against the person's account and the client address,
and lock them out as wrong passwords do (authsvc.auth.lockouts, kind ``device``).
Only the CSRF-protected POSTs try a code: a GET with ``user_code`` (from
verification_uri_complete) only fills in the form, so a link from another site
can neither probe codes nor spend the person's failures.
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, Response, make_response, redirect, request
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from authsvc.auth import lockouts, sessions
from authsvc.core import actors, audit
from authsvc.core.errors import LockedOut, answer
from authsvc.core.models import RESERVED_SCOPES, Application, Domain, User
from authsvc.core.policy import Rate, posted, rate_limited
from authsvc.core.tenancy import current_domain
from authsvc.oauth.device import DevicePending, decide, pending_by_user_code
from authsvc.oauth.forms import DeviceCodeForm, DeviceDecisionForm
from authsvc.oauth.server import authorization_server
from authsvc.web import i18n
from authsvc.web.pages import page

bp = Blueprint("device", __name__, url_prefix="/auth/device")

# The entry field's length (DeviceCodeForm): longer text in a link is cut, not echoed whole.
MAX_USER_CODE = 20
UNKNOWN_CODE = _l("That code is not valid, has expired, or was answered already. Check the code on the device.")


def _entry_page(domain: Domain, user: User, form: DeviceCodeForm, error: str | None = None, status: int = 200):
    return page("device.html", status, domain=domain, user=user, form=form, error=error, application=None)


def _decision_page(domain: Domain, user: User, application: Application, pending: DevicePending, user_code: str):
    form = DeviceDecisionForm(formdata=None, user_code=user_code)
    scopes = pending.scope.split()
    return page(
        "device.html",
        domain=domain,
        user=user,
        form=form,
        application=application,
        scopes=scopes,
        reserved=RESERVED_SCOPES,
        error=None,
    )


def _find(domain: Domain, user: User, user_code: str) -> tuple[DevicePending, Application] | None:
    """The request the code stands for; a wrong code counts as a failure. Raises LockedOut while locked."""
    lockouts.refuse_if_locked_out(domain, user.email, kind="device")
    pending = pending_by_user_code(user_code)
    application = None
    if pending is not None and pending.domain_id == domain.id:
        application = authorization_server().query_client(pending.client_id)
    if pending is None or application is None:
        lockouts.note_failure(domain, user.email, user, kind="device")
        return None
    return pending, application


def _locked_page(domain: Domain, user: User, exc: LockedOut) -> Response:
    refused = answer(exc)
    response = _entry_page(domain, user, DeviceCodeForm(formdata=None), i18n.refusal(refused), refused.status)
    response.headers.update(refused.headers)
    return response


def _signed_in(domain: Domain) -> User | None:
    return sessions.session_user(domain)


def _sign_in_first() -> Response:
    return make_response(redirect("/auth/login?" + urlencode({"continue": request.full_path}), 303))


@bp.route("", methods=["GET", "POST"], endpoint="verify")
# A user code is entered by posting the form; a GET with ``user_code`` only fills it in.
@rate_limited(Rate.DEVICE_VERIFY_ADDRESS, attempt=posted)
def verify() -> Response:
    """Enter the code (GET with ``user_code``, from verification_uri_complete, fills it in)."""
    domain = current_domain()
    user = _signed_in(domain)
    if user is None:
        return _sign_in_first() if request.method == "GET" else make_response(redirect("/auth/device", 303))
    if request.method == "GET":
        # Pre-filled, never looked up: the person still presses Continue (a CSRF-protected POST).
        prefill = request.args.get("user_code", "")[:MAX_USER_CODE]
        return _entry_page(domain, user, DeviceCodeForm(formdata=None, user_code=prefill))
    form = DeviceCodeForm()
    if not form.validate_on_submit():
        error = _("The form expired. Please try again.") if form.csrf_token.errors else _("Enter the code.")
        return _entry_page(domain, user, form, error, 400)
    user_code = form.user_code.data or ""
    try:
        found = _find(domain, user, user_code)
    except LockedOut as exc:
        return _locked_page(domain, user, exc)
    if found is None:
        return _entry_page(domain, user, DeviceCodeForm(formdata=None, user_code=user_code), UNKNOWN_CODE, 400)
    pending, application = found
    return _decision_page(domain, user, application, pending, user_code)


@bp.post("/decision", endpoint="decide")
@rate_limited(Rate.DEVICE_VERIFY_ADDRESS, attempt=posted)
def decision() -> Response:
    """Allow or deny: the device's next poll gets tokens or access_denied."""
    domain = current_domain()
    user = _signed_in(domain)
    if user is None:
        return make_response(redirect("/auth/device", 303))
    form = DeviceDecisionForm()
    if not form.validate_on_submit():
        return _entry_page(domain, user, DeviceCodeForm(formdata=None), _("The form expired. Please try again."), 400)
    try:
        found = _find(domain, user, form.user_code.data or "")
    except LockedOut as exc:
        return _locked_page(domain, user, exc)
    if found is None:
        return _entry_page(domain, user, DeviceCodeForm(formdata=None), UNKNOWN_CODE, 400)
    pending, application = found
    approved = bool(form.approve.data)
    session = sessions.current_session(domain)
    if not decide(pending, user, approved, session.created if session else 0):
        return _entry_page(domain, user, DeviceCodeForm(formdata=None), UNKNOWN_CODE, 400)
    audit.record(
        "device.approved" if approved else "device.denied",
        domain_id=domain.id,
        actor=actors.of_user(user.id),
        target=actors.of_client(application.client_id),
        details={"scope": pending.scope},
    )
    title = _("Device connected") if approved else _("Request denied")
    message = (
        _("%(application)s may now act for you. You can return to the device.", application=application.name)
        if approved
        else _("%(application)s was not given access.", application=application.name)
    )
    return page("message.html", title=title, message=message, link=None)
