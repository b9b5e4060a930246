"""Which audit records are SSF events (CAEP and RISC), and what each event says.

One rule for every change, as for webhooks (authsvc.webhooks.events): ``signals``
reads an audit record as it joins its transaction and answers the events it
is, each about one user. authsvc.ssf.sets turns them into SETs for the
streams that asked. docs/events.md lists what makes each event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from authsvc.core import clock
from authsvc.core.audit import Recorded

CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
SESSION_REVOKED = CAEP + "session-revoked"
CREDENTIAL_CHANGE = CAEP + "credential-change"
ACCOUNT_DISABLED = RISC + "account-disabled"
ACCOUNT_ENABLED = RISC + "account-enabled"
ACCOUNT_PURGED = RISC + "account-purged"
IDENTIFIER_CHANGED = RISC + "identifier-changed"
# SSF 1.0 8.1.4.1: the answer to a receiver's verification request, sent whatever the stream asked for.
VERIFICATION = "https://schemas.openid.net/secevent/ssf/event-type/verification"

# What a receiver may ask for (the stream's events_supported).
SUPPORTED = (
    SESSION_REVOKED,
    CREDENTIAL_CHANGE,
    ACCOUNT_DISABLED,
    ACCOUNT_ENABLED,
    ACCOUNT_PURGED,
    IDENTIFIER_CHANGED,
)

# The audit events that may be SSF events: a record of any other is none, decided without reading it.
AUDIT_EVENTS = frozenset(
    {
        "scim.user.deactivated",
        "scim.user.deleted",
        "user.tokens_revoked",
        "session.others_ended",
        "session.ended",
        "user.password_changed",
        "user.password_reset",
        "mfa.enrolled",
        "mfa.factor_removed",
        "mfa.reset",
        "user.updated",
        "user.email_changed",
        "user.deleted",
    }
)

# CAEP 3.1 initiating_entity: who caused the change, by the record's actor.
ADMIN, USER = "admin", "user"


@dataclass(frozen=True)
class Signal:
    """One event about one user: its type URI and its members (RFC 8417 ``events`` value)."""

    event: str
    user_id: int
    members: dict[str, Any] = field(default_factory=dict)


def _user_id(recorded: Recorded) -> int | None:
    """The user the record is about: its target, else the user who acted (a person's own change)."""
    for name in (recorded.target, recorded.actor):
        if name and name.startswith("user:") and name[5:].isdigit():
            return int(name[5:])
    return None


def _initiator(recorded: Recorded, user_id: int) -> str:
    return USER if recorded.actor == f"user:{user_id}" else ADMIN


def _caep(recorded: Recorded, user_id: int, **members: Any) -> dict[str, Any]:
    """CAEP 3's common members: when it happened, and who did it."""
    return {"event_timestamp": clock.now(), "initiating_entity": _initiator(recorded, user_id), **members}


def _password(recorded: Recorded, user_id: int) -> Signal:
    return Signal(
        CREDENTIAL_CHANGE, user_id, _caep(recorded, user_id, credential_type="password", change_type="update")
    )


def _factor(recorded: Recorded, user_id: int, change: str) -> Signal:
    kind = recorded.details.get("kind")
    credential = "fido2-platform" if kind == "webauthn" else "app"
    return Signal(CREDENTIAL_CHANGE, user_id, _caep(recorded, user_id, credential_type=credential, change_type=change))


def _admin_change(recorded: Recorded, user_id: int) -> list[Signal]:
    """An admin's ``user.updated``: disabling ends sessions, enabling, a new password, a new address."""
    before, after = recorded.details.get("before") or {}, recorded.details.get("after") or {}
    found: list[Signal] = []
    if before.get("disabled") is False and after.get("disabled") is True:
        found.append(Signal(SESSION_REVOKED, user_id, _caep(recorded, user_id)))
        found.append(Signal(ACCOUNT_DISABLED, user_id))
    if before.get("disabled") is True and after.get("disabled") is False:
        found.append(Signal(ACCOUNT_ENABLED, user_id))
    if after.get("password_changed"):
        found.append(_password(recorded, user_id))
    if before.get("email") and after.get("email") and before["email"] != after["email"]:
        found.append(Signal(IDENTIFIER_CHANGED, user_id, {"new-value": after["email"]}))
    return found


def signals(recorded: Recorded) -> list[Signal]:
    """The SSF events an audit record is, in the order a receiver should see them; [] for most records."""
    user_id = _user_id(recorded)
    if recorded.event not in AUDIT_EVENTS or user_id is None or recorded.domain_id is None:
        return []
    event, details = recorded.event, recorded.details
    if event == "scim.user.deactivated":
        # SCIM deprovisioning (active false, or DELETE): every session and token ended, the account disabled.
        return [Signal(SESSION_REVOKED, user_id, _caep(recorded, user_id)), Signal(ACCOUNT_DISABLED, user_id)]
    if event == "user.tokens_revoked" or (event == "session.ended" and details.get("via") == "logout_all"):
        return [Signal(SESSION_REVOKED, user_id, _caep(recorded, user_id))]
    if event == "session.others_ended":
        return [Signal(SESSION_REVOKED, user_id, _caep(recorded, user_id))]
    if event in ("user.password_changed", "user.password_reset"):
        return [_password(recorded, user_id)]
    if event == "mfa.enrolled":
        return [_factor(recorded, user_id, "create")]
    if event in ("mfa.factor_removed", "mfa.reset"):
        return [_factor(recorded, user_id, "delete")]
    if event == "user.updated":
        return _admin_change(recorded, user_id)
    if event == "user.email_changed" and isinstance(details.get("after"), str):
        return [Signal(IDENTIFIER_CHANGED, user_id, {"new-value": details["after"]})]
    if event == "user.deleted" or (event == "scim.user.deleted" and details.get("hard")):
        return [Signal(ACCOUNT_PURGED, user_id)]
    return []
