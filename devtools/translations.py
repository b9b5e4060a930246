"""``python -m devtools.translations``: compile every catalog (authsvc/translations/*/LC_MESSAGES/messages.po).

The service reads the compiled ``messages.mo`` beside each ``.po``; they are built, never
committed (.gitignore): ``scripts/test`` and ``scripts/run`` run this before anything else
reads them, ``make translations`` after it updates the catalogs, and the service itself at
its start (authsvc.web.catalogs, docs/translations.md).
"""

from __future__ import annotations

import sys

from authsvc.web.catalogs import CATALOGS, compile_stale


def main() -> None:
    compiled = compile_stale()
    if "-q" not in sys.argv[1:]:
        print(f"translations: {len(compiled)} catalogs compiled in {CATALOGS}")


if __name__ == "__main__":
    main()
