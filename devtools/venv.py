"""``python3 -m devtools.venv LOCK``: make ``.venv`` and install a lock file into it.

Runs on a bare ``python3`` (standard library only): it is what makes a fresh
clone work. The lock is installed with ``--require-hashes`` only when it
changed since the last successful install (a stamp in ``.venv`` holds its
digest), so a second run costs nothing.

The installer is uv (pinned, with its hashes, in the lock itself): it fetches
and unpacks in parallel, where pip goes one package at a time (a fresh .venv:
about 15 s against 1-2 minutes, most of pip's spent waiting on downloads). uv
is put in with the system ``pip --python`` (pip 22.3+); without that pip, or if
uv cannot be had, the lock goes in with pip as before.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
PYTHON = VENV / "bin" / "python"
UV = VENV / "bin" / "uv"
QUIET = ["-q", "--disable-pip-version-check"]


def lock_digest(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def uv_requirement(lock: Path) -> str | None:
    """The lock's own ``uv==...`` entry with its hashes, or None when the lock has no uv."""
    found = re.search(r"^uv==[^\n]*(?:\\\n[ \t]+--hash=\S+[ \t]*)+", lock.read_text(), re.MULTILINE)
    return found.group(0).rstrip(" \\\n") + "\n" if found else None


def install_uv(lock: Path) -> bool:
    """Put the lock's uv into .venv with the system pip; False when that cannot be done."""
    if UV.exists():
        return True
    requirement = uv_requirement(lock)
    if requirement is None:
        return False
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as pinned:
        pinned.write(requirement)
        pinned.flush()
        pip = [sys.executable, "-m", "pip", "--python", str(PYTHON), "install", *QUIET, "--require-hashes"]
        done = subprocess.run([*pip, "-r", pinned.name], stderr=subprocess.DEVNULL)
    return done.returncode == 0 and UV.exists()


def install(lock: Path) -> bool:
    """The lock into .venv, with uv when it can be had, else with pip; whether it worked."""
    if install_uv(lock):
        # --compile-bytecode, as pip does: else every test worker compiles the same modules at first import.
        uv = [str(UV), "pip", "install", "-q", "--compile-bytecode", "--python", str(PYTHON)]
        uv += ["--require-hashes", "-r", str(lock)]
        if subprocess.run(uv).returncode == 0:
            return True
        print("uv could not install the lock: trying pip", file=sys.stderr, flush=True)
    if subprocess.run([str(PYTHON), "-m", "pip", "--version"], capture_output=True).returncode != 0:
        made = subprocess.run([str(PYTHON), "-m", "ensurepip"], stdout=subprocess.DEVNULL, check=False)
        if made.returncode != 0:
            print(
                "no pip for .venv: install Python's venv and pip (on Debian: apt-get install python3-venv python3-pip)",
                file=sys.stderr,
                flush=True,
            )
            return False
    pip = [str(PYTHON), "-m", "pip", "install", *QUIET, "--require-hashes", "-r", str(lock)]
    return subprocess.run(pip).returncode == 0


def ensure(lock: Path, prefix: str) -> None:
    """Create .venv if it is missing; install ``lock`` into it if it changed since the last install."""
    if not PYTHON.exists():
        print(f"{prefix}: creating .venv", flush=True)
        # Without pip: uv installs (install); ensurepip runs only if pip has to.
        made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(VENV)])
        if made.returncode != 0 or not PYTHON.exists():
            sys.exit(
                f"{prefix}: 'python3 -m venv' failed: install Python 3.11 or later with venv "
                "(on Debian: apt-get install python3-venv)"
            )
    stamp = VENV / f".{lock.name}.sha256"
    want = lock_digest(lock)
    # One installer at a time: the test command's passes run scripts/run at once, and a
    # developer may start two commands; the second waits, then finds the stamp.
    with open(VENV / ".install.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text().strip() == want:
            return
        print(f"{prefix}: installing {lock.name} into .venv", flush=True)
        if not install(lock):
            sys.exit(f"{prefix}: installing {lock.name} failed (see the installer's message above)")
        stamp.write_text(want + "\n")


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python3 -m devtools.venv LOCK_FILE PREFIX")
    ensure(REPO / sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
