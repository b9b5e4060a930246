"""Administration verbs shared by the admin API and the console (SPEC 1: Domains -> Applications).

Who may: an admin credential changes its domain, a support credential reads
it, a system admin reaches every domain. Every change is validated field by
field and saved together with its audit record (before/after, no secrets).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from flask import current_app, has_request_context, url_for
from sqlalchemy import delete, func, or_, select

from authsvc import accounts, audit, delegated, security, sso, validation
from authsvc.database import db, now
from authsvc.models import (
    API_KEY_PERMISSIONS,
    DEFAULT_DOMAIN_SCOPES,
    RESERVED_SCOPES,
    ApiKey,
    Application,
    Consent,
    Domain,
    ExternalIdentity,
    SsoProvider,
    Token,
    User,
)


class Forbidden(Exception):
    """The actor may not do this."""


class NotFound(Exception):
    """No such record, or not one the actor may see."""


class ValidationFailed(Exception):
    """Input that cannot be saved; ``fields`` says why, per field."""

    def __init__(self, fields: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in fields.items()))
        self.fields = fields


class Conflict(Exception):
    """The change would break a rule that holds across records (duplicates, dependants)."""


@dataclass
class Actor:
    """Who acts, and what they may do."""

    user: User
    name: str  # for audit records: "user:12", "api_key:3f9c…"
    permissions: int  # PlaceOS bits: 1 support, 2 admin

    @property
    def system_admin(self) -> bool:
        return self.user.system_admin and bool(self.permissions & 2)

    def can_read(self, domain_id: int) -> bool:
        return self.system_admin or (domain_id == self.user.domain_id and bool(self.permissions & 3))

    def can_change(self, domain_id: int) -> bool:
        return self.system_admin or (domain_id == self.user.domain_id and bool(self.permissions & 2))


def _audit(actor: Actor, event: str, domain_id: int | None, target: str, before: Any = None, after: Any = None) -> None:
    details = {}
    if before is not None:
        details["before"] = before
    if after is not None:
        details["after"] = after
    audit.record(event, domain_id=domain_id, actor=actor.name, target=target, details=details, commit=False)


def _commit(what: str) -> None:
    from sqlalchemy.exc import IntegrityError

    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise Conflict(f"{what} already exists") from None


# Reading input


class Fields:
    """Typed access to a JSON object's fields, collecting every problem before failing."""

    def __init__(self, data: Any, *, partial: bool):
        if not isinstance(data, dict):
            raise ValidationFailed({"body": "must be a JSON object"})
        self.data = data
        self.partial = partial
        self.errors: dict[str, str] = {}

    def has(self, name: str) -> bool:
        return name in self.data

    def _get(self, name: str, required: bool) -> Any:
        # null is missing (validation.json_body); has() still tells an update's
        # explicit null, which resets an optional setting to its default.
        if self.data.get(name) is None:
            if required and not self.partial:
                self.errors[name] = "is required"
            return None
        return self.data[name]

    def string(self, name: str, *, required: bool = False, max_length: int = 200, rule: Any = None) -> str | None:
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, str):
            self.errors[name] = "must be a string"
            return None
        value = value.strip()
        if required and not value:
            self.errors[name] = "must not be empty"
            return None
        if len(value) > max_length or "\x00" in value:
            self.errors[name] = f"must be at most {max_length} characters, without NUL"
            return None
        return self.check(name, rule, value) if rule else value

    def boolean(self, name: str) -> bool | None:
        value = self._get(name, False)
        if value is not None and not isinstance(value, bool):
            self.errors[name] = "must be true or false"
            return None
        return value

    def integer(self, name: str, rule: Any = None) -> int | None:
        value = self._get(name, False)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.errors[name] = "must be a whole number"
            return None
        return self.check(name, rule, value) if rule else value

    def strings(self, name: str, *, required: bool = False, rule: Any = None) -> list[str] | None:
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and 0 < len(v) <= 2000 for v in value):
            self.errors[name] = "must be a list of strings"
            return None
        if required and not value:
            self.errors[name] = "must not be empty"
            return None
        try:
            return list(dict.fromkeys(rule(v) for v in value)) if rule else list(dict.fromkeys(value))
        except validation.Invalid as exc:
            self.errors[name] = str(exc)
            return None

    def mapping(self, name: str) -> dict | None:
        value = self._get(name, False)
        if value is not None and not isinstance(value, dict):
            self.errors[name] = "must be a JSON object"
            return None
        return value

    def check(self, name: str, rule: Any, *args: Any) -> Any:
        try:
            return rule(*args)
        except validation.Invalid as exc:
            self.errors[name] = str(exc)
            return None

    def done(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)


