"""The documentation as the tests read it: pages, headings and links, tables, and shell blocks to run.

Conventions (docs/development.md, "The documentation is tested"):

- A fence tagged ``sh`` or ``bash`` is meant to be pasted: it runs, in order, in one bash
  session per page (variables carry to later blocks, as for a reader pasting them).
- A fence right after it (only blank lines between) that is not a shell block is the output the
  reader should see; ``…`` in it stands for any text (tokens, ids, times) and whitespace is not
  compared.
- ``<!-- doc-test: skip (why) -->`` right before a fence leaves it out, and the reason is shown.
- ``localhost:5000`` in a block is the service under test, wherever it listens.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.servers import ROOT

SHELL = {"sh", "bash", "shell"}
_MARKER = re.compile(r"^<!--\s*doc-test:\s*(?P<what>[\w-]+)\s*(?:\((?P<why>.*)\))?\s*-->$")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


# What tests/e2e/test_docs_run.py runs before a page.
README = ROOT / "README.md"
# The sections pages continue from, in the order a reader meets them: (page, the anchor of its section or
# None for the whole page). Each runs once a service; what one creates, no other page creates again.
FLOWS = (README, None)
API_SETUP = (ROOT / "docs/api.md", "http-api")
CLI_DOMAIN = (ROOT / "docs/cli.md", "setting-up-a-domain")
SETUPS = (FLOWS, API_SETUP, CLI_DOMAIN)
# What a page continues from, besides the README's flows, as its opening paragraph says.
CONTINUES = {
    "docs/api.md": (API_SETUP,),
    "docs/cli.md": (CLI_DOMAIN,),
    "docs/mfa.md": (API_SETUP, CLI_DOMAIN),
    "docs/oidc.md": (CLI_DOMAIN,),
    "docs/operations.md": (CLI_DOMAIN,),
}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(text: str) -> list[str]:
    """The page's lines with those inside fences blanked (a ``#`` in a shell block is no heading)."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _prose(page.read_text()):
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            name = slug(heading.group(1))
            count = seen.get(name, 0)
            seen[name] = count + 1
            found.add(name if count == 0 else f"{name}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """``page:line: target`` for each relative link whose file or ``#anchor`` does not exist."""
    broken = []
    for number, line in enumerate(_prose(page.read_text()), 1):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}:{number}: {target} (no such file)")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(f"{page.name}:{number}: {target} (no such heading)")
    return broken


def repeated_rows(page: Path) -> list[str]:
    """``page:line: row`` for each table row whose first cell an earlier row of the same table has.

    A first cell that is a number (a measurement) may repeat: then only a whole row repeated counts.
    """
    repeated: list[str] = []
    table: dict[str, int] | None = None
    for number, line in enumerate(_prose(page.read_text()), 1):
        if not line.startswith("|"):
            table = None
            continue
        table = {} if table is None else table
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not cells[0] or re.fullmatch(r":?-+:?", cells[0]):
            continue
        key = line.strip() if re.fullmatch(r"[\d.,]+", cells[0]) else cells[0]
        if key in table:
            repeated.append(f"{page.name}:{number}: {cells[0]} (as at line {table[key]})")
        else:
            table[key] = number
    return repeated


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    text: str
    marker: str | None = None  # "skip", "first-start", ...
    reason: str | None = None
    expected: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


