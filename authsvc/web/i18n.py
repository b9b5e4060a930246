"""The language of every page and e-mail a person reads: which one a request gets, and the catalogs (Flask-Babel).

A request's language is the first of these that names a shipped catalog
(docs/translations.md, "How the language is chosen"):

1. OpenID Connect's ``ui_locales`` (Core 3.1.2.1): on the authorisation
   request itself (the consent page), or in the ``continue`` URL that the
   sign-in and MFA pages carry back to it (``carry_from`` for a URL a view
   holds elsewhere, such as a pending MFA sign-in's);
2. the user's saved choice: the account's ``locale`` once signed in
   (``note_saved``, from the session's user), else the switcher's cookie;
3. ``Accept-Language``;
4. the domain's ``default_locale`` (its branding);
5. English.

A tag matches a catalog by its full name (``pt-BR`` is ``pt_BR``), then by its
language alone (``de-CH`` is ``de``, ``pt`` is ``pt_BR``).

Compiled catalogs are read once per worker, at the first page that needs them,
and kept (Flask-Babel's cache of its domain), as are the shipped languages
(their codes at the start; their own names and directions from ``OWN_NAMES``,
not Babel's locale data): a page costs a few dictionary lookups. JSON errors are never translated; only
what a person reads is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from babel import Locale
from flask import Blueprint, Flask, current_app, request
from flask_babel import Babel, force_locale, format_datetime, get_locale, gettext, refresh

from authsvc.core.branding import brand_of
from authsvc.core.errors import ApiError
from authsvc.core.request_state import part, state_if_in_request
from authsvc.core.security import safe_continue
from authsvc.web import catalogs

EXTENSION = "authsvc.i18n"
DEFAULT = "en"
# The switcher's cookie: the choice of a browser not signed in (a year; the account keeps it once signed in).
COOKIE = "locale"
COOKIE_AGE = 365 * 24 * 3600
# A language tag is short: anything longer is not looked at.
_TAG_MAX = 35
# The continue URL is looked into at most this deep (the sign-in page's continue to the authorisation request).
_CONTINUE_DEPTH = 2


@dataclass(frozen=True)
class Language:
    """A shipped catalog: its name (``pt_BR``), the tag pages declare (``pt-BR``), its own name, its direction."""

    code: str
    tag: str
    name: str
    rtl: bool


@dataclass(frozen=True)
class Languages:
    """The shipped languages of this worker: their codes, read once from the catalogs' directories.

    Each one's own name and direction come from ``OWN_NAMES``; only a catalog missing there is
    looked up in Babel's locale data, at the first page that shows it (``all``).
    """

    codes: tuple[str, ...]

    @functools.cached_property
    def all(self) -> tuple[Language, ...]:
        return tuple(_language(code) for code in self.codes)

    def tags(self) -> list[str]:
        """The tags pages declare (``pt-BR``), in the catalogs' order: no locale data read."""
        return [code.replace("_", "-") for code in self.codes]

    def get(self, code: str) -> Language | None:
        return next((lang for lang in self.all if lang.code == code), None) if code in self.codes else None

    def match(self, tag: str) -> str | None:
        """The shipped catalog ``tag`` names: by the full name, else by its language alone; None if none."""
        if not tag or len(tag) > _TAG_MAX:
            return None
        wanted = tag.strip().replace("-", "_").lower()
        for code in self.codes:
            if code.lower() == wanted:
                return code
        primary = wanted.split("_", 1)[0]
        for code in self.codes:
            if code.split("_", 1)[0].lower() == primary:
                return code
        return None

    def first_match(self, tags: str | None) -> str | None:
        """The first of space-separated ``tags`` (``ui_locales``' form) that names a shipped catalog."""
        for tag in (tags or "").split()[:10]:
            found = self.match(tag)
            if found:
                return found
        return None


@dataclass
class LocaleNote:
    """What views tell the selector of a request: ``ui_locales`` a held URL carries, the account's choice."""

    ui_locales: str | None = None
    saved: str | None = None
    # The page is for operators and stays English (``english_only``).
    english: bool = False


