"""axe-core (the npm package, a pinned peer: devtools/npm_peers.py) run over a page in Chromium.

The pages' CSP allows no script of ours, so the page that axe checks is opened in a context made with
Playwright's ``bypass_csp=True`` (``axe_context``); the tests check the CSP header itself on their own.
Only WCAG 2 A and AA rules run; a violation of impact serious or critical fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from devtools import npm_peers

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING = ("serious", "critical")


def axe_source() -> str:
    """axe.min.js, or a skip naming what is missing (npm, or the install's failure)."""
    try:
        return (npm_peers.package_dir("axe-core") / "axe.min.js").read_text()
    except npm_peers.PeersMissing as exc:
        pytest.skip(str(exc))


def axe_context(browser: Any, **options: Any) -> Any:
    """A browser context in which axe can be injected despite the pages' CSP."""
    return browser.new_context(bypass_csp=True, **options)


def violations(page: Any, source: str) -> list[dict[str, Any]]:
    """The serious and critical WCAG 2 A/AA violations of the page as it is now."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=source)
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})", TAGS
    )
    return [v for v in result["violations"] if v.get("impact") in FAILING]


def describe(found: list[dict[str, Any]]) -> str:
    """The violations in a line each: rule, impact, and the first nodes' selectors."""
    lines = []
    for v in found:
        targets = [" ".join(map(str, n["target"])) for n in v["nodes"][:3]]
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} at {targets}")
    return "\n".join(lines)
