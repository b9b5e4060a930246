"""Signing in through a domain's LDAP directories: which accounts, linking, groups, deprovisioning.

Accounts of the domain that have no local password, and e-mails unknown here,
are checked against the domain's enabled directories: the service bind
searches for exactly one entry, and a bind as that entry with the password
given decides. A first sign-in provisions the user (an ``LdapAccount`` link,
``via`` "new_user"), or links an existing account by e-mail (``via``
"email") under the rules SSO links follow (authsvc.sso.linking): never a
privileged account, a disabled one, or one that already signs in through a
provider. The entry's groups replace the user's on every sign-in and check.

Deprovisioning: a session (or refresh) of a directory user asks the directory
again once ``AUTHSVC_LDAP_RECHECK`` seconds have passed since it last did;
an entry that the filter no longer finds, that is disabled (AD's
userAccountControl, or the directory's ``disabled_attribute``), or whose
directory was disabled, ends every session and token of the user
(authsvc.auth.sessions.directory_allows).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from authsvc.auth import ldap_client
from authsvc.auth.ldap_client import Entry
from authsvc.core import actors, audit, clock, validation
from authsvc.core.database import db
from authsvc.core.errors import DirectoryUnavailable
from authsvc.core.models import Domain, ExternalIdentity, LdapAccount, LdapDirectory, User
from authsvc.core.settings import settings

log = logging.getLogger(__name__)

# Links a first sign-in makes by itself (as authsvc.sso.linking.AUTOMATIC).
AUTOMATIC = ("new_user", "email")


@dataclass
class Outcome:
    """What the directories said: the user signed in, or why not (``reason`` for the audit record)."""

    user: User | None
    reason: str = "invalid_credentials"
    directory: str | None = None
    # The user whose linked entry is gone or disabled: their sessions and tokens end now.
    deprovision: User | None = None
    details: dict = field(default_factory=dict)


def directories_for(domain: Domain, user: User | None) -> list[LdapDirectory]:
    """The directories that decide this sign-in: none for an account with a local password.

    A user linked to a directory is checked against that one only; anyone
    else against each enabled directory of the domain, in name order.
    """
    if user is not None and user.password_hash:
        return []
    if user is not None:
        linked = _accounts(user)
        if linked:
            return [a.directory for a in linked if a.directory.enabled]
    return LdapDirectory.of_domain(domain.id, enabled_only=True)


def _accounts(user: User) -> list[LdapAccount]:
    return list(db.session.scalars(select(LdapAccount).where(LdapAccount.user_id == user.id)))


def authenticate(directories: list[LdapDirectory], email: str, password: str, user: User | None) -> Outcome:
    """Check ``email`` and ``password`` against ``directories``; raise DirectoryUnavailable if none could answer."""
    email = validation.account_name(email)
    if not password:
        # An empty password is an unauthenticated bind to LDAP, which succeeds: refused before any bind.
        return Outcome(None, "empty_password")
    unavailable: DirectoryUnavailable | None = None
    found: tuple[LdapDirectory, Entry] | None = None
    # One deadline for every directory asked: the sign-in answers within it, however many there are.
    with ldap_client.directory_deadline():
        for directory in directories:
            try:
                entry = _find(directory, email)
                if entry is None:
                    continue
                if not ldap_client.password_matches(directory, entry.dn, password):
                    return Outcome(None, "invalid_credentials", directory.id)
            except DirectoryUnavailable as exc:
                _note_unavailable(exc)
                unavailable = unavailable or exc
                continue
            found = (directory, entry)
            break
    if found is not None:
        return _signed_in(*found, email, user)
    if unavailable is not None:
        raise unavailable
    linked = user is not None and any(a.directory_id in {d.id for d in directories} for a in _accounts(user))
    # Not found: for a linked user, the entry is gone from the directory (or from its filter).
    return Outcome(None, "invalid_credentials", deprovision=user if linked else None)


def _find(directory: LdapDirectory, email: str) -> Entry | None:
    """The one entry of ``directory`` for ``email``, found with the service bind."""
    connection = ldap_client.service_connection(directory)
    try:
        return ldap_client.find_user(directory, connection, email)
    finally:
        ldap_client.close(connection)


def _note_unavailable(exc: DirectoryUnavailable) -> None:
    log.warning("LDAP directory %s unavailable: %s", exc.directory.id, exc.why)
    audit.record(
        "ldap.unavailable",
        domain_id=exc.directory.domain_id,
        target=f"ldap:{exc.directory.id}",
        details={"error": exc.why},
    )


def _signed_in(directory: LdapDirectory, entry: Entry, email: str, user: User | None) -> Outcome:
    """The password was right: the linked, matched or new user, unless a rule refuses."""
    account = db.session.scalar(
        select(LdapAccount).where(LdapAccount.directory_id == directory.id, LdapAccount.subject == entry.subject)
    )
    if entry.disabled:
        linked_user = db.session.get(User, account.user_id) if account is not None else None
        return Outcome(None, "directory_account_disabled", directory.id, deprovision=linked_user)
    if account is not None:
        linked_user = db.session.get_one(User, account.user_id)  # the link's foreign key: always there
        if account.via in AUTOMATIC and linked_user.privileged:
            # Promoted since the first sign-in linked them: a directory's word alone must not reach them.
            _audit_link(directory, "ldap.link_refused", linked_user, reason="automatic_link")
            db.session.commit()
            return Outcome(None, "link_required", directory.id)
        account.dn = entry.dn
        _refresh(account, linked_user, entry)
        db.session.commit()
        return Outcome(linked_user, directory=directory.id)
    if user is None:
        return _provision(directory, entry, email)
    refusal = _link_refusal(user)
    if refusal:
        _audit_link(directory, "ldap.link_refused", user, reason=refusal)
        db.session.commit()
        return Outcome(None, "link_required" if refusal != "account_disabled" else "disabled", directory.id)
    return _link(directory, entry, user, "email")


def _link_refusal(user: User) -> str | None:
    """Why a directory entry may not be linked to ``user`` (found by e-mail) by a sign-in; or None."""
    if user.disabled:
        return "account_disabled"
    if user.privileged:
        return "privileged_account"
    if user.password_hash:
        return "local_password"
    provider = db.session.scalar(select(ExternalIdentity.id).where(ExternalIdentity.user_id == user.id).limit(1))
    other = db.session.scalar(select(LdapAccount.id).where(LdapAccount.user_id == user.id).limit(1))
    if provider is not None or other is not None:
        # The account already signs in through a provider or another entry: an e-mail does not add one.
        return "linked_to_another_provider"
    return None


def _provision(directory: LdapDirectory, entry: Entry, email: str) -> Outcome:
    try:
        # The service's one e-mail rule: an address no other surface would take makes no account here either.
        email = validation.email(email)
    except validation.Invalid:
        return Outcome(None, "invalid_email", directory.id)
    # A directory entry's mail attribute is whatever was typed into it: nobody verified it.
    user = User(domain_id=directory.domain_id, email=email, name=entry.name, groups=entry.groups, email_verified=False)
    db.session.add(user)
    try:
        db.session.flush()
    except IntegrityError:
        # A concurrent first sign-in made the user; this attempt may retry.
        db.session.rollback()
        return Outcome(None, "conflict", directory.id)
    return _link(directory, entry, user, "new_user")


def _link(directory: LdapDirectory, entry: Entry, user: User, via: str) -> Outcome:
    account = LdapAccount(directory_id=directory.id, user_id=user.id, subject=entry.subject, dn=entry.dn, via=via)
    db.session.add(account)
    _refresh(account, user, entry)
    _audit_link(directory, "ldap.linked", user, via=via)
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        return Outcome(None, "conflict", directory.id)
    return Outcome(user, directory=directory.id, details={"linked": via})


def _refresh(account: LdapAccount, user: User, entry: Entry) -> None:
    """What the directory says now: the user's groups, and when it last said so."""
    user.groups = entry.groups
    account.checked_at = clock.now()