# Each shipped catalog's own name and whether it is written right to left, as Babel's locale data
# (CLDR) gives them: the switcher shows them on every page, and reading them from Babel loads each
# language's whole locale data (about 11 MB for these seven, kept by Babel for the worker's life).
# tests/api/i18n/test_languages.py checks every shipped catalog against Babel.
OWN_NAMES: dict[str, tuple[str, bool]] = {
    "en": ("English", False),
    "ar": ("العربية", True),
    "de": ("Deutsch", False),
    "es": ("Español", False),
    "fr": ("Français", False),
    "ja": ("日本語", False),
    "pt_BR": ("Português (Brasil)", False),
}


def _language(code: str) -> Language:
    known = OWN_NAMES.get(code)
    if known is not None:
        return Language(code=code, tag=code.replace("_", "-"), name=known[0], rtl=known[1])
    return babels_language(code)


def babels_language(code: str) -> Language:
    """``code``'s own name and direction from Babel's locale data (what ``OWN_NAMES`` holds for the shipped)."""
    locale = Locale.parse(code)
    name = locale.get_display_name(locale) or code
    return Language(
        code=code,
        tag=code.replace("_", "-"),
        name=name[:1].upper() + name[1:],
        rtl=locale.character_order == "right-to-left",
    )


def catalog_directories(app: Flask) -> list[Path]:
    """The directories Flask-Babel reads catalogs from (``BABEL_TRANSLATION_DIRECTORIES``, app-relative)."""
    names = app.config.get("BABEL_TRANSLATION_DIRECTORIES", "translations").split(";")
    return [Path(app.root_path, name) for name in names if name]


def _shipped(app: Flask) -> Languages:
    codes = {DEFAULT}
    for directory in catalog_directories(app):
        if directory.is_dir():
            codes.update(p.parent.parent.name for p in directory.glob("*/LC_MESSAGES/messages.mo"))
    return Languages((DEFAULT, *sorted(codes - {DEFAULT})))


def init_app(app: Flask) -> None:
    """Flask-Babel with this module's selector; the shipped languages and the template globals."""
    # Built, not committed: a start without them (gunicorn from the Procfile) compiles them first.
    catalogs.compile_stale()
    Babel(app, locale_selector=select_locale)
    app.extensions[EXTENSION] = _shipped(app)
    app.jinja_env.globals.update(page_language=page_language, languages=languages, language_return=here)
    app.jinja_env.filters["local_time"] = local_time


def local_time(timestamp: float | None) -> str:
    """A moment (Unix seconds) as the page's language writes a date and time (UTC), e.g. ``2. Dez. 2026, 11:41:46``."""
    if timestamp is None:
        return ""
    return str(format_datetime(datetime.fromtimestamp(timestamp, UTC), "medium"))


def languages(app: Flask | None = None) -> Languages:
    """The shipped languages (read at the start)."""
    found: Languages = (app or current_app).extensions[EXTENSION]
    return found


def page_language() -> Language:
    """The language the page is rendered in (its ``lang`` and ``dir``)."""
    locale = get_locale()
    code = str(locale) if locale is not None else DEFAULT
    return languages().get(code) or _language(code)


def current() -> str:
    """The name of the request's language (``de``, ``pt_BR``)."""
    locale = get_locale()
    return str(locale) if locale is not None else DEFAULT


def note_saved(choice: str | None) -> None:
    """The signed-in user's saved choice (the account's ``locale``), for this request's selector."""
    if state_if_in_request() is not None:
        part(LocaleNote).saved = choice


def carry_from(continue_url: str | None) -> None:
    """Take ``ui_locales`` from a URL a view holds (a pending sign-in's way back to the authorisation request)."""
    found = _ui_locales_in(continue_url, _CONTINUE_DEPTH)
    if found and state_if_in_request() is not None:
        part(LocaleNote).ui_locales = found
        # What was rendered so far keeps its language; what is rendered from now on takes this one.
        refresh()


def _ui_locales_in(url: str | None, depth: int) -> str | None:
    """``ui_locales`` of ``url``'s query, or of its ``continue`` URL's (to ``depth``)."""
    if not url or depth <= 0:
        return None
    query = dict(parse_qsl(urlsplit(url).query))
    return query.get("ui_locales") or _ui_locales_in(query.get("continue"), depth - 1)