# Lookups within reach


def get(actor: Actor, model: type, record_id: str) -> Any:
    """The record ``record_id`` of ``model``, if the actor may read it; else NotFound."""
    key: Any = record_id
    if model in (Domain, Application, User):
        key = validation.record_id(record_id)
        if key is None:
            raise NotFound()
    elif not validation.text_id(record_id):
        raise NotFound()
    record = db.session.get(model, key)
    if record is None:
        raise NotFound()
    domain_id = record.id if model is Domain else record.domain_id
    if not actor.can_read(domain_id):
        raise NotFound()
    return record


def _require_change(actor: Actor, domain_id: int) -> None:
    if not actor.can_change(domain_id):
        raise Forbidden()


def _require_change_of_user(actor: Actor, user: User) -> None:
    """Like _require_change, and a system admin's account is only a system admin's to change.

    Otherwise an admin of the domain that holds it could reset its password or
    give it an admin key, and reach every domain.
    """
    _require_change(actor, user.domain_id)
    if user.system_admin and not actor.system_admin:
        raise Forbidden()


def listing(actor: Actor, model: type, *, text: str | None, page: int, per_page: int, domain_id: int | None) -> dict:
    """One page of ``model`` records the actor may read, filtered by ``text``."""
    query = select(model)
    domain_column = model.id if model is Domain else model.domain_id
    if not actor.system_admin:
        query = query.where(domain_column == actor.user.domain_id)
    if domain_id is not None:
        query = query.where(domain_column == domain_id)
    if text:
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").lower() + "%"
        columns = {
            Domain: (Domain.name, Domain.host),
            Application: (Application.name, Application.client_id),
            User: (User.email, User.name),
            ApiKey: (ApiKey.name, ApiKey.id),
            SsoProvider: (SsoProvider.name, SsoProvider.id),
        }[model]
        query = query.where(or_(*(func.lower(c).like(pattern, escape="\\") for c in columns)))
    total = db.session.scalar(select(func.count()).select_from(query.subquery()))
    order = model.created_at if model in (ApiKey, SsoProvider) else model.id
    rows = db.session.scalars(query.order_by(order, model.id).limit(per_page).offset((page - 1) * per_page))
    return {"items": [serialise(r) for r in rows], "total": total, "page": page, "per_page": per_page}


def serialise(record: Any) -> dict[str, Any]:
    if isinstance(record, SsoProvider):
        return sso_json(record)
    return record.as_json()


# Domains


def create_domain(actor: Actor, data: Any) -> Domain:
    if not actor.system_admin:
        raise Forbidden()
    fields = Fields(data, partial=False)
    name = fields.string("name", required=True)
    host = fields.string("host", required=True, max_length=253, rule=validation.host)
    scopes = fields.string("scopes", max_length=2000, rule=validation.scopes) or DEFAULT_DOMAIN_SCOPES
    session_ttl = fields.integer("session_ttl", rule=validation.ttl)
    if host and db.session.scalar(select(Domain.id).where(Domain.host == host)):
        fields.errors["host"] = "another domain has this host"
    fields.done()
    domain = Domain(name=name, host=host, scopes=scopes, session_ttl=session_ttl)
    db.session.add(domain)
    db.session.flush()
    _audit(actor, "domain.created", domain.id, f"domain:{domain.id}", after=domain.as_json())
    _commit(f"a domain with host {host!r}")
    return domain


