"""What a session's User-Agent says, in words a person recognises ("Firefox on Linux").

A short heuristic, not a parser: the browser is the first of a few well-known
product tokens found, in an order that puts the ones other browsers imitate
last (every Chromium browser says "Safari", Edge and Opera say "Chrome"); the
system likewise. Anything else is "an unknown browser": the list shows the
address and times beside it, which is what tells one session from another.

The words are lazy strings (flask_babel.lazy_gettext): a page or an e-mail makes them text in its
own language; product and system names stay as they are.
"""

from __future__ import annotations

from typing import Any

from flask_babel import lazy_gettext as _l

# (token in the header, the name shown), the most specific first.
_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("SamsungBrowser/", "Samsung Internet"),
    ("Firefox/", "Firefox"),
    ("FxiOS/", "Firefox"),
    ("CriOS/", "Chrome"),
    ("HeadlessChrome/", "Chrome (headless)"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
    ("curl/", "curl"),
    ("python-requests/", "Python requests"),
)
_SYSTEMS = (
    ("iPhone", "iOS"),
    ("iPad", "iPadOS"),
    ("Android", "Android"),
    ("CrOS", "ChromeOS"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("Macintosh", "macOS"),
    ("Linux", "Linux"),
)


def describe(agent: str | None) -> Any:
    """The browser and system of ``agent``, e.g. "Chrome on Windows"; "an unknown browser" when it says neither."""
    if not agent:
        return _l("an unknown browser")
    browser = next((name for token, name in _BROWSERS if token in agent), None)
    system = next((name for token, name in _SYSTEMS if token in agent), None)
    if browser and system:
        return _l("%(browser)s on %(system)s", browser=browser, system=system)
    return browser or (_l("a browser on %(system)s", system=system) if system else _l("an unknown browser"))


# How a session signed in, from its ``amr`` (OpenID Connect's Authentication Method Reference values).
def method(amr: list[str] | None) -> Any:
    """How the session signed in, in words: "password", "password and a second factor", "single sign-on"..."""
    values = set(amr or ["pwd"])
    if "fed" in values:
        return _l("single sign-on")
    if "mfa" in values or values & {"otp", "hwk", "swk"}:
        return _l("password and a second factor") if "pwd" in values else _l("a second factor")
    if "pwd" in values:
        return _l("password")
    return ", ".join(sorted(values))
