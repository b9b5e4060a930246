"""``N_``: a mark for the catalogs on text a page translates when it shows it (docs/translations.md).

The core and the features below the pages hold some of what a person reads
(a reserved scope's description, a single sign-on's refusal) without knowing
the request's language; ``make translations`` extracts what ``N_`` marks, and
the page that shows it translates it then (``_(text)`` in its template or view).
JSON answers keep the English text.
"""

from __future__ import annotations


def N_(text: str) -> str:  # noqa: N802 - gettext's conventional name for a no-op mark
    """``text`` itself, marked for extraction."""
    return text