def update_domain(actor: Actor, domain: Domain, data: Any) -> Domain:
    _require_change(actor, domain.id)
    before = domain.as_json()
    fields = Fields(data, partial=True)
    name = fields.string("name", required=True)
    host = fields.string("host", required=True, max_length=253, rule=validation.host)
    scopes = fields.string("scopes", required=True, max_length=2000, rule=validation.scopes)
    session_ttl = fields.integer("session_ttl", rule=validation.ttl)
    if host is not None and host != domain.host:
        if not actor.system_admin:
            fields.errors["host"] = "only a system admin may move a domain to another host"
        elif db.session.scalar(select(Domain.id).where(Domain.host == host)):
            fields.errors["host"] = "another domain has this host"
    if scopes is not None:
        in_use = _scopes_in_use(domain) - set(scopes.split()) - set(RESERVED_SCOPES)
        if in_use:
            fields.errors["scopes"] = f"still used by applications or API keys: {' '.join(sorted(in_use))}"
    fields.done()
    for attr, value in (("name", name), ("host", host), ("scopes", scopes)):
        if value is not None:
            setattr(domain, attr, value)
    if fields.has("session_ttl"):
        domain.session_ttl = session_ttl
    _audit(actor, "domain.updated", domain.id, f"domain:{domain.id}", before, domain.as_json())
    _commit(f"a domain with host {domain.host!r}")
    return domain


def _scopes_in_use(domain: Domain) -> set[str]:
    used: set[str] = set()
    for scopes in db.session.scalars(select(Application.scopes).where(Application.domain_id == domain.id)):
        used.update(scopes.split())
    keys = select(ApiKey.scopes).where(ApiKey.domain_id == domain.id, ApiKey.revoked_at.is_(None))
    for scopes in db.session.scalars(keys):
        used.update(scopes.split())
    return used


def delete_domain(actor: Actor, domain: Domain, force: bool) -> None:
    if not actor.system_admin:
        raise Forbidden()
    has_apps = db.session.scalar(select(func.count()).where(Application.domain_id == domain.id))
    has_users = db.session.scalar(select(func.count()).where(User.domain_id == domain.id))
    if (has_apps or has_users) and not force:
        raise Conflict(f"the domain still has {has_apps} application(s) and {has_users} user(s); delete with force")
    before = domain.as_json()
    users = select(User.id).where(User.domain_id == domain.id).scalar_subquery()
    applications = select(Application.id).where(Application.domain_id == domain.id).scalar_subquery()
    providers = select(SsoProvider.id).where(SsoProvider.domain_id == domain.id).scalar_subquery()
    # Children first: tokens and approvals, keys and links, then users, applications and providers.
    db.session.execute(delete(Token).where(or_(Token.application_id.in_(applications), Token.user_id.in_(users))))
    db.session.execute(delete(Consent).where(or_(Consent.application_id.in_(applications), Consent.user_id.in_(users))))
    db.session.execute(delete(ApiKey).where(ApiKey.domain_id == domain.id))
    db.session.execute(delete(ExternalIdentity).where(ExternalIdentity.provider_id.in_(providers)))
    db.session.execute(delete(ExternalIdentity).where(ExternalIdentity.user_id.in_(users)))
    db.session.execute(delete(User).where(User.domain_id == domain.id))
    db.session.execute(delete(Application).where(Application.domain_id == domain.id))
    db.session.execute(delete(SsoProvider).where(SsoProvider.domain_id == domain.id))
    db.session.delete(domain)
    _audit(actor, "domain.deleted", None, f"domain:{before['id']}", before=before)
    db.session.commit()


# Applications


