"""``python -m devtools.translations``: compile every catalog (authsvc/translations/*/LC_MESSAGES/messages.po).

The service reads the compiled ``messages.mo`` beside each ``.po``; they are built, never
committed (.gitignore): ``scripts/test`` and ``scripts/run`` run this before anything else
reads them, and ``make translations`` after it updates the catalogs (docs/translations.md).
A fuzzy entry is not compiled (it shows in English) and an empty ``msgstr`` shows in English:
the test suite's catalog check refuses both for every shipped language.
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

CATALOGS = Path(__file__).resolve().parent.parent / "authsvc" / "translations"


def compile_catalog(po: Path) -> Path:
    """Write ``po``'s ``messages.mo`` beside it (fuzzy entries left out) if it is older than the .po."""
    mo = po.with_suffix(".mo")
    if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
        return mo
    with po.open("rb") as source:
        catalog = read_po(source, locale=po.parent.parent.name)
    partial = mo.with_suffix(".mo.tmp")
    with partial.open("wb") as target:
        write_mo(target, catalog, use_fuzzy=False)
    partial.replace(mo)
    return mo


def main() -> None:
    compiled = [compile_catalog(po) for po in sorted(CATALOGS.glob("*/LC_MESSAGES/messages.po"))]
    if "-q" not in sys.argv[1:]:
        print(f"translations: {len(compiled)} catalogs compiled in {CATALOGS}")


if __name__ == "__main__":
    main()
