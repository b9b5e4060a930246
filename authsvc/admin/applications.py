"""Applications (OAuth 2.0 clients) of a domain."""

from __future__ import annotations

import secrets
from typing import Any

from authsvc.admin.actors import (
    Actor,
    audit_change,
    require_change,
    require_change_of_user,
    save_change,
    save_new,
)
from authsvc.admin.schemas import read, target_domain
from authsvc.core import security, validation
from authsvc.core.database import db
from authsvc.core.errors import Conflict, ValidationFailed
from authsvc.core.models import Application, Domain, User
from authsvc.core.settings import settings
from authsvc.oauth import client_authentication, clients, profile


def _service_account(actor: Actor, given: str | None, domain: Domain, problems: dict[str, str]) -> int | None:
    """The ``service_account`` field: the id of an enabled-or-not service account of the domain.

    Binding lends the application the account's powers: it needs the right to change that account.
    """
    if given is None:
        return None
    user_id = validation.record_id(given)
    user = db.session.get(User, user_id) if user_id is not None else None
    if user is None or user.domain_id != domain.id or not user.service_account:
        problems["service_account"] = "must be a service account of the domain"
        return None
    require_change_of_user(actor, user)
    if user.system_admin:
        problems["service_account"] = "a system admin cannot be a service account"
        return None
    return user.id


INTROSPECT_CONFIDENTIAL_ONLY = "only a confidential application may be a resource server (introspect)"
EXCHANGE_CONFIDENTIAL_ONLY = "only a confidential application an admin created may exchange tokens"

# What an application bound to a service account holds that acts as that account: who may change these
# may act as the account, so they need the right to change it (authsvc.admin.actors.require_change_of_user).
ACTING_FIELDS = ("scopes", "jwks", "jwks_uri", "service_account_id")


def _require_change_of_bound_account(actor: Actor, application: Application) -> None:
    if application.service_account_id is not None:
        bound = db.session.get(User, application.service_account_id)
        if bound is not None:
            require_change_of_user(actor, bound)


def _client_keys(changes: dict[str, Any], problems: dict[str, str]) -> dict[str, Any]:
    """``jwks`` or ``jwks_uri``: the public keys of a private_key_jwt application (RFC 7523), which has no secret."""
    jwks, jwks_uri = changes.pop("jwks", None), changes.pop("jwks_uri", None)
    if jwks is None and jwks_uri is None:
        return {}
    allow_private = settings().client_jwks_allow_private_networks
    try:
        return client_authentication.fields(None, jwks, jwks_uri, allow_private=allow_private)
    except validation.Invalid as exc:
        problems["jwks" if jwks is not None else "jwks_uri"] = str(exc)
        return {}


def _application_values(
    actor: Actor, changes: dict[str, Any], domain: Domain, problems: dict[str, str]
) -> dict[str, Any]:
    """The columns the given fields set (``service_account`` becomes ``service_account_id``)."""
    if "service_account" in changes:
        changes["service_account_id"] = _service_account(actor, changes.pop("service_account"), domain, problems)
    if changes.get("backchannel_logout_uri"):
        # The same rule as dynamic registration's: a URL the service calls, kept off private networks.
        allow_private = settings().backchannel_allow_private_networks
        try:
            validation.client_url(
                changes["backchannel_logout_uri"], "backchannel_logout_uri", allow_private=allow_private
            )
        except validation.Invalid as exc:
            problems["backchannel_logout_uri"] = str(exc)
    return changes


def _profile_problems(private_key_jwt: bool, values: dict[str, Any]) -> dict[str, str]:
    """The FAPI 2.0 profile's refusals of an application's settings (docs/fapi.md), by admin field."""
    problems = profile.configuration_problems(
        private_key_jwt=private_key_jwt,
        require_pkce=values.get("require_pkce"),
        allow_plain_pkce=bool(values.get("allow_plain_pkce")),
        grant_types=values.get("grant_types"),
        device=bool(values.get("device")),
        id_token_alg=values.get("id_token_signed_response_alg"),
    )
    # Keys (jwks or jwks_uri) are what make an application private_key_jwt here.
    if "token_endpoint_auth_method" in problems:
        problems["jwks"] = problems.pop("token_endpoint_auth_method")
    return problems