def _application_fields(fields: Fields, domain: Domain) -> dict[str, Any]:
    values = {
        "name": fields.string("name", required=True),
        "redirect_uris": fields.strings("redirect_uris", required=True, rule=validation.redirect_uri),
        "scopes": fields.string(
            "scopes", max_length=2000, rule=lambda v: validation.scopes(v, domain.assignable_scopes)
        ),
        "consent": fields.boolean("consent"),
        "require_pkce": fields.boolean("require_pkce"),
        "allow_plain_pkce": fields.boolean("allow_plain_pkce"),
        "access_token_ttl": fields.integer("access_token_ttl", rule=validation.ttl),
        "refresh_token_ttl": fields.integer("refresh_token_ttl", rule=validation.ttl),
    }
    return {k: v for k, v in values.items() if v is not None or (fields.has(k) and k.endswith("_ttl"))}


def create_application(actor: Actor, data: Any) -> tuple[Application, str | None]:
    fields = Fields(data, partial=False)
    domain = _domain_field(actor, fields)
    values = _application_fields(fields, domain) if domain else {}
    confidential = fields.boolean("confidential")
    fields.done()
    secret = security.new_secret() if confidential else None
    application = Application(
        domain_id=domain.id,
        client_id=secrets.token_urlsafe(24),
        client_secret_digest=security.digest(secret) if secret else None,
        **{"scopes": "public", **values},
    )
    db.session.add(application)
    db.session.flush()
    _audit(actor, "application.created", domain.id, f"application:{application.id}", after=application.as_json())
    _commit("that application")
    return application, secret


def _domain_field(actor: Actor, fields: Fields) -> Domain | None:
    """The domain named by the body's ``domain`` (an id), or the actor's own; must be changeable."""
    given = fields.string("domain", max_length=20)
    domain_id = validation.record_id(given) if given else actor.user.domain_id
    domain = db.session.get(Domain, domain_id) if domain_id is not None else None
    if domain is None or not actor.can_read(domain.id):
        fields.errors["domain"] = "no such domain"
        return None
    _require_change(actor, domain.id)
    return domain


def update_application(actor: Actor, application: Application, data: Any) -> Application:
    _require_change(actor, application.domain_id)
    before = application.as_json()
    fields = Fields(data, partial=True)
    values = _application_fields(fields, application.domain)
    if fields.has("confidential") or fields.has("client_id"):
        fields.errors["confidential" if fields.has("confidential") else "client_id"] = "cannot be changed"
    fields.done()
    for attr, value in values.items():
        setattr(application, attr, value)
    _audit(actor, "application.updated", application.domain_id, f"application:{application.id}", before,
           application.as_json())  # fmt: skip
    _commit("that application")
    return application


def regenerate_secret(actor: Actor, application: Application) -> str:
    """A new client secret, shown once; the old one stops working at once."""
    _require_change(actor, application.domain_id)
    if not application.confidential:
        raise Conflict("a public application has no secret")
    secret = security.new_secret()
    application.client_secret_digest = security.digest(secret)
    _audit(actor, "application.secret_regenerated", application.domain_id, f"application:{application.id}")
    db.session.commit()
    return secret


def delete_application(actor: Actor, application: Application) -> int:
    """Delete the application and its tokens; return how many tokens were live."""
    _require_change(actor, application.domain_id)
    before = application.as_json()
    live = Token.revoke_where(Token.application_id == application.id)
    db.session.execute(delete(Token).where(Token.application_id == application.id))
    db.session.execute(delete(Consent).where(Consent.application_id == application.id))
    db.session.delete(application)
    target = f"application:{before['id']}"
    _audit(actor, "application.deleted", application.domain_id, target, before=before | {"revoked_tokens": live})
    db.session.commit()
    return live


# Users


