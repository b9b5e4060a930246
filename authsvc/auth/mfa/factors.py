"""A user's second factors: authenticator apps (TOTP, RFC 6238) and one-time recovery codes.

pyotp computes the codes; what it does not do is remember which time step was
used, so ``verify_totp`` records the step it accepted and refuses it, and every
earlier one, afterwards (RFC 6238 5.2: a code is good once). The record is an
UPDATE guarded by ``last_step < step``: of two requests racing with one code,
one wins.
"""

from __future__ import annotations

import secrets
import time
from typing import cast
from urllib.parse import parse_qsl, urlsplit

import pyotp
from blinker import Namespace
from flask import current_app
from sqlalchemy import delete, select, update

from authsvc.core import security
from authsvc.core.database import db, now, rows_affected
from authsvc.core.models import Domain, MfaFactor, RecoveryCode, User

RECOVERY_CODES = 10
# The Authentication Context Class a relying party asks for, and an ID token states, for two factors.
MFA_ACR = "mfa"
# Codes of the previous and the next 30-second step are accepted (clock drift, typing time).
VALID_WINDOW = 1
# Recovery codes: 10 characters of Crockford-like base32 (50 bits), shown as XXXXX-XXXXX.
_RECOVERY_ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"

# Sent (sender: the app) with ``user``, ``domain``, ``change`` ("added" or "removed") and ``kind`` when a
# person adds or removes a second factor, in the change's transaction: the account's notice listens
# (authsvc.account.notices), and what it queues commits with the change.
factor_changed = Namespace().signal("factor-changed")


def changed(user: User, domain: Domain, change: str, kind: str) -> None:
    """Announce a factor ``change`` of ``user`` (``factor_changed``); the caller commits."""
    factor_changed.send(current_app._get_current_object(), user=user, domain=domain, change=change, kind=kind)  # type: ignore[attr-defined]


def confirmed_factors(user: User) -> list[MfaFactor]:
    query = select(MfaFactor).where(MfaFactor.user_id == user.id, MfaFactor.confirmed.is_(True))
    return list(db.session.scalars(query.order_by(MfaFactor.id)))


def enrolled(user: User) -> bool:
    return bool(confirmed_factors(user))


def policy_applies(user: User, domain: Domain) -> bool:
    """Whether the domain's policy asks ``user`` for a second factor.

    Service accounts are exempt: they get tokens from the password grant or
    client credentials, which have no second step; in exchange they may not
    open the console while the policy applies to them (see ``console_allowed``).
    """
    if domain.mfa_require == "all":
        return True
    return domain.mfa_require == "admins" and (user.admin or user.support or user.system_admin)


def required_at_sign_in(user: User, domain: Domain, *, asked: bool = False) -> bool:
    """An enrolled user, or one the policy covers, gets no session until a second factor passes.

    ``asked``: the sign-in is for an authorisation request whose ``acr_values``
    asks for multi-factor (step-up): everyone then passes one, enrolling if need be.
    """
    if asked:
        return True
    if user.service_account:
        return enrolled(user)
    return enrolled(user) or policy_applies(user, domain)


def asks_for_mfa(acr_values: str | None) -> bool:
    """Whether OpenID Connect ``acr_values`` ask for a multi-factor sign-in."""
    return MFA_ACR in (acr_values or "").split()


def continue_asks_for_mfa(target: str) -> bool:
    """Whether the sign-in returns to an authorisation request asking for multi-factor (``acr_values``)."""
    # Any target's query counts, not only the authorise path's: another spelling of that path
    # (%61uthorize, //) reaches the same view, and asking for a second factor too often is harmless.
    query = urlsplit(target or "").query
    return any(asks_for_mfa(value) for name, value in parse_qsl(query) if name == "acr_values")


def console_allowed(user: User, domain: Domain, amr: list[str]) -> bool:
    """The console needs a session that passed a second factor whenever the policy covers the user.

    A single sign-on session counts: the identity provider owns that sign-in, second factor included.
    """
    if not policy_applies(user, domain):
        return True
    return not user.service_account and ("mfa" in amr or "fed" in amr)


