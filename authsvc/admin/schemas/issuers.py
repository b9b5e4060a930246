"""Trusted issuers: another issuer's tokens a domain accepts, or an audience it issues ID-JAGs for."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

from authsvc.admin.schemas.answers import DECIMAL_ID, EPOCH, Answer
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import _without_nul
from authsvc.core import validation

Url = Annotated[
    str,
    StringConstraints(min_length=1, max_length=2000),
    AfterValidator(_without_nul(2000)),
    AfterValidator(validation.resource_indicator),
]


class TrustedIssuerChange(Schema):
    """An issuer of the domain, added or changed (matched by `issuer`): only the fields given change."""

    issuer: Url = Field(description="The issuer's identifier, as its tokens' `iss` (compared exactly).")
    jwks_uri: Url | None = Field(
        default=None,
        description="Where its signing keys are (https, a public address unless "
        "AUTHSVC_TRUSTED_ISSUER_ALLOW_PRIVATE_NETWORKS). Needed to trust its tokens.",
    )
    subject_tokens: bool | None = Field(
        default=None, description="Accept its JWTs as subject and actor tokens of a token exchange (RFC 8693)."
    )
    id_jag: bool | None = Field(
        default=None, description="Accept its ID-JAGs at the JWT bearer grant (RFC 7523): an enterprise's IdP."
    )
    create_users: bool | None = Field(
        default=None,
        description="With `id_jag`: an ID-JAG whose `email` no user of the domain has creates that user (no "
        "password; audited as created by the issuer). Off: such an ID-JAG is refused (`invalid_grant`).",
    )
    id_jag_audience: bool | None = Field(
        default=None, description="Issue ID-JAGs for it: a resource authorisation server of the domain's users."
    )
    client_ids: dict[str, Annotated[str, StringConstraints(min_length=1, max_length=2000)]] | None = Field(
        default=None,
        description="An audience's identifiers of the domain's applications ({our client_id: its client_id}), for "
        "the ID-JAG's `client_id`; an application not named is known there by its own client_id.",
    )


class TrustedIssuer(Answer):
    id: str = Field(description=DECIMAL_ID)
    domain: str
    issuer: str
    jwks_uri: str | None
    subject_tokens: bool
    id_jag: bool
    create_users: bool
    id_jag_audience: bool
    client_ids: dict[str, str]
    created_at: int = Field(description=EPOCH)


class TrustedIssuerList(Answer):
    items: list[TrustedIssuer]