def _user_flags(fields: Fields, actor: Actor) -> dict[str, Any]:
    values = {
        "name": fields.string("name"),
        "service_account": fields.boolean("service_account"),
        "admin": fields.boolean("admin"),
        "support": fields.boolean("support"),
        "groups": fields.strings("groups"),
        "system_admin": fields.boolean("system_admin"),
    }
    if values["system_admin"] is not None and not actor.system_admin:
        fields.errors["system_admin"] = "only a system admin may grant or remove it"
    return {k: v for k, v in values.items() if v is not None}


def create_user(actor: Actor, data: Any) -> User:
    fields = Fields(data, partial=False)
    domain = _domain_field(actor, fields)
    email = fields.string("email", required=True, max_length=320, rule=validation.email)
    password = fields.string("password", max_length=1024, rule=validation.password)
    values = _user_flags(fields, actor)
    if domain and email and accounts.find_user(domain, email):
        fields.errors["email"] = "a user with this e-mail already exists in the domain"
    fields.done()
    user = User(domain_id=domain.id, email=email, **{"name": "", **values})
    if password:
        user.set_password(password)
    db.session.add(user)
    db.session.flush()
    _audit(actor, "user.created", domain.id, f"user:{user.id}", after=user.as_json())
    _commit(f"a user with e-mail {email!r}")
    return user


def update_user(actor: Actor, user: User, data: Any) -> User:
    """Change a user; a new password or disabling ends the user's sessions and tokens."""
    _require_change_of_user(actor, user)
    before = user.as_json()
    fields = Fields(data, partial=True)
    email = fields.string("email", required=True, max_length=320, rule=validation.email)
    password = fields.string("password", max_length=1024, rule=validation.password)
    disabled = fields.boolean("disabled")
    values = _user_flags(fields, actor)
    if email and email != user.email and accounts.find_user(user_domain(user), email):
        fields.errors["email"] = "a user with this e-mail already exists in the domain"
    if user.id == actor.user.id:
        # An admin who demotes or disables themselves locks themselves out.
        if disabled is True:
            fields.errors["disabled"] = "you cannot disable yourself"
        if values.get("admin") is False or values.get("system_admin") is False:
            fields.errors["admin"] = "you cannot remove your own admin rights"
    fields.done()
    if email:
        user.email = email
    for attr, value in values.items():
        setattr(user, attr, value)
    revoked = 0
    if password:
        revoked += accounts.change_password(user, password)
    if disabled is True and not user.disabled:
        revoked += accounts.disable(user)
    elif disabled is False:
        user.disabled = False
    after = (
        user.as_json()
        | ({"password_changed": True} if password else {})
        | ({"revoked_tokens": revoked} if revoked else {})
    )
    _audit(actor, "user.updated", user.domain_id, f"user:{user.id}", before, after)
    _commit("that user")
    return user


def user_domain(user: User) -> Domain:
    return db.session.get(Domain, user.domain_id)


def delete_user(actor: Actor, user: User) -> None:
    _require_change_of_user(actor, user)
    if user.id == actor.user.id:
        raise Conflict("you cannot delete yourself")
    before = user.as_json()
    db.session.execute(delete(Token).where(Token.user_id == user.id))
    db.session.execute(delete(Consent).where(Consent.user_id == user.id))
    db.session.execute(delete(ApiKey).where(ApiKey.user_id == user.id))
    db.session.execute(delete(ExternalIdentity).where(ExternalIdentity.user_id == user.id))
    accounts.invalidate_sessions(user)
    db.session.delete(user)
    _audit(actor, "user.deleted", int(before["domain"]), f"user:{before['id']}", before=before)
    db.session.commit()


# API keys