def create_application(actor: Actor, data: Any) -> tuple[Application, str | None]:
    from authsvc.admin.schemas.applications import ApplicationCreate

    domain = target_domain(actor, data)
    given = read(ApplicationCreate, data, domain=domain).given()
    given.pop("domain", None)
    confidential = given.pop("confidential", None)
    problems: dict[str, str] = {}
    keys = _client_keys(given, problems)
    values = _application_values(actor, given, domain, problems)
    if values.get("service_account_id") is None and not values.get("redirect_uris"):
        # A client-credentials application redirects nowhere; any other needs somewhere to.
        problems.setdefault("redirect_uris", "must not be empty" if "redirect_uris" in values else "is required")
    if keys and confidential is False:
        problems["confidential"] = "an application with keys (jwks, jwks_uri) is confidential"
    if values.get("service_account_id") and not (confidential or keys):
        problems["service_account"] = "only a confidential application may have a service account"
    if values.get("introspect") and not (confidential or keys):
        problems["introspect"] = INTROSPECT_CONFIDENTIAL_ONLY
    if values.get("token_exchange") is not None and not (confidential or keys):
        problems["token_exchange"] = EXCHANGE_CONFIDENTIAL_ONLY
    if domain.fapi2:
        # PKCE is the profile's in any case (FAPI 2.0 5.3.2.2 item 5); the setting says so too.
        values.setdefault("require_pkce", True)
        problems.update(_profile_problems(bool(keys), values))
    if problems:
        raise ValidationFailed(problems)
    # Registered keys replace the secret.
    secret = security.new_secret() if confidential and not keys else None
    application = Application(
        domain_id=domain.id,
        client_id=secrets.token_urlsafe(24),
        client_secret_digest=security.digest(secret) if secret else None,
        **{"scopes": "public", "redirect_uris": [], **values, **keys},
    )
    save_new(actor, application, "application", domain.id, "that application")
    return application, secret


def update_application(actor: Actor, application: Application, data: Any) -> Application:
    from authsvc.admin.schemas.applications import ApplicationChange

    require_change(actor, application.domain_id)
    before = application.as_json()
    given = read(ApplicationChange, data, domain=application.domain).given()
    problems = {name: "cannot be changed" for name in ("confidential", "client_id") if name in data}
    # A private_key_jwt application may change its keys (rotation); a secret one cannot trade its secret for keys.
    keys = _client_keys(given, problems)
    if keys and not application.private_key_jwt:
        problems["jwks" if "jwks" in data else "jwks_uri"] = (
            "cannot be added to an application with a secret or none; create a private_key_jwt application"
        )
    values = _application_values(actor, given, application.domain, problems) | keys
    if any(name in values and values[name] != getattr(application, name) for name in ACTING_FIELDS):
        _require_change_of_bound_account(actor, application)
    service_account_id = values.get("service_account_id", application.service_account_id)
    if values.get("redirect_uris") == [] and service_account_id is None:
        problems["redirect_uris"] = "must not be empty"
    if values.get("service_account_id") and not application.confidential:
        problems["service_account"] = "only a confidential application may have a service account"
    if values.get("introspect") and application.registration_token_id is not None:
        # It registered itself: nobody has vouched for it as a resource server of the domain.
        problems["introspect"] = "a dynamically registered client cannot introspect other clients' tokens"
    elif values.get("introspect") and not application.confidential:
        problems["introspect"] = INTROSPECT_CONFIDENTIAL_ONLY
    if values.get("token_exchange") is not None and (
        not application.confidential or application.registration_token_id is not None
    ):
        problems["token_exchange"] = EXCHANGE_CONFIDENTIAL_ONLY
    if application.domain.fapi2:
        # The settings as they would be saved: none may break the profile.
        saved = {
            name: getattr(application, name)
            for name in ("require_pkce", "allow_plain_pkce", "device", "grant_types", "id_token_signed_response_alg")
        }
        problems.update(_profile_problems(application.private_key_jwt, saved | values))
    if problems:
        raise ValidationFailed(problems)
    save_change(actor, application, "application", before, values, what="that application")
    return application


def regenerate_secret(actor: Actor, application: Application) -> str:
    """A new client secret, shown once; the old one stops working at once."""
    require_change(actor, application.domain_id)
    _require_change_of_bound_account(actor, application)
    if not application.confidential:
        raise Conflict("a public application has no secret")
    if application.private_key_jwt:
        raise Conflict("a private_key_jwt application authenticates with its keys, not a secret")
    secret = security.new_secret()
    application.client_secret_digest = security.digest(secret)
    audit_change(actor, "application.secret_regenerated", application.domain_id, f"application:{application.id}")
    db.session.commit()
    return secret


def delete_application(actor: Actor, application: Application) -> int:
    """Delete the application and its tokens; return how many tokens were live."""
    require_change(actor, application.domain_id)
    before = application.as_json()
    live = clients.delete_client(application)
    target = f"application:{before['id']}"
    audit_change(actor, "application.deleted", application.domain_id, target, before=before | {"revoked_tokens": live})
    db.session.commit()
    return live
