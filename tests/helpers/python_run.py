"""Python in a fresh interpreter with the repository's settings, for the tests of what a new worker does."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# This process's own: workers of pytest-xdist and the two passes may run these at once.
INSTANCE = Path(tempfile.mkdtemp(prefix="authsvc-config-test-"))


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "AUTHSVC_INSTANCE_DIR": str(INSTANCE)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )
