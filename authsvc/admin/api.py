"""The admin API: domains, oauth_apps, users, api_keys, sso, ldap and audit under /api/engine/v2/.

Thin: each view names the verb of ``authsvc.admin``; who may do what, and the
audit record of every change, are decided there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from authlib.oauth2 import OAuth2Error
from flask import Blueprint, Response, jsonify, request
from sqlalchemy import func, select

from authsvc import admin
from authsvc.api import credentials, lookup
from authsvc.core import actors, logo, validation
from authsvc.core.database import db
from authsvc.core.errors import ApiError, NotStaff, UnknownDomain
from authsvc.core.headers import no_store
from authsvc.core.models import (
    ApiKey,
    Application,
    AuditRecord,
    Domain,
    LdapDirectory,
    RegistrationToken,
    SsoProvider,
    User,
)
from authsvc.core.permissions import SUPPORT_OR_ADMIN
from authsvc.core.policy import unbudgeted
from authsvc.core.tenancy import current_domain
from authsvc.sso.views import resource_token_response

bp = unbudgeted(Blueprint("admin_api", __name__, url_prefix="/api/engine/v2"))

MAX_PER_PAGE = 200
T = TypeVar("T")


def current_actor(*scopes: str) -> admin.Actor:
    """The caller, from a bearer token or API key; support or admin permission needed.

    The credential needs the ``admin`` scope, and any other ``scopes`` named.
    """
    credential = lookup.authenticate(current_domain())
    if not credential.permissions & SUPPORT_OR_ADMIN:
        raise NotStaff()
    lookup.require_scopes(credential, "admin", *scopes)
    return admin.Actor(user=credential.user, name=_actor_name(credential), permissions=credential.permissions)


def system_admin_presented() -> bool:
    """Whether the request carries a system admin's valid credential with the ``admin`` scope: for a public
    answer that shows operators more (readyz's servers). Any other credential counts as none, never an error."""
    if not lookup.presented():
        return False
    try:
        return current_actor().system_admin
    except (ApiError, NotStaff, UnknownDomain, OAuth2Error):
        return False


def _actor_name(credential: credentials.Credential) -> str:
    return actors.of_api_key(credential.api_key_id) if credential.api_key_id else actors.of_user(credential.user.id)


def body() -> Any:
    if request.mimetype != "application/json":
        raise ApiError(415, "unsupported_media_type", "Send a JSON body (Content-Type: application/json).")
    try:
        return validation.json_body(request.get_data())
    except validation.Invalid as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None


def image_upload(record_id: str, model: type[T], store: Callable[[admin.Actor, T, bytes], Any]) -> Response:
    """A PUT whose body is the image itself (authsvc.core.logo), for the ``model`` record ``record_id``.

    The limit is set before the credential is read: a body past it is a 413 however the request is made.
    """
    request.max_content_length = logo.MAX_BYTES + 1
    actor = current_actor()
    return jsonify(store(actor, admin.get(actor, model, record_id), request.get_data()))


def _int_arg(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    number = validation.record_id(raw, max_digits=12)
    if number is None or not low <= number <= high:
        raise ApiError(400, "invalid_request", f"'{name}' must be a whole number from {low} to {high}.")
    return number


def _listing(model: type) -> Response:
    actor = current_actor()
    domain_id = _domain_arg()
    text = request.args.get("q")
    if text is not None and (len(text) > 200 or "\x00" in text):
        raise ApiError(400, "invalid_request", "'q' must be at most 200 characters.")
    return jsonify(
        admin.listing(
            actor,
            model,
            text=text,
            page=_int_arg("page", 1, 1, 1_000_000),
            per_page=_int_arg("per_page", 50, 1, MAX_PER_PAGE),
            domain_id=domain_id,
        )
    )


def _domain_arg() -> int | None:
    """The ``domain`` filter of a listing: a domain id, if given."""
    domain = request.args.get("domain")
    if domain is None:
        return None
    domain_id = validation.record_id(domain)
    if domain_id is None:
        raise ApiError(400, "invalid_request", "'domain' must be a domain id.")
    return domain_id


def _created(data: Mapping[str, Any]) -> Response:
    response = jsonify(data)
    response.status_code = 201
    return response


def _resource(name: str, model: type, create: Callable, update: Callable, remove: Callable) -> None:
    """Register list, create, get, update and delete for one kind of record."""

    @no_store
    def list_view() -> Response:
        return _listing(model)

    @no_store
    def create_view() -> Response:
        return _created(create(current_actor(), body()))

    @no_store
    def get_view(record_id: str) -> Response:
        return jsonify(admin.serialise(admin.get(current_actor(), model, record_id)))

    @no_store
    def update_view(record_id: str) -> Response:
        actor = current_actor()
        return jsonify(admin.serialise(update(actor, admin.get(actor, model, record_id), body())))

    @no_store
    def delete_view(record_id: str) -> Response:
        actor = current_actor()
        return jsonify(remove(actor, admin.get(actor, model, record_id)))

    bp.add_url_rule(f"/{name}", f"list_{name}", list_view, methods=["GET"])
    bp.add_url_rule(f"/{name}", f"create_{name}", create_view, methods=["POST"])
    bp.add_url_rule(f"/{name}/<record_id>", f"get_{name}", get_view, methods=["GET"])
    bp.add_url_rule(f"/{name}/<record_id>", f"update_{name}", update_view, methods=["PATCH", "PUT"])
    bp.add_url_rule(f"/{name}/<record_id>", f"delete_{name}", delete_view, methods=["DELETE"])


def _create_domain(actor: admin.Actor, data: Any) -> dict:
    return admin.create_domain(actor, data).as_json()


def _delete_domain(actor: admin.Actor, domain: Domain) -> dict:
    force = request.args.get("force", "").lower() in ("1", "true", "yes")
    domain_id = str(domain.id)
    admin.delete_domain(actor, domain, force)
    return {"deleted": domain_id}


def _create_application(actor: admin.Actor, data: Any) -> dict:
    application, secret = admin.create_application(actor, data)
    return application.as_json() | ({"client_secret": secret} if secret else {})


def _delete_application(actor: admin.Actor, application: Application) -> dict:
    application_id = str(application.id)
    return {"deleted": application_id, "revoked_tokens": admin.delete_application(actor, application)}


def _create_user(actor: admin.Actor, data: Any) -> dict:
    return admin.create_user(actor, data).as_json()


def _delete_user(actor: admin.Actor, user: User) -> dict:
    user_id = str(user.id)
    admin.delete_user(actor, user)
    return {"deleted": user_id}


def _create_api_key(actor: admin.Actor, data: Any) -> dict:
    key, value = admin.create_api_key(actor, data)
    return key.as_json() | {"key": value}


def _revoke_api_key(actor: admin.Actor, key: ApiKey) -> dict:
    admin.revoke_api_key(actor, key)
    return key.as_json()


def _create_sso(actor: admin.Actor, data: Any) -> dict:
    return admin.sso_json(admin.create_sso_provider(actor, data))


def _delete_sso(actor: admin.Actor, provider: SsoProvider) -> dict:
    provider_id = provider.id
    admin.delete_sso_provider(actor, provider)
    return {"deleted": provider_id}


def _create_ldap(actor: admin.Actor, data: Any) -> dict:
    return admin.create_ldap_directory(actor, data).as_json()


def _delete_ldap(actor: admin.Actor, directory: LdapDirectory) -> dict:
    directory_id = directory.id
    admin.delete_ldap_directory(actor, directory)
    return {"deleted": directory_id}


_resource("domains", Domain, _create_domain, admin.update_domain, _delete_domain)
_resource("oauth_apps", Application, _create_application, admin.update_application, _delete_application)
_resource("users", User, _create_user, admin.update_user, _delete_user)
_resource("api_keys", ApiKey, _create_api_key, admin.update_api_key, _revoke_api_key)
_resource("sso", SsoProvider, _create_sso, admin.update_sso_provider, _delete_sso)
_resource("ldap", LdapDirectory, _create_ldap, admin.update_ldap_directory, _delete_ldap)


@bp.post("/ldap/<record_id>/test")
@no_store
def test_ldap_directory(record_id: str) -> Response:
    """Bind as the service and search the base DN now: ``{"id", "ok"}``, with ``error`` when not ok (no secrets)."""
    actor = current_actor()
    return jsonify(admin.check_ldap_directory(actor, admin.get(actor, LdapDirectory, record_id)))


@bp.post("/oauth_apps/<record_id>/regenerate")
@no_store
def regenerate_application_secret(record_id: str) -> Response:
    """A new client secret, shown once in this answer."""
    actor = current_actor()
    application = admin.get(actor, Application, record_id)
    return jsonify(application.as_json() | {"client_secret": admin.regenerate_secret(actor, application)})


@bp.post("/sso/<record_id>/refresh_metadata")
@no_store
def refresh_saml_metadata(record_id: str) -> Response:
    """Refetch a SAML provider's IdP metadata from its URL now (a new IdP signing certificate)."""
    actor = current_actor()
    provider = admin.get(actor, SsoProvider, record_id)
    changed = admin.refresh_saml_metadata(actor, provider)
    return jsonify(admin.sso_json(provider) | {"changed": changed})


@bp.get("/domains/<record_id>/signing_keys")
@no_store
def list_signing_keys(record_id: str) -> Response:
    """The domain's signing keys and their states (no key material)."""
    actor = current_actor()
    return jsonify(keys=admin.signing_keys(actor, admin.get(actor, Domain, record_id)))


@bp.post("/domains/<record_id>/signing_keys/rotate")
@no_store
def rotate_signing_key(record_id: str) -> Response:
    """A new current signing key (``alg``: RS256 by default, or ES256); audited."""
    actor = current_actor()
    domain = admin.get(actor, Domain, record_id)
    data = body() if request.get_data() else {}
    return _created(admin.rotate_signing_key(actor, domain, data))


@bp.get("/registration_tokens")
@no_store
def list_registration_tokens() -> Response:
    """Initial access tokens for dynamic client registration (never their values)."""
    return _listing(RegistrationToken)


@bp.post("/registration_tokens")
@no_store
def create_registration_token() -> Response:
    """A new initial access token; its value is shown once, in this answer."""
    token, value = admin.create_registration_token(current_actor(), body())
    return _created(token.as_json() | {"token": value})


@bp.get("/registration_tokens/<record_id>")
@no_store
def get_registration_token(record_id: str) -> Response:
    return jsonify(admin.get(current_actor(), RegistrationToken, record_id).as_json())


@bp.delete("/registration_tokens/<record_id>")
@no_store
def revoke_registration_token(record_id: str) -> Response:
    """Revoke: no further registration with it; the applications it registered stay."""
    actor = current_actor()
    token = admin.get(actor, RegistrationToken, record_id)
    admin.revoke_registration_token(actor, token)
    return jsonify(token.as_json())


@bp.post("/users/<record_id>/identities")
@no_store
def link_identity(record_id: str) -> Response:
    """Link an account at an SSO provider of the user's domain to the user (system admins only)."""
    actor = current_actor()
    identity = admin.link_identity(actor, admin.get(actor, User, record_id), body())
    return _created({"user": str(identity.user_id), "provider": identity.provider_id, "subject": identity.subject})


@bp.post("/users/<record_id>/revoke")
@no_store
def revoke_user_tokens(record_id: str) -> Response:
    """End every session of the user and revoke all their tokens."""
    actor = current_actor()
    return jsonify(revoked_tokens=admin.revoke_user_tokens(actor, admin.get(actor, User, record_id)))


@bp.put("/domains/<record_id>/mfa_policy")
@no_store
def set_mfa_policy(record_id: str) -> Response:
    """Who of the domain must sign in with a second factor: ``{"require": "off" | "admins" | "all"}``."""
    actor = current_actor()
    domain = admin.set_policy(actor, admin.get(actor, Domain, record_id), body())
    return jsonify(domain=str(domain.id), require=domain.mfa_require)


@bp.post("/users/<record_id>/mfa/reset")
@no_store
def reset_user_factors(record_id: str) -> Response:
    """Remove the user's second factors and recovery codes; their sessions end."""
    actor = current_actor()
    return jsonify(factors_removed=admin.reset_factors(actor, admin.get(actor, User, record_id)))


@bp.get("/audit")
@no_store
def audit_log() -> Response:
    """Audit records, newest first: filters event, actor, target, domain, since, until."""
    actor = current_actor()
    query = select(AuditRecord)
    if not actor.system_admin:
        query = query.where(AuditRecord.domain_id == actor.domain_id)
    for name in ("event", "actor", "target"):
        value = request.args.get(name)
        if value is not None:
            if len(value) > 200 or "\x00" in value:
                raise ApiError(400, "invalid_request", f"'{name}' must be at most 200 characters.")
            column = getattr(AuditRecord, name)
            query = query.where(column.startswith(value[:-1]) if value.endswith("*") else column == value)
    domain_id = _domain_arg()
    if domain_id is not None:
        query = query.where(AuditRecord.domain_id == domain_id)
    since = _int_arg("since", 0, 0, 2**31 - 1)
    until = _int_arg("until", 2**31 - 1, 0, 2**31 - 1)
    query = query.where(AuditRecord.at >= since, AuditRecord.at <= until)
    page, per_page = _int_arg("page", 1, 1, 1_000_000), _int_arg("per_page", 50, 1, MAX_PER_PAGE)
    total = db.session.scalar(select(func.count()).select_from(query.subquery()))
    rows = db.session.scalars(
        query.order_by(AuditRecord.at.desc(), AuditRecord.id.desc()).limit(per_page).offset((page - 1) * per_page)
    )
    return jsonify(items=[r.as_json() for r in rows], total=total, page=page, per_page=per_page)


@bp.post("/users/<user_id>/resource_token")
@no_store
def user_resource_token(user_id: str) -> Response:
    """A user's delegated provider token, for server-side automation with an admin credential."""
    actor = current_actor("resource_token")
    user = admin.get(actor, User, user_id)
    return resource_token_response(lambda provider: admin.user_resource_token(actor, user, provider))


@bp.delete("/users/<user_id>/resource_token")
@no_store
def clear_user_resource_token(user_id: str) -> Response:
    actor = current_actor("resource_token")
    return jsonify(cleared=admin.clear_user_resource_tokens(actor, admin.get(actor, User, user_id)))


# The invitations', trusted issuers' and webhooks' routes join this blueprint (modules of their own).
from authsvc.admin import invitation_api, issuer_api, resource_server_api, webhook_api  # noqa: E402, F401
