"""``.venv/bin/python -m devtools.lock [uv pip compile options]``: write the locks from pyproject.toml.

requirements.txt      the runtime dependencies (what ./scripts/run and a deployment install)
requirements-dev.txt  those plus the dev group (what ./scripts/test installs), held to the
                      same versions as requirements.txt

Both pin every package with its hashes, for every platform (``--universal``).
The current locks are the starting point: a package moves only when
pyproject.toml asks for it or an option says so, e.g. ``--upgrade-package redis``
or ``--upgrade``.
"""

from __future__ import annotations

import subprocess
import sys

from devtools.services import REPO, tool

COMMON = ["--universal", "--python-version", "3.11", "--generate-hashes", "--quiet"]


def compile_lock(output: str, *extra: str) -> None:
    argv = [tool("uv"), "pip", "compile", "pyproject.toml", *COMMON, *extra, "-o", output]
    env_command = "python -m devtools.lock"
    subprocess.run([*argv, "--custom-compile-command", env_command], cwd=REPO, check=True)


def main() -> None:
    options = sys.argv[1:]
    compile_lock("requirements.txt", *options)
    compile_lock("requirements-dev.txt", "--group", "dev", "-c", "requirements.txt", *options)
    print("wrote requirements.txt and requirements-dev.txt; ./scripts/test installs them on its next run")


if __name__ == "__main__":
    main()
