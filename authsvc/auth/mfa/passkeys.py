"""Passkeys and security keys (WebAuthn), through py_webauthn: a second factor after the password,
and a sign-in of their own (docs/mfa.md, "Signing in with a passkey").

The relying party id is the domain's host and the expected origin the issuer
(the scheme, host and port the request came in on), so a passkey made for one
domain is useless on another. Registration asks for a discoverable credential
(resident key preferred) under the user's random handle (``User.passkey_handle``),
so that the passkey can later sign in alone. As a second factor, user
verification is preferred, not required: a security key without a PIN still is
a second factor beside the password. Signing in with the passkey alone requires
it (the PIN or biometric is the second factor). The library checks the
challenge, origin, RP id hash, signature and that the signature counter grew;
each ceremony's challenge is kept in Redis for one use.
"""

from __future__ import annotations

import hmac
import json
import secrets
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import select

from authsvc.core import store
from authsvc.core.database import db
from authsvc.core.models import Domain, MfaFactor, User
from authsvc.core.tenancy import issuer

if TYPE_CHECKING:
    from webauthn.helpers.structs import PublicKeyCredentialDescriptor

# py_webauthn (with cbor2 and its crypto) is imported by the ceremonies that use it,
# not with the app: most workers never see a passkey (docs/performance.md).

CEREMONY_TTL = 300
# The store's kind of record (authsvc.core.store): a ceremony's challenge, under the digest of its holder.
CHALLENGE_KIND = "webauthn"


# What passkeys registered before users had a random handle carry as theirs (WebAuthn's user.id).
LEGACY_HANDLE = "authsvc-user-{}"


def _save_challenge(holder: str, challenge: str, **more: Any) -> None:
    """The challenge of a passkey ceremony that ``holder`` (a session, a pending sign-in) started."""
    store.put(CHALLENGE_KIND, holder, {"challenge": challenge, **more}, CEREMONY_TTL)


def _take_record(holder: str) -> dict[str, Any] | None:
    """The ceremony's record, once: its answer is checked against it a single time."""
    return store.take(CHALLENGE_KIND, holder)


def _take_challenge(holder: str) -> str | None:
    record = _take_record(holder)
    return record["challenge"] if record else None


class Refused(Exception):
    """The authenticator's answer did not verify. ``user``: whose passkey it named, when one did."""

    def __init__(self, reason: str, user: User | None = None) -> None:
        super().__init__(reason)
        self.user = user


def user_handle(user: User) -> str:
    """The user's passkey handle (base64url); a new random one for a user who has none yet (not stored here)."""
    from webauthn.helpers import bytes_to_base64url

    return user.passkey_handle or bytes_to_base64url(secrets.token_bytes(32))


def passkeys(user: User) -> list[MfaFactor]:
    query = select(MfaFactor).where(
        MfaFactor.user_id == user.id, MfaFactor.kind == "webauthn", MfaFactor.confirmed.is_(True)
    )
    return list(db.session.scalars(query.order_by(MfaFactor.id)))


def _descriptors(user: User) -> list[PublicKeyCredentialDescriptor]:
    from webauthn import base64url_to_bytes
    from webauthn.helpers.structs import PublicKeyCredentialDescriptor

    # A passkey's row always holds its credential id and public key (the columns are a TOTP factor's nulls).
    return [PublicKeyCredentialDescriptor(id=base64url_to_bytes(cast(str, f.credential_id))) for f in passkeys(user)]