def create_api_key(actor: Actor, data: Any) -> tuple[ApiKey, str]:
    fields = Fields(data, partial=False)
    domain = _domain_field(actor, fields)
    who = fields.string("user", required=True, max_length=320)
    name = fields.string("name", required=True)
    permission = fields.string("permission", max_length=10) or "user"
    if permission not in API_KEY_PERMISSIONS:
        fields.errors["permission"] = f"must be one of {', '.join(API_KEY_PERMISSIONS)}"
    expires_at = fields.integer("expires_at")
    if expires_at is not None and expires_at <= now():
        fields.errors["expires_at"] = "must be in the future"
    elif expires_at is not None and expires_at > validation.MAX_INTEGER:
        fields.errors["expires_at"] = f"must be at most {validation.MAX_INTEGER} (seconds since the epoch)"
    user = None
    if domain and who:
        user = accounts.find_user(domain, who) if "@" in who else _user_by_id(who)
        if user is None or user.domain_id != domain.id:
            fields.errors["user"] = "no such user in the domain"
        else:
            _require_change_of_user(actor, user)
    scopes = (
        fields.string("scopes", max_length=2000, rule=lambda v: validation.scopes(v, domain.assignable_scopes))
        if domain
        else None
    )
    if user is not None and not fields.errors:
        try:
            key, value = ApiKey.issue(user, name, scopes or "public", permission, expires_at)
        except ValueError as exc:
            fields.errors["permission"] = str(exc)
    fields.done()
    db.session.add(key)
    db.session.flush()
    _audit(actor, "api_key.created", domain.id, f"api_key:{key.id}", after=key.as_json())
    _commit("that API key")
    return key, value


def _user_by_id(value: str) -> User | None:
    user_id = validation.record_id(value)
    return db.session.get(User, user_id) if user_id is not None else None


def update_api_key(actor: Actor, key: ApiKey, data: Any) -> ApiKey:
    _require_change_of_user(actor, key.user)
    before = key.as_json()
    fields = Fields(data, partial=True)
    name = fields.string("name", required=True)
    domain = db.session.get(Domain, key.domain_id)
    scopes = fields.string(
        "scopes", required=True, max_length=2000, rule=lambda v: validation.scopes(v, domain.assignable_scopes)
    )
    permission = fields.string("permission", max_length=10)
    if permission is not None and permission not in API_KEY_PERMISSIONS:
        fields.errors["permission"] = f"must be one of {', '.join(API_KEY_PERMISSIONS)}"
    expires_at = fields.integer("expires_at")
    if expires_at is not None and not 0 <= expires_at <= validation.MAX_INTEGER:
        fields.errors["expires_at"] = f"must be seconds since the epoch, from 0 to {validation.MAX_INTEGER}"
    fields.done()
    for attr, value in (("name", name), ("scopes", scopes), ("permission", permission)):
        if value is not None:
            setattr(key, attr, value)
    if fields.has("expires_at"):
        key.expires_at = expires_at
    _audit(actor, "api_key.updated", key.domain_id, f"api_key:{key.id}", before, key.as_json())
    db.session.commit()
    return key


def revoke_api_key(actor: Actor, key: ApiKey) -> None:
    _require_change_of_user(actor, key.user)
    if key.revoked_at is None:
        key.revoked_at = now()
        _audit(actor, "api_key.revoked", key.domain_id, f"api_key:{key.id}")
    db.session.commit()


# SSO providers


def sso_json(provider: SsoProvider) -> dict[str, Any]:
    """The provider, with the URLs an operator registers at the provider and what consent is missing."""
    out = provider.as_json()
    if has_request_context():
        out["callback_url"] = url_for("sso.callback", _external=True)
        consent = sso.admin_consent_url(provider, out["callback_url"])
        if consent:
            out["admin_consent_url"] = consent
    if provider.required_scopes:
        out["missing_scopes"] = sso.check(provider)["missing"]
    return out


SSO_URL_FIELDS = ("issuer", "authorize_url", "token_url", "userinfo_url", "jwks_url")


