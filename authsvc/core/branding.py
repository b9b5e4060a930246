"""A domain's brand as pages and e-mails read it, cached per worker; its rules (colours, links, contrast).

``brand_of(domain)`` is what every page's base layout and every e-mail's
layout call (authsvc.web.branding, authsvc.mail.messages). A domain without
branding (``branding_version`` None) has the default look and costs nothing;
a branded one is read from ``domain_branding`` once per worker and version:
the version is a column of the domain row the request has already loaded, so
a change made by any worker reaches every worker at its next page, and a page
makes no statement of its own (docs/branding.md, "Caching").
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from authsvc.core import validation
from authsvc.core.database import db
from authsvc.core.models import Domain, DomainBranding

# WCAG 2.1 1.4.3 (AA): normal text needs a contrast ratio of at least 4.5:1 with its background.
AA_CONTRAST = 4.5
WHITE, BLACK = "#ffffff", "#000000"
# The text colour of the main button in the default look (authsvc/static/style.css).
DEFAULT_BUTTON_TEXT = WHITE
_COLOR = re.compile(r"#[0-9a-fA-F]{6}")
# A language tag (BCP 47's shape: a language, then subtags), without the registry's lists.
_LOCALE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
# Brands kept per worker: one per domain in use; the least recently used goes first.
CACHE_SIZE = 512


@dataclass(frozen=True)
class Brand:
    """What a page or an e-mail shows of its domain's branding; the default look has every field None."""

    version: int | None = None
    display_name: str | None = None
    primary_color: str | None = None
    # The main button's text colour: the default's, or black when that would fail AA on primary_color.
    primary_text_color: str | None = None
    background_color: str | None = None
    support_url: str | None = None
    support_email: str | None = None
    privacy_url: str | None = None
    terms_url: str | None = None
    default_locale: str | None = None
    logo_digest: str | None = None

    @property
    def styled(self) -> bool:
        """Whether the domain's stylesheet has anything to say (else pages do not link it)."""
        return self.primary_color is not None or self.background_color is not None

    def stylesheet(self) -> str:
        """The domain's stylesheet: custom properties and the button's text, after the static one."""
        rules = []
        if self.background_color:
            rules.append(f":root {{ --bg: {self.background_color}; }}")
        if self.primary_color:
            rules.append(f":root {{ --accent: {self.primary_color}; }}")
            rules.append(
                f"button:not(.secondary), .button:not(.secondary) {{ background: {self.primary_color}; "
                f"color: {self.primary_text_color}; }}"
            )
        return "\n".join(rules) + "\n"


DEFAULT = Brand()
_cache: OrderedDict[tuple[int, int], Brand] = OrderedDict()
_lock = threading.Lock()


def brand_of(domain: Domain | None) -> Brand:
    """The brand of ``domain`` (the default look for None or an unbranded domain), from this worker's cache."""
    if domain is None or domain.branding_version is None:
        return DEFAULT
    key = (domain.id, domain.branding_version)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    row = db.session.get(DomainBranding, domain.id)
    brand = from_row(row, domain.branding_version) if row is not None else DEFAULT
    with _lock:
        _cache[key] = brand
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return brand


def from_row(row: DomainBranding, version: int | None) -> Brand:
    return Brand(
        version=version,
        display_name=row.display_name,
        primary_color=row.primary_color,
        primary_text_color=text_color_on(row.primary_color) if row.primary_color else None,
        background_color=row.background_color,
        support_url=row.support_url,
        support_email=row.support_email,
        privacy_url=row.privacy_url,
        terms_url=row.terms_url,
        default_locale=row.default_locale,
        logo_digest=row.logo_digest,
    )


def as_json(row: DomainBranding | None, domain: Domain) -> dict[str, Any]:
    """The admin surfaces' view of a domain's branding (never the logo's bytes)."""
    brand = from_row(row, domain.branding_version) if row is not None else DEFAULT
    return {
        "domain": str(domain.id),
        "display_name": brand.display_name,
        "logo": {"content_type": row.logo_type, "digest": brand.logo_digest} if row and row.logo_digest else None,
        "primary_color": brand.primary_color,
        "primary_text_color": brand.primary_text_color,
        "background_color": brand.background_color,
        "support_url": brand.support_url,
        "support_email": brand.support_email,
        "privacy_url": brand.privacy_url,
        "terms_url": brand.terms_url,
        "default_locale": brand.default_locale,
        "updated_at": row.updated_at if row is not None else None,
    }


# The rules of each field: each returns the stored form or raises validation.Invalid with the reason.


def color(value: str) -> str:
    """A colour as ``#RRGGBB`` (stored lower-case)."""
    if not _COLOR.fullmatch(value):
        raise validation.Invalid(f"{value[:20]!r} is not a colour: write it as #RRGGBB (six hex digits)")
    return value.lower()


def link(value: str) -> str:
    """A footer link: an absolute https URL (plain http only for a loopback host), no credentials."""
    try:
        parts = urlsplit(value)
        hostname = parts.hostname
    except ValueError:
        raise validation.Invalid(f"{value[:60]!r} is not a URL") from None
    if parts.scheme not in ("https", "http") or not hostname:
        raise validation.Invalid(f"{value[:60]!r} must be an absolute https URL")
    if parts.scheme == "http" and not validation.is_loopback(hostname):
        raise validation.Invalid(f"{value[:60]!r} must use https (plain http only for a loopback host)")
    if parts.username is not None or parts.password is not None or any(c.isspace() or ord(c) < 32 for c in value):
        raise validation.Invalid(f"{value[:60]!r} must be a URL without credentials or spaces")
    return value


def locale(value: str) -> str:
    """A language tag such as ``en``, ``de-CH`` or ``zh-Hant-TW`` (BCP 47's shape)."""
    if len(value) > 35 or not _LOCALE.fullmatch(value):
        raise validation.Invalid(f"{value[:40]!r} is not a language tag (such as en, de-CH)")
    return value


def relative_luminance(hex_color: str) -> float:
    """WCAG 2.1's relative luminance of an sRGB ``#rrggbb`` colour (0 black to 1 white)."""
    channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2.1's contrast ratio of two colours, from 1 (none) to 21 (black on white)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def text_color_on(background: str) -> str:
    """The default button text if it meets AA on ``background``; else black or white, whichever contrasts more."""
    if contrast_ratio(DEFAULT_BUTTON_TEXT, background) >= AA_CONTRAST:
        return DEFAULT_BUTTON_TEXT
    return max((BLACK, WHITE), key=lambda text: contrast_ratio(text, background))
