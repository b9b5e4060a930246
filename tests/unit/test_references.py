"""References lead somewhere: dotted module names resolve; no code cites a document outside the repository."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import tokenize
from pathlib import Path

from tests.helpers import in_one_pass

# Files only (the code, the documents, a subprocess of its own), no database or store: the same on either pass.
pytestmark = in_one_pass("sqlite")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("authsvc", "config", "bench", "devtools")
# Not in quotes: "authsvc.redis" is a key of app.extensions, not a module.
DOTTED = re.compile(r"(?<![\"'])\bauthsvc(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# "SPEC 4.1", "SPEC.md", "DESIGN.md": documents that are not in the repository.
OUTSIDE = re.compile(r"\bSPEC(?:\s+\d|\.md)|\bDESIGN(?:\.md)?\b")


def _python_files(folders: tuple[str, ...]) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring line in ``path``."""
    source = path.read_text(encoding="utf-8")
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            text = first.value.value if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else None
            if isinstance(text, str):
                found.extend((first.lineno + offset, line) for offset, line in enumerate(text.splitlines()))
    return found


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or an attribute reachable from the longest module prefix."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        value: object = importlib.import_module(name)
        for attribute in parts[end:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_every_dotted_module_name_in_comments_and_docstrings_resolves() -> None:
    broken = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in _python_files(SOURCES)
        for line, text in _comments_and_docstrings(path)
        for name in DOTTED.findall(text)
        if not _resolves(name)
    ]
    assert broken == [], "names of modules that do not exist:\n" + "\n".join(broken)


def test_no_code_cites_documents_outside_the_repository() -> None:
    citations = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _python_files((*SOURCES, "tests"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert citations == [], "cite an RFC or docs/ instead:\n" + "\n".join(citations)


def test_readme_and_docs_cite_no_documents_outside_the_repository() -> None:
    citations = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert citations == [], "cite an RFC or docs/ instead:\n" + "\n".join(citations)
