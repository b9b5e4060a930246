"""The documentation holds together: links and anchors resolve, no table lists a row twice, and the
checker that runs the pages' shell blocks (tests/e2e/test_docs_run.py) catches a broken example."""

from __future__ import annotations

import pytest

from tests.helpers import docs, in_one_pass

# Files only (the code, the documents, a subprocess of its own), no database or store: the same on either pass.
pytestmark = in_one_pass("sqlite")


@pytest.mark.parametrize("page", docs.pages(), ids=lambda page: page.name)
def test_every_relative_link_and_anchor_resolves(page):
    assert docs.broken_links(page) == []


@pytest.mark.parametrize("page", docs.pages(), ids=lambda page: page.name)
def test_no_table_lists_a_row_twice(page):
    assert docs.repeated_rows(page) == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("GET /healthz, GET /readyz, GET /metrics", "get-healthz-get-readyz-get-metrics"),
        ("POST /auth/oauth/par (RFC 9126)", "post-authoauthpar-rfc-9126"),
        (
            "Password grant (service accounts only; [contract](docs/platform.md#password-grant))",
            "password-grant-service-accounts-only-contract",
        ),
        ("`api_keys/inspect`", "api_keysinspect"),
    ],
)
def test_anchors_follow_githubs_rule(heading, anchor):
    assert docs.slug(heading) == anchor


BROKEN = """# A page

```sh
GREETING=hello
echo "$GREETING world"
```
```
hello world
```

```sh
echo "token: $RANDOM$RANDOM"
```
```
token: …
```

<!-- doc-test: skip (needs a peer) -->
```sh
curl https://peer.invalid/
```

```sh
echo "$GREETING there"
```
```
goodbye there
```

```sh
false
echo "after a failure"
```
"""


def test_the_checker_runs_blocks_in_one_session_and_catches_a_broken_example(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(BROKEN)
    report = docs.run_page(page, docs.reader_environment())
    assert report.ran == ["page.md:3", "page.md:11", "page.md:23", "page.md:30"]
    assert report.skipped == ["page.md:19 (needs a peer)"]
    # The wrong output shown, and a command that failed mid-block, each fail the page.
    assert len(report.failures) == 2, report.failures
    assert report.failures[0].startswith("page.md:23: the output is not what the page shows")
    assert report.failures[1].startswith("page.md:30: __doc_failed__ 1 false")


def test_output_matches_with_placeholders_and_without_regard_to_whitespace():
    assert docs.matches('{"a": "…", "b": 1}', '{"a":"x-y.z","b":1}')
    assert not docs.matches('{"a": "…", "b": 1}', '{"a":"x","b":2}')
    assert docs.matches("http://localhost:5000/x", "http://localhost:5000/x")


def test_a_block_in_a_list_step_runs_without_its_indent(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("1. A step:\n\n   ```sh\n   echo 'in a step'\n   ```\n   ```\n   in a step\n   ```\n")
    [block] = docs.blocks(page)
    assert (block.lang, block.text, block.expected) == ("sh", "echo 'in a step'\n", "in a step\n")
    assert docs.run_page(page, docs.reader_environment()) == docs.Report(ran=["page.md:3"])


def test_a_new_session_continues_from_what_another_set(tmp_path):
    """A page's terminal starts with the variables and functions the sections it continues from set."""
    first = docs.Session(docs.reader_environment())
    try:
        first.run('GREETING="hello\nthere"\ntwice() { echo "$1$1"; }\n')
        state = first.state()
    finally:
        first.close()
    second = docs.Session(docs.reader_environment())
    try:
        assert second.run(state)[1] == []
        assert second.run('echo "$GREETING"; twice ab') == ("hello\nthere\nabab", [])
    finally:
        second.close()


def test_a_section_is_the_blocks_under_its_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n```sh\necho setup\n```\n\n## Later\n\n```sh\necho later\n```\n")
    setup = {block.line for block in docs.blocks(page) if docs.sections(page)[block.line] == "page"}
    assert setup == {3}
    report = docs.run_page(page, docs.reader_environment(), only=lambda block: block.line not in setup)
    assert report == docs.Report(ran=["page.md:9"])
