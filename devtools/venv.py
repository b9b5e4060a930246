"""``python3 -m devtools.venv LOCK``: make ``.venv`` and install a lock file into it.

Runs on a bare ``python3`` (standard library only): it is what makes a fresh
clone work. The lock is installed with ``--require-hashes`` only when it
changed since the last successful install (a stamp in ``.venv`` holds its
digest), so a second run costs nothing.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
PYTHON = VENV / "bin" / "python"


def lock_digest(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def ensure(lock: Path, prefix: str) -> None:
    """Create .venv if it is missing; install ``lock`` into it if it changed since the last install."""
    if not PYTHON.exists():
        print(f"{prefix}: creating .venv", flush=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)])
        if made.returncode != 0 or not PYTHON.exists():
            sys.exit(
                f"{prefix}: 'python3 -m venv' failed: install Python 3.11 or later with venv "
                "(on Debian: apt-get install python3-venv)"
            )
    stamp = VENV / f".{lock.name}.sha256"
    want = lock_digest(lock)
    if stamp.exists() and stamp.read_text().strip() == want:
        return
    print(f"{prefix}: installing {lock.name} into .venv", flush=True)
    installed = subprocess.run(
        [str(PYTHON), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--require-hashes", "-r", str(lock)]
    )
    if installed.returncode != 0:
        sys.exit(f"{prefix}: installing {lock.name} failed (see pip's message above)")
    stamp.write_text(want + "\n")


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python3 -m devtools.venv LOCK_FILE PREFIX")
    ensure(REPO / sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