def registration_options(user: User, domain: Domain, holder: str) -> str:
    """``navigator.credentials.create`` options (JSON) for a new passkey of ``user``."""
    from webauthn import base64url_to_bytes, generate_registration_options, options_to_json
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.structs import (
        AuthenticatorSelectionCriteria,
        ResidentKeyRequirement,
        UserVerificationRequirement,
    )

    handle = user_handle(user)
    options = generate_registration_options(
        rp_id=domain.host,
        rp_name=domain.name,
        user_name=user.email,
        # Random, never the address or the row's id: the authenticator shows the name, it keeps the handle.
        user_id=base64url_to_bytes(handle),
        user_display_name=user.name or user.email,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED, user_verification=UserVerificationRequirement.PREFERRED
        ),
        # A second registration of the same authenticator is refused by the browser.
        exclude_credentials=_descriptors(user),
        timeout=CEREMONY_TTL * 1000,
    )
    _save_challenge(f"reg:{holder}", bytes_to_base64url(options.challenge), handle=handle)
    return options_to_json(options)


def _credential(raw: Any) -> dict:
    try:
        credential = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise Refused("the answer is not JSON") from None
    if not isinstance(credential, dict) or not isinstance(credential.get("id"), str):
        raise Refused("the answer is not a credential")
    return credential


def register(user: User, domain: Domain, holder: str, raw: Any, name: str) -> MfaFactor:
    """Verify a ``navigator.credentials.create`` answer and keep the passkey (not committed).

    The user's first passkey also keeps the handle its options gave (``User.passkey_handle``).
    """
    from webauthn import base64url_to_bytes, verify_registration_response
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.exceptions import WebAuthnException

    record = _take_record(f"reg:{holder}")
    if record is None:
        raise Refused("the registration expired; start again")
    challenge, handle = record["challenge"], record.get("handle")
    if handle and user.passkey_handle not in (None, handle):
        # Another registration (another tab) gave the user a handle meanwhile: this passkey holds another.
        raise Refused("the registration expired; start again")
    try:
        verified = verify_registration_response(
            credential=_credential(raw),
            expected_challenge=base64url_to_bytes(challenge),
            expected_rp_id=domain.host,
            expected_origin=issuer(),
        )
    # Every py_webauthn refusal (bad JSON structure, CBOR, signature...) derives from WebAuthnException.
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise Refused(f"the passkey did not verify: {exc}") from None
    credential_id = bytes_to_base64url(verified.credential_id)
    if db.session.scalar(select(MfaFactor.id).where(MfaFactor.credential_id == credential_id)):
        raise Refused("this passkey is registered already")
    factor = MfaFactor(
        user_id=user.id,
        kind="webauthn",
        name=name or "Passkey",
        credential_id=credential_id,
        public_key=bytes_to_base64url(verified.credential_public_key),
        sign_count=verified.sign_count,
        confirmed=True,
    )
    if handle and user.passkey_handle is None:
        user.passkey_handle = handle
    db.session.add(factor)
    return factor


def authentication_options(user: User, domain: Domain, holder: str) -> str:
    """``navigator.credentials.get`` options (JSON) naming the user's passkeys."""
    from webauthn import generate_authentication_options, options_to_json
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.structs import UserVerificationRequirement

    options = generate_authentication_options(
        rp_id=domain.host,
        allow_credentials=_descriptors(user),
        user_verification=UserVerificationRequirement.PREFERRED,
        timeout=CEREMONY_TTL * 1000,
    )
    _save_challenge(f"auth:{holder}", bytes_to_base64url(options.challenge))
    return options_to_json(options)


def authenticate(user: User, domain: Domain, holder: str, raw: Any) -> MfaFactor:
    """Verify a ``navigator.credentials.get`` answer by one of ``user``'s passkeys; record its counter."""
    from webauthn import base64url_to_bytes, verify_authentication_response
    from webauthn.helpers.exceptions import WebAuthnException

    credential = _credential(raw)
    challenge = _take_challenge(f"auth:{holder}")
    factor = next((f for f in passkeys(user) if f.credential_id == credential["id"]), None)
    if challenge is None or factor is None:
        raise Refused("no such passkey, or the sign-in step expired")
    try:
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(challenge),
            expected_rp_id=domain.host,
            expected_origin=issuer(),
            credential_public_key=base64url_to_bytes(cast(str, factor.public_key)),
            credential_current_sign_count=factor.sign_count,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise Refused(f"the passkey did not verify: {exc}") from None
    factor.sign_count = verified.new_sign_count
    return factor


