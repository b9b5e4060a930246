"""The documentation runs as pasted: each page's shell blocks, in order, against ``./scripts/run``'s service.

One service for the module (the README's command, on a free port, with an instance directory of
its own); one bash session for every page, as a reader pasting the blocks into one terminal. The
conventions (output shown, ``…``, skip markers) are in tests/helpers/docs.py and
docs/development.md. Each page's counts of blocks run and skipped show in the run's summary.
"""

from __future__ import annotations

import pytest

from tests.helpers import docs, in_one_pass
from tests.helpers.run_command import start, stop
from tests.helpers.servers import ROOT, free_port

pytestmark = [
    pytest.mark.slow,
    # The service is scripts/run's own (SQLite and the in-process store) whatever the pass: run it once a command,
    # on the SQLite pass, which finishes first (7-8 CPU-minutes against the PostgreSQL pass's 11-12).
    in_one_pass("sqlite"),
]

# Every page, README.md first and then docs/ by name, in one session: a page continues from the
# README's flows (their variables, as each page says), and docs/api.md's setup and docs/cli.md's
# domain come before the pages that use them.
PAGES = docs.pages()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    instance = tmp_path_factory.mktemp("instance")
    port = free_port()
    run = start(instance, port)
    try:
        yield run, port, instance
    finally:
        stop(run)


def test_the_first_start_prints_what_the_readme_shows(service):
    run, port, _ = service
    [shown] = [block for block in docs.blocks(ROOT / "README.md") if block.marker == "first-start"]
    printed = run.lines[: next(i for i, line in enumerate(run.lines) if line.startswith("Serving on")) + 1]
    assert docs.matches(docs.on_port(shown.text, port), "\n".join(printed)), "\n".join(printed)


def test_the_pages_run_as_pasted(service, record_property):
    _, port, instance = service
    session = docs.Session(docs.reader_environment(AUTHSVC_INSTANCE_DIR=str(instance), PORT=str(port)))
    failures = []
    try:
        for page in PAGES:
            report = docs.run_page(page, {}, port, session=session)
            name = page.relative_to(ROOT)
            record_property("docs", f"{name}: {len(report.ran)} blocks ran, {len(report.skipped)} skipped")
            for skipped in report.skipped:
                record_property("docs", f"{name}: skipped {skipped}")
            failures += report.failures
    finally:
        session.close()
    assert not failures, "\n\n".join(failures)
