"""panva's openid-client as the relying party of end-to-end tests: the harnesses of tests/e2e/rp/
(rp.mjs, par.mjs, dpop.mjs, fapi.mjs), installed and run the same way by every test that uses one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

# The password of the relying parties' person and the scopes they ask for.
PASSWORD = "relying party password"
SCOPES = "openid profile email groups"

RP_SOURCE = Path(__file__).resolve().parents[1] / "e2e" / "rp"
REDIRECT_URI = "http://127.0.0.1:9/callback"
EMAIL = "alice@example.com"


@pytest.fixture(scope="module")
def openid_client() -> list[str]:
    """tests/e2e/rp/ with its node_modules, installed once per lock file into a cache directory:
    ``[node, path of rp.mjs]``; the other harnesses lie beside it.

    The test workers of both passes may ask at once, on a machine whose cache is empty: one
    installs, under a file lock, into a directory of its own that becomes the cache's in one
    rename; the others wait for it. A harness changed since is written whole (a rename too),
    never over a file that another worker's node may be reading.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed to run openid-client (the Node relying party); neither is installed")
    lock = (RP_SOURCE / "package-lock.json").read_bytes()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "authsvc"
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"rp-{hashlib.sha256(lock).hexdigest()[:16]}"
    with open(cache / f"{target.name}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not (target / "node_modules" / "openid-client").is_dir():
            _install(npm, target)
        for script in RP_SOURCE.glob("*.mjs"):  # the harnesses and what they share (harness.mjs)
            _write_if_changed(target / script.name, script.read_bytes())
    return [node, str(target / "rp.mjs")]


def _install(npm: str, target: Path) -> None:
    """``npm ci`` of tests/e2e/rp/ into a new directory, renamed to ``target`` once complete."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{target.name}."))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(RP_SOURCE / name, staging / name)
        installed = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if installed.returncode != 0:
            pytest.skip(f"npm ci could not install openid-client from the npm registry: {installed.stderr[-500:]}")
        shutil.rmtree(target, ignore_errors=True)  # an earlier install that did not finish
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_if_changed(path: Path, content: bytes) -> None:
    if path.is_file() and path.read_bytes() == content:
        return
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_bytes(content)
    temporary.replace(path)


def seed_domain(service, password: str, scopes: str, *domain_options: str) -> None:
    """A domain on the service's own host (127.0.0.1) with ``scopes``, and Alice, who signs in with ``password``."""
    service.cli("domains", "create", "--host", "127.0.0.1", *domain_options)
    service.cli("domains", "scopes", "add", "--domain", "127.0.0.1", *scopes.split())
    service.cli("users", "create", "--domain", "127.0.0.1", "--email", EMAIL, "--password", password, "--name", "Alice")


def run_harness(openid_client: list[str], script: str, service, app: dict, password: str, *extra: str) -> dict:
    """Run the harness ``script`` as ``app`` signing Alice in; its steps by name, once it says every one passed."""
    node, rp = openid_client
    result = subprocess.run(
        [
            node,
            str(Path(rp).with_name(script)),
            "--issuer",
            service.url,
            # "=": a client_id may start with "-", which parseArgs would take for an option.
            f"--client-id={app['client_id']}",
            "--redirect-uri",
            REDIRECT_URI,
            "--email",
            EMAIL,
            "--password",
            password,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip(), f"{script} exited {result.returncode} without output: {result.stderr[-2000:]}"
    out = json.loads(result.stdout)
    assert result.returncode == 0 and out["ok"], (out.get("error") or result.stderr, out["steps"][-2:])
    return {step.pop("step"): step for step in out["steps"]}