# Signing in with a passkey alone: a discoverable credential names its user.

# The store's holder prefix of a passkey sign-in's challenge (its browser's binding follows).
SIGNIN = "signin:"


def signin_options(domain: Domain, holder: str) -> str:
    """``navigator.credentials.get`` options (JSON) for a sign-in by any passkey of ``domain``.

    No ``allowCredentials``: the authenticator offers the passkeys it holds for the
    domain's host (and the browser in the e-mail field's autofill, conditional UI).
    User verification is required: the passkey alone is the whole sign-in.
    """
    from webauthn import generate_authentication_options, options_to_json
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.structs import UserVerificationRequirement

    options = generate_authentication_options(
        rp_id=domain.host,
        allow_credentials=[],
        user_verification=UserVerificationRequirement.REQUIRED,
        timeout=CEREMONY_TTL * 1000,
    )
    _save_challenge(f"{SIGNIN}{holder}", bytes_to_base64url(options.challenge), domain=domain.id)
    return options_to_json(options)


def _presented_handle(credential: dict) -> bytes:
    """The user handle of a discoverable credential's answer (raw bytes); Refused if it has none."""
    from webauthn import base64url_to_bytes

    response = credential.get("response")
    handle = response.get("userHandle") if isinstance(response, dict) else None
    if not isinstance(handle, str) or not handle or len(handle) > 200:
        raise Refused("the answer names no user")
    try:
        return base64url_to_bytes(handle)
    except ValueError:
        raise Refused("the answer's user handle is not base64url") from None


def _owned(factor_user: User, handle: bytes) -> bool:
    """Whether ``handle`` is ``factor_user``'s: the random one, or the one passkeys registered before it had."""
    from webauthn import base64url_to_bytes

    known = [LEGACY_HANDLE.format(factor_user.id).encode()]
    if factor_user.passkey_handle:
        known.append(base64url_to_bytes(factor_user.passkey_handle))
    return any(hmac.compare_digest(handle, candidate) for candidate in known)


def signin_passkey(domain: Domain, holder: str, raw: Any) -> tuple[MfaFactor, User]:
    """The passkey of ``domain`` that signed a sign-in's challenge, and its user; records its counter.

    The challenge is taken first, whatever follows: an answer is checked once. The
    credential id finds the passkey among the domain's users' passkeys only, and its
    user must be the one the authenticator named (the user handle). ``Refused`` for
    everything that fails, with the user when the answer named a real passkey.
    Whether that user may sign in (disabled, locked out) is the caller's decision.
    """
    from webauthn import base64url_to_bytes, verify_authentication_response
    from webauthn.helpers.exceptions import WebAuthnException

    record = _take_record(f"{SIGNIN}{holder}") if holder else None
    credential = _credential(raw)
    if record is None or record.get("domain") != domain.id:
        raise Refused("the sign-in step expired or was already used")
    handle = _presented_handle(credential)
    found = db.session.execute(
        select(MfaFactor, User)
        .join(User, User.id == MfaFactor.user_id)
        .where(
            MfaFactor.credential_id == credential["id"],
            MfaFactor.kind == "webauthn",
            MfaFactor.confirmed.is_(True),
            User.domain_id == domain.id,
        )
    ).first()
    if found is None:
        raise Refused("no such passkey")
    factor, user = found
    if not _owned(user, handle):
        raise Refused("the passkey names another user", user)
    try:
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(record["challenge"]),
            expected_rp_id=domain.host,
            expected_origin=issuer(),
            credential_public_key=base64url_to_bytes(cast(str, factor.public_key)),
            credential_current_sign_count=factor.sign_count,
            require_user_verification=True,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise Refused(f"the passkey did not verify: {exc}", user) from None
    factor.sign_count = verified.new_sign_count
    return factor, user
