"""The pseudo-locale of tests/api/i18n/test_pseudo_locale.py: every message of messages.pot bracketed and
accented, compiled at test time as the English catalog, and the words of a page that stayed outside."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

CATALOGS = Path(__file__).resolve().parents[3] / "authsvc" / "translations"


def template() -> Catalog:
    with (CATALOGS / "messages.pot").open("rb") as source:
        return read_po(source)


# The pseudo-locale: every message between brackets, its letters swapped for accented ones. A page
# rendered with it shows any text that did not come from a catalog as plain ASCII letters.
OPEN, CLOSE = "\u27e6", "\u27e7"
_ACCENTED = str.maketrans("aeiouAEIOU", "àéîöûÀÉÎÖÛ")
_KEEP = re.compile(r"(%\([a-z_]+\)s|<[^>]+>|&[a-z]+;)")


def pseudo(text: str) -> str:
    parts = _KEEP.split(text)
    return OPEN + "".join(p if _KEEP.fullmatch(p) else p.translate(_ACCENTED) for p in parts) + CLOSE


@pytest.fixture(scope="module")
def pseudo_catalogs(tmp_path_factory) -> Path:
    """A catalog directory whose English is the pseudo-locale (the service reads English from it)."""
    root = tmp_path_factory.mktemp("pseudo")
    catalog = Catalog(locale="en")
    for message in template():
        if not message.id:
            continue
        if isinstance(message.id, tuple):
            catalog.add(message.id, tuple(pseudo(part) for part in message.id), flags=message.flags)
        else:
            catalog.add(message.id, pseudo(message.id), flags=message.flags)
    (root / "en" / "LC_MESSAGES").mkdir(parents=True)
    with (root / "en" / "LC_MESSAGES" / "messages.mo").open("wb") as target:
        write_mo(target, catalog)
    return root


class VisibleText(HTMLParser):
    """The text a person sees on a page (and its title), without scripts, the switcher's language names (each
    in its own language) and ``<code>`` (scopes, keys, recovery codes: data, not words)."""

    def __init__(self) -> None:
        super().__init__()
        self.skipping: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("script", "style", "option", "code"):
            self.skipping.append(tag)
        for name, value in attrs:
            if name in ("placeholder", "aria-label", "alt") and value:
                self.texts.append(value)

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.texts.append(data)


def unmarked(page: str, *dynamic: str) -> list[str]:
    """Words of ``page`` outside the pseudo-locale's brackets, once the page's own data is taken out."""
    parser = VisibleText()
    parser.feed(page)
    text = html.unescape(" ".join(parser.texts))
    for value in sorted(dynamic, key=len, reverse=True):
        text = text.replace(value, " ")
    while True:
        stripped = re.sub(OPEN + "[^" + OPEN + CLOSE + "]*" + CLOSE, " ", text)
        if stripped == text:
            break
        text = stripped
    # Dates and times (the pseudo-locale formats them as English does), codes, addresses.
    text = re.sub(r"\b[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2}\s?[AP]M\b", " ", text)
    return re.findall(r"[A-Za-z]{2,}", text)
