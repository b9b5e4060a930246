"""Passkeys and security keys (WebAuthn) as a second factor, through py_webauthn.

The relying party id is the domain's host and the expected origin the issuer
(the scheme, host and port the request came in on), so a passkey made for one
domain is useless on another. User verification is preferred, not required: a
security key without a PIN still is a second factor beside the password. The
library checks the challenge, origin, RP id hash, signature and that the
signature counter grew; each ceremony's challenge is kept in Redis for one use.
"""

from __future__ import annotations

import json
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


def _save_challenge(holder: str, challenge: str) -> None:
    """The challenge of a passkey ceremony that ``holder`` (a session, a pending sign-in) started."""
    store.put(CHALLENGE_KIND, holder, {"challenge": challenge}, CEREMONY_TTL)


def _take_challenge(holder: str) -> str | None:
    """The challenge, once: a ceremony's answer is checked against it a single time."""
    record = store.take(CHALLENGE_KIND, holder)
    return record["challenge"] if record else None


class Refused(Exception):
    """The authenticator's answer did not verify."""


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
    from webauthn import generate_registration_options, options_to_json
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.structs import (
        AuthenticatorSelectionCriteria,
        ResidentKeyRequirement,
        UserVerificationRequirement,
    )

    options = generate_registration_options(
        rp_id=domain.host,
        rp_name=domain.name,
        user_name=user.email,
        user_id=f"authsvc-user-{user.id}".encode(),
        user_display_name=user.name or user.email,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED, user_verification=UserVerificationRequirement.PREFERRED
        ),
        # A second registration of the same authenticator is refused by the browser.
        exclude_credentials=_descriptors(user),
        timeout=CEREMONY_TTL * 1000,
    )
    _save_challenge(f"reg:{holder}", bytes_to_base64url(options.challenge))
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
    """Verify a ``navigator.credentials.create`` answer and keep the passkey (not committed)."""
    from webauthn import base64url_to_bytes, verify_registration_response
    from webauthn.helpers import bytes_to_base64url
    from webauthn.helpers.exceptions import WebAuthnException

    challenge = _take_challenge(f"reg:{holder}")
    if challenge is None:
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