def _ui_locales_of_request() -> str | None:
    """``ui_locales`` of the request (the authorisation request) or of the URL it continues to."""
    direct = request.args.get("ui_locales")
    if direct:
        return direct
    held = request.args.get("continue")
    if held is None and request.method == "POST" and request.mimetype == "application/x-www-form-urlencoded":
        held = request.form.get("next") or request.form.get("continue")
    return _ui_locales_in(held, _CONTINUE_DEPTH)


def here() -> str:
    """Where the switcher brings the person back: this page (a GET's URL; a form's answer: the page of the form,
    its Referer), with a ``continue`` that is not this origin's left out rather than echoed."""
    target = request.full_path if request.method == "GET" else (request.referrer or "")
    parts = urlsplit(target)
    origin = f"{request.scheme}://{request.host}"
    if parts.netloc and safe_continue(target, origin, default="") == "":
        return ""
    query = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if name != "continue" or safe_continue(value, origin, default="")
    ]
    return parts.path + ("?" + urlencode(query) if query else "")


class _WTFormsMessages:
    """WTForms' own messages ("This field is required.") in the request's language, each catalog read once
    per worker (Flask-WTF's own reads it from disk for every form of every request)."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}

    def _catalog(self) -> Any:
        code = current()
        found = self._loaded.get(code)
        if found is None:
            from babel import support
            from wtforms.i18n import messages_path

            found = self._loaded[code] = support.Translations.load(messages_path(), [code], domain="wtforms")
        return found

    def gettext(self, string: str) -> str:
        return str(self._catalog().ugettext(string))

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return str(self._catalog().ungettext(singular, plural, n))


WTFORMS_MESSAGES = _WTFormsMessages()


def english_only(bp: Blueprint) -> None:
    """Every page of ``bp`` in English, whatever the request asks (the admin console, for operators)."""

    @bp.before_request
    def _english() -> None:
        part(LocaleNote).english = True


def select_locale() -> str:
    """The request's language, by the order in the module's docstring."""
    known = languages()
    note = part(LocaleNote)
    if note.english:
        return DEFAULT
    chosen = (
        known.first_match(note.ui_locales)
        or known.first_match(_ui_locales_of_request())
        or known.match(note.saved or "")
        or known.match(request.cookies.get(COOKIE, ""))
    )
    if chosen:
        return chosen
    for tag, _quality in request.accept_languages:
        chosen = known.match(tag)
        if chosen:
            return chosen
    return domain_default(known)


def domain_default(known: Languages | None = None) -> str:
    """The request's domain's ``default_locale`` if it names a shipped catalog, else English."""
    noted = state_if_in_request()
    domain = noted.domain if noted is not None else None
    return (known or languages()).match(brand_of(domain).default_locale or "") or DEFAULT


def for_message(choice: str | None, domain: Any = None, *, from_page: bool = False) -> str:
    """The language of an e-mail: the recipient's saved ``choice``; else, ``from_page``, the language of the
    page that causes it (the recipient is the person at it); else the domain's default; else English."""
    known = languages()
    found = known.match(choice or "")
    if found is None and from_page and state_if_in_request() is not None:
        found = current()
    return found or known.match(brand_of(domain).default_locale or "") or DEFAULT


def sentence(reason: str) -> str:
    """A rule's reason (``validation.Invalid``, marked N_ in lower case) as a page's sentence, translated."""
    text = str(gettext(reason))
    return f"{text[:1].upper()}{text[1:]}."


def refusal(refused: ApiError) -> str:
    """A refusal (authsvc.core.errors.answer) as a page says it, in the page's language."""
    if refused.error == "too_many_attempts" and "retry_after" in refused.extra:
        seconds = refused.extra["retry_after"]
        if "user code" in refused.description:  # the device page's lockout (authsvc.auth.lockouts)
            return str(gettext("Too many failed user code entries. Retry in %(seconds)s s.", seconds=seconds))
        return str(gettext("Too many failed sign-in attempts. Retry in %(seconds)s s.", seconds=seconds))
    # The descriptions a page shows are marked where they are written (authsvc.core.errors, N_).
    return str(gettext(refused.description))


__all__ = ["COOKIE", "Language", "Languages", "carry_from", "force_locale", "init_app", "note_saved"]