def still_allowed(user: User) -> bool:
    """Whether ``user``'s directory entries still let them sign in; asks at most every AUTHSVC_LDAP_RECHECK s.

    True for a user of no directory. A directory that cannot answer is not a
    deprovisioning: the session goes on, and it is asked again after the interval.
    """
    if not user.directory_linked:
        return True
    accounts = _accounts(user)
    if not accounts:
        return True
    recheck = settings().ldap_recheck
    now = clock.now()
    for account in accounts:
        if now - account.checked_at < recheck:
            continue
        directory = account.directory
        entry = None
        if directory.enabled:
            try:
                with ldap_client.directory_deadline():
                    entry = _find(directory, user.email)
            except DirectoryUnavailable as exc:
                # Asked again after the interval, not on every request: each would wait for the timeout.
                _note_unavailable(exc)
                account.checked_at = now
                db.session.commit()
                continue
        if entry is None or entry.subject != account.subject or entry.disabled:
            reason = "disabled" if entry is not None and entry.disabled else "not_found"
            if not directory.enabled:
                reason = "directory_disabled"
            _audit_link(directory, "ldap.deprovisioned", user, reason=reason)
            return False
        account.dn = entry.dn
        _refresh(account, user, entry)
        db.session.commit()
    return True


def _audit_link(directory: LdapDirectory, event: str, user: User, **details: str) -> None:
    audit.record(
        event,
        domain_id=directory.domain_id,
        actor=f"ldap:{directory.id}",
        target=actors.of_user(user.id),
        details={"directory": directory.id, **details},
        commit=False,
    )
