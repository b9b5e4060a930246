"""The compiled catalogs: each ``messages.po`` of authsvc/translations compiled to the ``messages.mo`` beside it.

The ``.mo`` files are built, never committed (docs/translations.md). ``compile_stale`` is what every
start runs (authsvc.web.i18n.init_app): a deployment that starts gunicorn straight from the Procfile
gets its catalogs as ``./scripts/run`` does, and a start whose catalogs are current only looks at
their dates. ``python -m devtools.translations`` (``scripts/test``, ``scripts/run``,
``make translations``) runs it too. A fuzzy entry is left out (it shows in English); the catalog
checks of the test suite refuse fuzzy and missing ones for every shipped language.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

CATALOGS = Path(__file__).resolve().parent.parent / "translations"


def compile_catalog(po: Path) -> Path:
    """Write ``po``'s ``messages.mo`` beside it (fuzzy entries left out) unless it is newer than the .po."""
    mo = po.with_suffix(".mo")
    if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
        return mo
    # Babel's catalog reader and writer, only for a catalog to compile: a start whose catalogs are current
    # goes without them (docs/performance.md, "Memory by role").
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as source:
        catalog = read_po(source, locale=po.parent.parent.name)
    # Workers starting together each write their own file; the last rename wins, with the same bytes.
    partial = mo.with_name(f"{mo.name}.{os.getpid()}.tmp")
    with partial.open("wb") as target:
        write_mo(target, catalog, use_fuzzy=False)
    partial.replace(mo)
    return mo


def compile_stale(directory: Path = CATALOGS) -> list[Path]:
    """Compile every catalog of ``directory`` whose ``.mo`` is missing or older than its ``.po``.

    A directory the process may not write (a read-only image) keeps what it has, with a warning:
    the languages whose ``.mo`` is missing are then not offered.
    """
    compiled = []
    for po in sorted(directory.glob("*/LC_MESSAGES/messages.po")):
        try:
            compiled.append(compile_catalog(po))
        except OSError as exc:
            log.warning("catalog %s not compiled (%s): build it with python -m devtools.translations", po, exc)
    return compiled