def methods(user: User) -> list[str]:
    """What the user can answer the second step with (``mfa_required``'s ``methods``)."""
    kinds = [factor.kind for factor in confirmed_factors(user)]
    found = list(dict.fromkeys(kinds))
    if found and _unused_recovery_codes(user):
        found.append("recovery_code")
    return found


# Authenticator apps.


def start_totp_enrolment(user: User) -> MfaFactor:
    """A new unconfirmed authenticator for ``user``, replacing any earlier unconfirmed one."""
    db.session.execute(delete(MfaFactor).where(MfaFactor.user_id == user.id, MfaFactor.confirmed.is_(False)))
    factor = MfaFactor(user_id=user.id, kind="totp", secret=security.encrypt(pyotp.random_base32()))
    db.session.add(factor)
    db.session.flush()
    return factor


def unconfirmed_factor(user: User) -> MfaFactor | None:
    query = select(MfaFactor).where(MfaFactor.user_id == user.id, MfaFactor.confirmed.is_(False))
    return db.session.scalars(query.order_by(MfaFactor.id.desc())).first()


def confirm(factor: MfaFactor) -> list[str]:
    """Confirm an enrolment whose first code passed; the first factor comes with recovery codes."""
    # The factor belongs to the signed-in user confirming it in this request: the row is there.
    user = cast(User, db.session.get(User, factor.user_id))
    first = not enrolled(user)
    factor.confirmed = True
    return new_recovery_codes(user) if first else []


def totp_secret(factor: MfaFactor) -> str:
    # A TOTP factor's row always holds its encrypted secret (the column is a passkey's null).
    return security.decrypt(cast(str, factor.secret))


def provisioning_uri(factor: MfaFactor, user: User, domain: Domain) -> str:
    return pyotp.TOTP(totp_secret(factor)).provisioning_uri(name=user.email, issuer_name=domain.name)


def qr_svg(uri: str) -> str:
    """The otpauth URI as an inline SVG QR code, rendered here: the secret never leaves for a QR service."""
    # segno (QR codes) is imported by the one page that draws one, not with every worker.
    import segno

    return segno.make(uri, error="m").svg_inline(scale=5, dark="#111", light="#fff")


def _normalised(code: str) -> str:
    return "".join(code.split()).replace("-", "").upper()


def verify_totp(factor: MfaFactor, code: str) -> bool:
    """Whether ``code`` is a current code of ``factor`` not used before; records its step if so."""
    code = _normalised(code)
    if not (code.isdigit() and len(code) == 6):
        return False
    totp = pyotp.TOTP(totp_secret(factor))
    step_now = int(time.time()) // totp.interval
    for step in range(step_now - VALID_WINDOW, step_now + VALID_WINDOW + 1):
        if secrets.compare_digest(totp.generate_otp(step), code):
            claimed = db.session.execute(
                update(MfaFactor).where(MfaFactor.id == factor.id, MfaFactor.last_step < step).values(last_step=step)
            )
            return rows_affected(claimed) == 1
    return False


def verify_any_totp(user: User, code: str) -> bool:
    return any(verify_totp(factor, code) for factor in confirmed_factors(user) if factor.kind == "totp")


# Recovery codes.


def new_recovery_codes(user: User) -> list[str]:
    """Ten new recovery codes (the old ones stop working); returned once, stored as digests."""
    db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(10))
        codes.append(f"{raw[:5]}-{raw[5:]}")
        db.session.add(RecoveryCode(user_id=user.id, digest=security.digest(raw)))
    return codes


def _unused_recovery_codes(user: User) -> int:
    query = select(RecoveryCode.id).where(RecoveryCode.user_id == user.id, RecoveryCode.used_at.is_(None))
    return len(db.session.scalars(query).all())


def use_recovery_code(user: User, code: str) -> bool:
    """Spend one recovery code: true exactly once per code."""
    spent = db.session.execute(
        update(RecoveryCode)
        .where(
            RecoveryCode.user_id == user.id,
            RecoveryCode.digest == security.digest(_normalised(code)),
            RecoveryCode.used_at.is_(None),
        )
        .values(used_at=now())
    )
    return rows_affected(spent) == 1


def reset(user: User) -> int:
    """Remove every factor and recovery code of ``user``; return how many factors there were."""
    removed = rows_affected(db.session.execute(delete(MfaFactor).where(MfaFactor.user_id == user.id)))
    db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    return removed