def _sso_fields(fields: Fields, actor: Actor) -> dict[str, Any]:
    values: dict[str, Any] = {
        "name": fields.string("name", required=True),
        "client_id": fields.string("client_id", required=True, max_length=255),
        "scopes": fields.string("scopes", max_length=2000, rule=validation.scopes),
        "required_scopes": fields.string("required_scopes", max_length=2000),
        "authorize_params": fields.mapping("authorize_params"),
        "profile_mappings": fields.mapping("profile_mappings"),
        "match_rules": fields.mapping("match_rules"),
        "trust_email": fields.boolean("trust_email"),
        "allow_private_network": fields.boolean("allow_private_network"),
        "token_endpoint_auth_method": fields.string("token_endpoint_auth_method", max_length=30),
    }
    for name in SSO_URL_FIELDS:
        values[name] = fields.string(name, max_length=500, rule=lambda v, n=name: validation.provider_url(v, n))
    method = values["token_endpoint_auth_method"]
    if method is not None and method not in ("client_secret_post", "client_secret_basic"):
        fields.errors["token_endpoint_auth_method"] = "must be client_secret_post or client_secret_basic"
    for name in ("profile_mappings", "match_rules"):
        value = values[name]
        if value is not None and not all(
            isinstance(v, list) and all(isinstance(i, str) for i in v) for v in value.values()
        ):
            fields.errors[name] = "must map names to lists of strings"
    params = values["authorize_params"]
    if params is not None:
        problem = sso.authorize_params_problem(params)
        if not all(isinstance(v, str) for v in params.values()):
            fields.errors["authorize_params"] = "must map names to strings"
        elif problem:
            fields.errors["authorize_params"] = problem
    if values["allow_private_network"] and not actor.system_admin:
        # A tenant admin's provider URLs are called from inside our network.
        fields.errors["allow_private_network"] = "only a system admin may allow a provider on private networks"
    return {k: v for k, v in values.items() if v is not None}


def _check_sso_state(fields: Fields, state: dict[str, Any]) -> None:
    """Rules over the whole provider as it would be saved, on create and on every update alike."""
    allowed = state.get("allow_private_network") or current_app.config["AUTHSVC_SSO_ALLOW_PRIVATE_NETWORKS"]
    if not allowed:
        for name in SSO_URL_FIELDS:
            problem = validation.public_url_problem(state[name]) if state.get(name) else None
            if problem:
                fields.errors.setdefault(name, problem)
    problem = sso.email_trust_problem(
        state.get("tenant"), bool(state.get("trust_email")), state.get("match_rules") or {}
    )
    if problem:
        fields.errors["trust_email"] = problem


def create_sso_provider(actor: Actor, data: Any) -> SsoProvider:
    fields = Fields(data, partial=False)
    domain = _domain_field(actor, fields)
    secret = fields.string("client_secret", required=True, max_length=2000)
    preset = fields.string("preset", max_length=20)
    tenant = fields.string("tenant", max_length=100)
    values = _sso_fields(fields, actor)
    base: dict[str, Any] = {}
    if preset == "microsoft":
        # As the CLI's: ASCII letters, digits, dots and dashes (str.isalnum() also takes "ᾢ").
        if not tenant or not all(c in ".-" or (c.isascii() and c.isalnum()) for c in tenant):
            fields.errors["tenant"] = "a Microsoft tenant id or domain is needed"
        else:
            base = sso.microsoft_preset(tenant)
    elif preset:
        fields.errors["preset"] = "the only preset is microsoft"
    elif values.get("issuer"):
        base = {"kind": "oidc"}
    elif all(values.get(n) for n in ("authorize_url", "token_url", "userinfo_url")):
        base = {"kind": "oauth2"}
    else:
        # An issuer given but not valid keeps its own message.
        fields.errors.setdefault("issuer", "give issuer, or authorize_url, token_url and userinfo_url, or a preset")
    _check_sso_state(fields, {**base, **values, "tenant": tenant})
    fields.done()
    merged = {**base, **values}
    merged["profile_mappings"] = {**base.get("profile_mappings", {}), **values.get("profile_mappings", {})}
    merged.setdefault("scopes", "openid email profile" if merged["kind"] == "oidc" else "email profile")
    provider = SsoProvider(
        id=secrets.token_hex(8),
        domain_id=domain.id,
        client_secret_encrypted=security.encrypt(secret),
        **merged,
    )
    db.session.add(provider)
    db.session.flush()
    _audit(actor, "sso.created", domain.id, f"sso:{provider.id}", after=provider.as_json())
    _commit("that SSO provider")
    return provider


