"""Other issuers a domain deals with: whose JWTs it trusts, and for whom it issues ID-JAGs.

docs/token-exchange.md. A trusted issuer (``jwks_uri`` set) signs tokens this
domain accepts: subject and actor tokens of a token exchange (RFC 8693) when
``subject_tokens``, Identity Assertion JWT Authorization Grants (ID-JAG) at the
JWT bearer grant (RFC 7523) when ``id_jag``; with ``create_users``, an ID-JAG's
e-mail no user of the domain has makes a new user (authsvc.oauth.id_jag). An audience (``id_jag_audience``)
is a resource authorisation server this domain, as an enterprise's identity
provider, issues ID-JAGs for. One row per issuer and domain holds both roles.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from authsvc.core.database import Model, now


class TrustedIssuer(Model):
    __table_args__ = (UniqueConstraint("domain_id", "issuer", name="uq_trusted_issuer_domain_issuer"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domain.id"), index=True)
    # The ``iss`` its tokens carry, compared exactly.
    issuer: Mapped[str] = mapped_column(String(2000))
    # Where its signing keys are; None for an issuer that is only an ID-JAG audience.
    jwks_uri: Mapped[str | None] = mapped_column(String(2000))
    subject_tokens: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    id_jag: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # An ID-JAG naming by its e-mail no user of the domain creates one (the issuer vouches for the address).
    create_users: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    id_jag_audience: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # An audience's names for our clients: {our client_id: its client_id}; an unnamed client is known there by ours.
    client_ids: Mapped[dict[str, str] | None] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(Integer, default=now)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "domain": str(self.domain_id),
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri,
            "subject_tokens": self.subject_tokens,
            "id_jag": self.id_jag,
            "create_users": self.create_users,
            "id_jag_audience": self.id_jag_audience,
            "client_ids": dict(self.client_ids or {}),
            "created_at": self.created_at,
        }
