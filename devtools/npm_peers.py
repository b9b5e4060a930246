"""The Node packages the tests use as peers (axe-core, ...), installed from npm by the test command.

Which packages, at which versions, is ``tests/peers/node/package.json`` and its committed
``package-lock.json``: add a peer there (``npm install --package-lock-only NAME@VERSION`` in that folder),
never here. ``install()`` runs ``npm ci`` on a copy of the two files in a cache folder named for the lock's
digest, so a run after the first installs nothing, and a changed lock gets its own folder. The test
command (devtools/testrun.py) calls it before the passes and hands the result to the tests as
AUTHSVC_TEST_NODE_MODULES; a test finds a package with ``package_dir(name)``, which installs on first use
when the test command did not (``pytest`` alone). Without npm, or when the install fails, the reason is
said once and the tests that need a package skip, naming it.

    python -m devtools.npm_peers      # install them now; prints the node_modules folder
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "tests" / "peers" / "node"
ENVIRONMENT = "AUTHSVC_TEST_NODE_MODULES"


class PeersMissing(Exception):
    """The Node peers cannot be had; the message says why and what to do."""


def packages() -> list[str]:
    """The names of the pinned peers (package.json's dependencies)."""
    return sorted(json.loads((PEERS / "package.json").read_text())["dependencies"])


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "authsvc" / "node-peers"


def install() -> Path:
    """The node_modules folder with every pinned peer, installed with ``npm ci`` when not yet there."""
    lock = (PEERS / "package-lock.json").read_bytes()
    target = cache_root() / hashlib.sha256(lock + (PEERS / "package.json").read_bytes()).hexdigest()[:16]
    modules = target / "node_modules"
    if all((modules / name / "package.json").is_file() for name in packages()):
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise PeersMissing(
            f"npm is missing: the tests' Node peers ({', '.join(packages())}) cannot be installed "
            "(on Debian: apt-get install npm)"
        )
    target.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PEERS / name, target / name)
    done = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=target,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise PeersMissing(f"npm ci of the tests' Node peers failed in {target}: {done.stderr.strip()[-500:]}")
    return modules


def package_dir(name: str) -> Path:
    """Where the peer ``name`` is installed; PeersMissing (with the reason) when it cannot be."""
    if name not in packages():
        raise PeersMissing(f"{name} is not a pinned peer: add it to tests/peers/node/package.json and its lock")
    given = os.environ.get(ENVIRONMENT)
    modules = Path(given) if given else install()
    found = modules / name
    if not (found / "package.json").is_file():
        raise PeersMissing(f"{name} is not installed in {modules} ({ENVIRONMENT})")
    return found


if __name__ == "__main__":
    try:
        print(install())
    except PeersMissing as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