def sections(page: Path) -> dict[int, str]:
    """Each line's section: the anchor of the nearest heading above it (lines before any: "")."""
    found, current, seen = {}, "", {}
    for number, line in enumerate(_prose(page.read_text()), 1):
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            name = slug(heading.group(1))
            count = seen.get(name, 0)
            seen[name] = count + 1
            current = name if count == 0 else f"{name}-{count}"
        found[number] = current
    return found


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, each shell block with the output shown after it."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = previous_end = 0
    while i < len(lines):
        # A fence may be indented (a step of a numbered list); its lines lose that indent.
        fence = re.match(r"^( *)```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, indent = i, len(fence.group(1))
        i += 1
        body = []
        while i < len(lines) and not lines[i].lstrip().startswith("```"):
            line = lines[i]
            body.append(line[indent:] if line[:indent].isspace() else line.lstrip())
            i += 1
        i += 1
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before)
        block = Block(page, start + 1, fence.group(2).lower(), "\n".join(body) + "\n")
        if marker:
            block.marker, block.reason = marker.group("what"), marker.group("why")
        previous = found[-1] if found else None
        between = lines[previous_end:start] if previous else []
        if (
            previous is not None
            and previous.lang in SHELL
            and previous.expected is None
            and block.lang not in SHELL
            and not marker
            and not any(line.strip() for line in between)
        ):
            previous.expected = block.text
        else:
            found.append(block)
        previous_end = i
    return found


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is what ``expected`` shows: whitespace aside, ``…`` standing for any text."""
    squeezed = re.sub(r"\s+", "", expected)
    pattern = ".*?".join(re.escape(part) for part in squeezed.split("…"))
    return re.fullmatch(pattern, re.sub(r"\s+", "", actual), re.DOTALL) is not None


@dataclass
class Report:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Session:
    """One bash, as a reader's terminal: each block is pasted in turn, its output read back.

    A block runs from a file (``source``) with its input from /dev/null, so a command that reads
    its input cannot swallow the blocks after it; each block has ``timeout`` seconds.
    """

    def __init__(self, env: dict[str, str], cwd: Path = ROOT, timeout: float = 180) -> None:
        self.timeout = timeout
        self.files = Path(tempfile.mkdtemp(prefix="doc-blocks-"))
        self.process = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pending = b""
        # Any command of a block that fails, even mid-block, is reported (a reader would see it).
        self._send("exec 2>&1; trap 'echo \"__doc_failed__ $? $BASH_COMMAND\"' ERR\n")
        self.names = set(self.run("compgen -v")[0].split())

    def state(self) -> str:
        """The variables and functions the blocks set so far, as bash declarations another session can source."""
        names = sorted(set(self.run("compgen -v")[0].split()) - self.names - {"_"})
        variables = self.run(f"declare -p {' '.join(names)}")[0] if names else ""
        return f"{variables}\n{self.run('declare -f')[0]}\n"

    def _send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def _lines_until(self, end: str) -> tuple[list[str], bool]:
        assert self.process.stdout is not None
        fd, lines = self.process.stdout.fileno(), []
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\n" in self.pending:
                raw, self.pending = self.pending.split(b"\n", 1)
                line = raw.decode(errors="replace")
                if line == end:
                    return lines, True
                lines.append(line)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return lines, False
            chunk = os.read(fd, 65536)
            if not chunk:
                return lines, False
            self.pending += chunk

    def run(self, text: str) -> tuple[str, list[str]]:
        """The block's output, and the commands of it that failed."""
        end = f"__doc_block_{uuid.uuid4().hex}__"
        path = self.files / f"{end}.sh"
        path.write_text(text)
        self._send(f"source {path} </dev/null; echo; echo {end}\n")
        lines, finished = self._lines_until(end)
        failed = [line.strip() for line in lines if line.startswith("__doc_failed__")]
        if not finished:
            failed.append(f"no end within {self.timeout:.0f} s")
        output = "\n".join(line for line in lines if not line.startswith("__doc_failed__"))
        return output.removesuffix("\n"), failed

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        # Whatever a block left running (its session's process group) goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(self.files, ignore_errors=True)


def reader_environment(**env: str) -> dict[str, str]:
    """A reader's shell: a PATH and a HOME, none of the test run's settings, and ``env``."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(ROOT)), **env}


def run_page(
    page: Path,
    env: dict[str, str],
    port: int | None = None,
    session: Session | None = None,
    only: Callable[[Block], bool] = lambda block: True,
) -> Report:
    """Run ``page``'s shell blocks (those ``only`` keeps) in order in one session (a new one in environment
    ``env``, or ``session``, which the page continues); what ran, what was skipped and why, what failed."""
    report = Report()
    own = session is None
    session = session or Session(env)
    try:
        for block in blocks(page):
            if block.lang not in SHELL or not only(block):
                continue
            if block.marker == "skip":
                report.skipped.append(f"{block.where} ({block.reason or 'no reason given'})")
                continue
            text, expected = block.text, block.expected
            if port is not None:
                text = on_port(text, port)
                expected = on_port(expected, port) if expected is not None else None
            output, failed = session.run(text)
            report.ran.append(block.where)
            if any(line.startswith("no end within") for line in failed):
                report.failures.append(f"{block.where}: {'; '.join(failed)}\n{output}")
                break  # the session is stuck in this block
            if failed:
                report.failures.append(f"{block.where}: {'; '.join(failed)}\n{output}")
            elif expected is not None and not matches(expected, output):
                report.failures.append(f"{block.where}: the output is not what the page shows:\n{output}")
    finally:
        if own:
            session.close()
    return report


def on_port(text: str, port: int) -> str:
    return re.sub(r"\b(localhost|127\.0\.0\.1):5000\b", rf"\g<1>:{port}", text)