def update_sso_provider(actor: Actor, provider: SsoProvider, data: Any) -> SsoProvider:
    _require_change(actor, provider.domain_id)
    before = provider.as_json()
    fields = Fields(data, partial=True)
    secret = fields.string("client_secret", required=True, max_length=2000)
    values = _sso_fields(fields, actor)
    if not actor.system_admin and any(name in values for name in SSO_URL_FIELDS):
        # Where an on-premises provider may be reached was a system admin's
        # decision for the URLs they saw; new URLs from anyone else lose it.
        values["allow_private_network"] = False
    state = ("tenant", "trust_email", "match_rules", "allow_private_network", *SSO_URL_FIELDS)
    _check_sso_state(fields, {**{name: getattr(provider, name) for name in state}, **values})
    fields.done()
    for attr, value in values.items():
        setattr(provider, attr, value)
    if secret:
        provider.client_secret_encrypted = security.encrypt(secret)
    after = provider.as_json() | ({"client_secret_changed": True} if secret else {})
    _audit(actor, "sso.updated", provider.domain_id, f"sso:{provider.id}", before, after)
    db.session.commit()
    return provider


def delete_sso_provider(actor: Actor, provider: SsoProvider) -> None:
    _require_change(actor, provider.domain_id)
    before = provider.as_json()
    db.session.execute(delete(ExternalIdentity).where(ExternalIdentity.provider_id == provider.id))
    db.session.delete(provider)
    _audit(actor, "sso.deleted", provider.domain_id, f"sso:{provider.id}", before=before)
    db.session.commit()


def link_identity(actor: Actor, user: User, data: Any) -> ExternalIdentity:
    """Link an account at one of the user's domain's SSO providers to ``user``: a system admin's step.

    A first SSO sign-in never links itself to a privileged account, or to one
    that already trusts another provider; the account holder (signed in, at
    /auth/oauth2/link) or a system admin does it.
    """
    if not actor.system_admin:
        raise Forbidden()
    fields = Fields(data, partial=False)
    provider_id = fields.string("provider", required=True, max_length=32)
    subject = fields.string("subject", required=True, max_length=255)
    fields.done()
    provider = sso.find_provider(user_domain(user), provider_id)
    if provider is None:
        raise ValidationFailed({"provider": "no such SSO provider in the user's domain"})
    try:
        sso.link_identity(provider, subject, user, actor=actor.name, via="system_admin")
    except sso.ProviderRefused:
        raise Conflict("that account at the provider is already linked to another user") from None
    return db.session.scalar(
        select(ExternalIdentity).where(ExternalIdentity.provider_id == provider.id, ExternalIdentity.subject == subject)
    )


def revoke_user_tokens(actor: Actor, user: User) -> int:
    _require_change_of_user(actor, user)
    revoked = accounts.end_everything(user)
    _audit(actor, "user.tokens_revoked", user.domain_id, f"user:{user.id}", after={"revoked_tokens": revoked})
    db.session.commit()
    return revoked


def user_resource_token(actor: Actor, user: User, provider_id: str | None) -> dict[str, Any]:
    """Another user's delegated provider token: acting as that user, so only for who may change the user."""
    _require_change_of_user(actor, user)
    return delegated.resource_token(user, provider_id)


def clear_user_resource_tokens(actor: Actor, user: User) -> int:
    _require_change_of_user(actor, user)
    return delegated.clear_tokens(user)
