"""Users of a domain: create, change (passwords, rights, disabling), delete, end their tokens."""

from __future__ import annotations

from typing import Any

from authsvc.account import verification
from authsvc.admin.actors import Actor, audit_change, commit, require_change_of_user, save_new
from authsvc.admin.schemas import read, target_domain
from authsvc.auth import sessions, signin
from authsvc.core import actors, dependents
from authsvc.core.database import db
from authsvc.core.errors import Conflict, ValidationFailed
from authsvc.core.models import Domain, User
from authsvc.sso import delegated
from authsvc.tokens import api_keys, revocation

SYSTEM_ADMIN_SERVICE_ACCOUNT = "a system admin cannot be a service account"


def _check_flags(actor: Actor, values: dict[str, Any], problems: dict[str, str], user: User | None = None) -> None:
    if values.get("system_admin") is not None and not actor.system_admin:
        problems["system_admin"] = "only a system admin may grant or remove it"
    # A service account's password grant, and the client_credentials tokens of the applications bound to it,
    # act as the account: a system admin's would lend every domain to whoever holds such an application.
    system_admin, service_account = values.get("system_admin"), values.get("service_account")
    if system_admin is None:
        system_admin = user is not None and user.system_admin
    if service_account is None:
        service_account = user is not None and user.service_account
    if system_admin and service_account:
        field = "service_account" if values.get("service_account") else "system_admin"
        problems.setdefault(field, SYSTEM_ADMIN_SERVICE_ACCOUNT)


def create_user(actor: Actor, data: Any) -> User:
    from authsvc.admin.schemas.users import UserCreate

    domain = target_domain(actor, data)
    values = read(UserCreate, data).given()
    values.pop("domain", None)
    email, password = values.pop("email"), values.pop("password", None)
    problems: dict[str, str] = {}
    _check_flags(actor, values, problems)
    if signin.find_user(domain, email):
        problems["email"] = "a user with this e-mail already exists in the domain"
    if problems:
        raise ValidationFailed(problems)
    # An admin (the API, the console, the command line) vouches for the address they type.
    user = User(domain_id=domain.id, email=email, email_verified=True, **{"name": "", **values})
    if password:
        user.set_password(password)
    save_new(actor, user, "user", domain.id, f"a user with e-mail {email!r}")
    return user


def update_user(actor: Actor, user: User, data: Any) -> User:
    """Change a user; a new password or disabling ends the user's sessions and tokens, a new address
    is unverified until its owner follows the link sent to it."""
    return update_user_counting_revoked(actor, user, data)[0]


def update_user_counting_revoked(actor: Actor, user: User, data: Any) -> tuple[User, int]:
    """As ``update_user``, and how many tokens the change revoked (the command line prints it)."""
    from authsvc.admin.schemas.users import UserChange

    require_change_of_user(actor, user)
    before = user.as_json()
    values = read(UserChange, data).given()
    email, password, disabled = values.pop("email", None), values.pop("password", None), values.pop("disabled", None)
    problems: dict[str, str] = {}
    _check_flags(actor, values, problems, user)
    if email and email != user.email and signin.find_user(user_domain(user), email):
        problems["email"] = "a user with this e-mail already exists in the domain"
    if user.id == actor.user_id:
        # An admin who demotes or disables themselves locks themselves out.
        if disabled is True:
            problems["disabled"] = "you cannot disable yourself"
        if values.get("admin") is False or values.get("system_admin") is False:
            problems["admin"] = "you cannot remove your own admin rights"
    if problems:
        raise ValidationFailed(problems)
    new_address = bool(email) and email != user.email
    if new_address:
        # Nobody confirmed the new address yet (an admin who did says so with email_verified).
        user.email, user.email_verified = email, False
    for attr, value in values.items():
        setattr(user, attr, value)
    if new_address and not user.email_verified:
        verification.send_link(user, user_domain(user))
    revoked = 0
    if password:
        revoked += sessions.change_password(user, password)
    if disabled is True and not user.disabled:
        revoked += sessions.disable(user)
    elif disabled is False and user.disabled:
        sessions.enable(user)
    after = (
        user.as_json()
        | ({"password_changed": True} if password else {})
        | ({"revoked_tokens": revoked} if revoked else {})
    )
    audit_change(actor, "user.updated", user.domain_id, actors.of_user(user.id), before, after)
    commit("that user")
    return user, revoked


def user_domain(user: User) -> Domain:
    return db.session.get_one(Domain, user.domain_id)  # the user's domain: its foreign key


def delete_user(actor: Actor, user: User) -> None:
    require_change_of_user(actor, user)
    if user.id == actor.user_id:
        raise Conflict("you cannot delete yourself")
    before = user.as_json()
    revocation.delete_of_users(user.id)
    api_keys.delete_of_user(user.id)
    # Everything else of the user's (approvals, links, factors, group memberships, e-mailed links);
    # an application bound to the account is left unbound: its client_credentials grant stops.
    dependents.delete_referrers("user", user.id)
    sessions.invalidate_sessions(user)
    db.session.delete(user)
    audit_change(actor, "user.deleted", int(before["domain"]), actors.of_user(before["id"]), before=before)
    db.session.commit()


def revoke_user_tokens(actor: Actor, user: User) -> int:
    require_change_of_user(actor, user)
    revoked = sessions.end_everything(user)
    audit_change(
        actor, "user.tokens_revoked", user.domain_id, actors.of_user(user.id), after={"revoked_tokens": revoked}
    )
    db.session.commit()
    return revoked


def user_resource_token(actor: Actor, user: User, provider_id: str | None) -> delegated.ResourceToken:
    """Another user's delegated provider token: acting as that user, so only for who may change the user."""
    require_change_of_user(actor, user)
    return delegated.resource_token(user, provider_id)


def clear_user_resource_tokens(actor: Actor, user: User) -> int:
    require_change_of_user(actor, user)
    return delegated.clear_tokens(user)
