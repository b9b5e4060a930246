"""The documentation runs as pasted: each page's shell blocks, in order, against ``./scripts/run``'s service.

A test a page, all one unit of the scheduler (``FIRST`` in tests/conftest.py: handed out before every module, to
one worker, so that the service and the sections pages continue from run once a pass). One service a worker (the
README's command, on a free port, with an instance directory of its own) and
one bash session a page, as a reader pasting its blocks into a terminal. A page continues from what it says it
continues from (``docs.CONTINUES``): the README's flows for every page, and api.md's setup or cli.md's domain
for the pages that use them. Those sections run once a service, in that order, in a terminal of their own,
before the first page that needs them; each page's session starts with the variables and functions they set.
The conventions (output shown, ``…``, skip markers) are in tests/helpers/docs.py and docs/development.md. Each
page's counts of blocks run and skipped show in the run's summary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import docs, in_one_pass
from tests.helpers.run_command import start, stop
from tests.helpers.servers import ROOT, free_port

pytestmark = [
    pytest.mark.slow,
    # The service is scripts/run's own (SQLite and the in-process store) whatever the pass: run it once a command,
    # on the SQLite pass (as the browser tours are: the API tests check the storage on both backends).
    in_one_pass("sqlite"),
]

README, FLOWS, SETUPS, CONTINUES = docs.README, docs.FLOWS, docs.SETUPS, docs.CONTINUES
PAGES = docs.pages()


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _in(setup: tuple[Path, str | None]):
    """Whether a block of ``setup``'s page is in its section."""
    page, anchor = setup
    where = docs.sections(page)
    return lambda block: block.page == page and (anchor is None or where[block.line] == anchor)


def _runs_commands(page: Path) -> bool:
    return any(block.lang in docs.SHELL and block.marker != "skip" for block in docs.blocks(page))


class Reader:
    """A worker's service, and the sections pages continue from, run once each in a terminal of their own."""

    def __init__(self, run, port: int, instance: Path) -> None:
        self.run, self.port = run, port
        self.env = docs.reader_environment(AUTHSVC_INSTANCE_DIR=str(instance), PORT=str(port))
        self.terminal: docs.Session | None = None
        self.done: dict[tuple[Path, str | None], docs.Report] = {}

    def continue_from(self, setups) -> str:
        """Run the ``setups`` (and the README's flows) not run yet, in a reader's order; the declarations of
        what every section run so far set."""
        if self.terminal is None:
            self.terminal = docs.Session(self.env)
        wanted = {FLOWS, *setups}
        for setup in SETUPS:
            if setup in wanted and setup not in self.done:
                self.done[setup] = docs.run_page(setup[0], {}, self.port, session=self.terminal, only=_in(setup))
        failed = [failure for setup in SETUPS if setup in wanted for failure in self.done[setup].failures]
        if failed:
            pytest.fail("a section the page continues from failed:\n\n" + "\n\n".join(failed))
        return self.terminal.state()

    def close(self) -> None:
        if self.terminal is not None:
            self.terminal.close()


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    instance = tmp_path_factory.mktemp("instance")
    port = free_port()
    run = start(instance, port)
    reader = Reader(run, port, instance)
    try:
        yield reader
    finally:
        reader.close()
        stop(run)


def test_the_first_start_prints_what_the_readme_shows(reader):
    [shown] = [block for block in docs.blocks(README) if block.marker == "first-start"]
    lines = reader.run.lines
    printed = lines[: next(i for i, line in enumerate(lines) if line.startswith("Serving on")) + 1]
    assert docs.matches(docs.on_port(shown.text, reader.port), "\n".join(printed)), "\n".join(printed)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_page_runs_as_pasted(page, request, record_property):
    name = _name(page)
    own = [setup for setup in SETUPS if setup[0] == page]
    report = docs.Report()
    if _runs_commands(page):
        reader = request.getfixturevalue("reader")
        state = reader.continue_from((*CONTINUES.get(name, ()), *own))
        # The page's own setup ran (once a service) in the sections' terminal: its blocks count here.
        for setup in own:
            for part in ("ran", "skipped", "failures"):
                getattr(report, part).extend(getattr(reader.done[setup], part))
        session = docs.Session(reader.env)
        try:
            _, failed = session.run(state)
            assert not failed, f"the sections' variables did not carry over: {failed}"
            rest = docs.run_page(
                page, {}, reader.port, session=session, only=lambda block: not any(_in(s)(block) for s in own)
            )
        finally:
            session.close()
        for part in ("ran", "skipped", "failures"):
            getattr(report, part).extend(getattr(rest, part))
    else:
        report = docs.run_page(page, {})
    record_property("docs", f"{name}: {len(report.ran)} blocks ran, {len(report.skipped)} skipped")
    for skipped in report.skipped:
        record_property("docs", f"{name}: skipped {skipped}")
    assert not report.failures, "\n\n".join(report.failures)
