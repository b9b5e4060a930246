"""What the consent page says each scope allows (docs/branding.md, "Consent").

A domain admin's description of a scope (``ScopeDescription``) comes first: the one for the page's
language (exactly, then its language alone: ``de-CH`` then ``de``), else the one for any language.
Then the service's own description of the standard scopes (OpenID Connect's, the reserved ones, the
Microsoft Graph delegated permissions the service knows), in English and marked with ``N_``
(authsvc.core.marks), translated when the page is drawn. A scope with neither shows its name alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from flask_babel import get_locale, gettext
from sqlalchemy import select

from authsvc.core import branding, validation
from authsvc.core.database import db
from authsvc.core.marks import N_
from authsvc.core.models import RESERVED_SCOPES, Domain, ScopeDescription
from authsvc.core.models.consent_text import DESCRIPTION_MAX

MICROSOFT_GRAPH = "https://graph.microsoft.com/"
# The built-in descriptions. The Graph permissions are authsvc.sso.providers.GRAPH_PERMISSIONS
# (a unit test keeps the two lists together); each is known bare and with Graph's prefix.
BUILT_IN: dict[str, str] = {
    "openid": N_("Sign you in and learn who you are."),
    "profile": N_("See your name and basic profile."),
    "email": N_("See your e-mail address."),
    "offline_access": N_("Keep access while you are not using it, until you withdraw it."),
    "Place.Read.All": N_("Read the rooms and places of your organisation in Microsoft 365."),
    "Calendars.ReadWrite": N_("Read and change your Microsoft 365 calendars."),
    "Calendars.ReadWrite.Shared": N_("Read and change the Microsoft 365 calendars shared with you."),
    "Contacts.Read": N_("Read your Microsoft 365 contacts."),
    "Group.Read.All": N_("Read the groups of your organisation in Microsoft 365."),
    "User.Read.All": N_("Read the profiles of the people in your organisation in Microsoft 365."),
    # The reserved scopes', marked where they are defined.
    **RESERVED_SCOPES,
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ScopeText:
    """One line of the consent page: the scope, what it allows (None: nothing said), and whether it is reserved."""

    scope: str
    description: str | None
    reserved: bool


def built_in(scope: str) -> str | None:
    return BUILT_IN.get(scope.removeprefix(MICROSOFT_GRAPH))


def describable(domain: Domain) -> set[str]:
    """The scopes an admin of ``domain`` may describe: its own, the reserved ones and the standard ones."""
    return set(domain.scope_list) | set(RESERVED_SCOPES) | set(BUILT_IN)


def checked_scope(domain: Domain, scope: str) -> str:
    if scope not in describable(domain):
        raise validation.Invalid(
            f"{scope[:60]!r} is not a scope of this domain (add it with `domains scopes add` first), nor a standard one"
        )
    return scope


def checked_text(text: str) -> str:
    """A description: one line of plain text, at most DESCRIPTION_MAX characters."""
    text = text.strip()
    if not text:
        raise validation.Invalid("must not be empty (remove the description instead)")
    if len(text) > DESCRIPTION_MAX:
        raise validation.Invalid(f"is {len(text)} characters long; at most {DESCRIPTION_MAX}")
    if _CONTROL.search(text):
        raise validation.Invalid("must be one line of text, without control characters")
    return text


def checked_locale(value: str | None) -> str:
    """A language tag, or "" (any locale) for None or ""."""
    return branding.locale(value) if value else ""


def consent_lines(domain: Domain, scopes: Iterable[str]) -> list[ScopeText]:
    """The consent page's lines for ``scopes``, in the page's language where a description exists in it."""
    scopes = list(scopes)
    rows = db.session.scalars(
        select(ScopeDescription).where(ScopeDescription.domain_id == domain.id, ScopeDescription.scope.in_(scopes))
    ).all()
    by_scope: dict[str, dict[str, str]] = {}
    for row in rows:
        by_scope.setdefault(row.scope, {})[row.locale.lower()] = row.text
    wanted = [_page_locale()]
    lines = []
    for scope in scopes:
        own = _pick(by_scope.get(scope, {}), wanted)
        if own is None and (default := built_in(scope)) is not None:
            own = _translate(default)
        lines.append(ScopeText(scope, own, scope in RESERVED_SCOPES))
    return lines


def _pick(texts: dict[str, str], wanted: list[str]) -> str | None:
    """The text for the first wanted locale (exactly, then its language alone), else the one for any locale."""
    for tag in wanted:
        tag = tag.lower()
        for candidate in (tag, tag.split("-")[0]):
            if candidate in texts:
                return texts[candidate]
    return texts.get("")


def _page_locale() -> str:
    """The page's language (authsvc.web.i18n chose it), as a tag: ``pt-BR``."""
    return str(get_locale() or "en").replace("_", "-")


def _translate(text: str) -> str:
    """A built-in description in the page's language (the catalogs hold them, extracted from ``N_``)."""
    return str(gettext(text))
