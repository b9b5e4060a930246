"""docs/development.md's map of the code names every package and module of authsvc.

A reader finds where a concept lives from the map: a package or module it leaves out is one nobody
looks for there, and a map that grows stale stops being read. The map is the ``Layout`` block of
docs/development.md: an entry per package (``authsvc/oauth/``) naming its modules by their stem;
a subpackage is named in its own entry or in its parent's (``schemas/``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import in_one_pass

# Files only (the code, the documents, a subprocess of its own), no database or store: the same on either pass.
pytestmark = in_one_pass("sqlite")

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "authsvc"


def _entries() -> dict[str, str]:
    """The map's entries by their path (``authsvc/oauth/``): the text beside it and under it."""
    text = (ROOT / "docs" / "development.md").read_text()
    block = text[text.index("\napp.py ") :]
    block = block[: block.index("```")]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        if line and not line[0].isspace():
            current, _, rest = line.partition(" ")
            entries[current] = rest
        elif current is not None:
            entries[current] += "\n" + line
    return entries


ENTRIES = _entries()
PACKAGES = sorted(
    init.parent.relative_to(ROOT).as_posix()
    for init in PACKAGE.rglob("__init__.py")
    if "migrations" not in init.parts and init.parent != PACKAGE
)


def _entry_of(package: str) -> tuple[str, str]:
    """The entry that names ``package``: its own, or its nearest parent package's; and the name it goes by there."""
    path = package
    while f"{path}/" not in ENTRIES and "/" in path:
        path = path.rsplit("/", 1)[0]
    name = f"{package.removeprefix(path + '/')}/" if path != package else ""
    return ENTRIES.get(f"{path}/", ""), name


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_of_authsvc_is_on_the_map(package):
    entry, name = _entry_of(package)
    assert entry, f"docs/development.md's map has no entry for {package}/"
    assert not name or name in entry, f"the entry of {package}'s parent does not name {name}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_of_a_package_is_named_in_its_entry(package):
    entry, _ = _entry_of(package)
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", entry))
    modules = sorted(
        module.stem for module in (ROOT / package).glob("*.py") if module.stem not in ("__init__", "__main__")
    )
    assert [module for module in modules if module not in named] == []


def test_the_map_names_no_package_that_does_not_exist():
    mapped = [path for path in ENTRIES if path.startswith("authsvc/") and path.endswith("/")]
    assert [path for path in mapped if not (ROOT / path).is_dir()] == []
