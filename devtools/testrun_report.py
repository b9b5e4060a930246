"""What the test command prints and how it ends (devtools/testrun.py): its progress lines (``say`` on stdout,
``err`` on stderr, both prefixed ``test:``), the counts of a pass read from pytest's JUnit report
(``junit_counts``), and ``Results``: a ``== result:`` line per step, then, after the run, those lines and the
closing ``total: N passed, N failed, N skipped`` line, and the exit code.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


def say(message: str) -> None:
    """Progress on stdout: it keeps its place among pytest's output in a CI log."""
    print(f"test: {message}", flush=True)


def err(message: str) -> None:
    print(f"test: {message}", file=sys.stderr, flush=True)


def junit_counts(path: Path) -> tuple[int, int, int] | None:
    """(passed, failed + errors, skipped) from a pytest JUnit XML report; None without one (``--version``)."""
    try:
        root = ET.parse(path).getroot()  # noqa: S314 - pytest's own report of this run
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests - failed - skipped, failed, skipped


@dataclass
class Results:
    """The outcome of a run's steps: a result line each, whether any failed, and the passes' counts added up."""

    lines: list[str] = field(default_factory=list)
    failed: bool = False
    totals: list[int] | None = None

    def record(self, name: str, code: int, counts: tuple[int, int, int] | None = None, timing: str = "") -> None:
        what = {0: "passed", 5: "FAILED (pytest exit 5: no tests collected)"}.get(code, f"FAILED (exit {code})")
        self.failed |= code != 0
        detail = f" ({counts[0]} passed, {counts[1]} failed, {counts[2]} skipped)" if counts else ""
        self.lines.append(f"== result: {name}: {what}{detail}{timing}")
        if counts:
            self.totals = [a + b for a, b in zip(self.totals or [0, 0, 0], counts, strict=True)]

    def summary(self) -> int:
        print()
        print("\n".join(self.lines))
        # Both passes added up, in the plain "N passed, N failed" form that CI
        # reads as the closing line of the run.
        if self.totals:
            print(f"total: {self.totals[0]} passed, {self.totals[1]} failed, {self.totals[2]} skipped")
        return 1 if self.failed else 0
