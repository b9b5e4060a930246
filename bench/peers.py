"""The peers: django-oauth-toolkit, in a virtual environment of its own, on the run's PostgreSQL server.

1. the environment (``bench/.venv-dot``), made once with the interpreter the
   benchmark runs on and ``pip install --no-deps`` of ``bench/dot/requirements.txt``
   (every package pinned); remade when that file changes;
2. its database (``<--database>_dot``) on the same server, migrated by Django
   and seeded by ``bench/dot/seed.py`` in that environment: the applications,
   10,000 access tokens, refresh tokens for every slice, a session cookie;
3. its gunicorn (``bench/dot/gunicorn.py``: the service's settings without
   authsvc's logger), with as many workers as the service.

bench/README.md, "Peers". The peer's rows run in the same rounds as ours.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench import BenchError, say
from devtools.services import REPO, Database, Gunicorn, free_port

DOT = REPO / "bench" / "dot"
VENV = REPO / "bench" / ".venv-dot"
REQUIREMENTS = DOT / "requirements.txt"
# The requirements the environment was made from, kept in it: a changed pin remakes it.
MADE_FROM = VENV / "made-from.txt"


@dataclass
class DotSeed:
    """What the peer's loads need (bench/dot/seed.py's JSON)."""

    client_id: str
    machine_client_id: str
    machine_client_secret: str
    session_cookie: str
    inspect_tokens: list[str]
    refresh_tokens: list[str]
    # Refresh tokens are good once: each load takes the next unused ones.
    _next_refresh: Iterator[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._next_refresh = iter(self.refresh_tokens)

    def take_refresh_tokens(self, count: int) -> list[str]:
        taken = [token for _, token in zip(range(count), self._next_refresh, strict=False)]
        if len(taken) < count:
            raise BenchError("the peer's seeded refresh tokens ran out: seed more (bench/peers.py, refresh_needed)")
        return taken


def environment() -> Path:
    """The peer's virtual environment, made (or remade) from its pinned requirements; returns its bin directory."""
    wanted = REQUIREMENTS.read_text()
    bindir = VENV / "bin"
    if MADE_FROM.exists() and MADE_FROM.read_text() == wanted and (bindir / "gunicorn").exists():
        return bindir
    say(f"making django-oauth-toolkit's virtual environment in {VENV.relative_to(REPO)} (pip, once)")
    shutil.rmtree(VENV, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    steps = (
        [base, "-m", "venv", str(VENV)],
        [str(bindir / "python"), "-m", "pip", "install", "-q", "--no-deps", "-r", str(REQUIREMENTS)],
    )
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            shutil.rmtree(VENV, ignore_errors=True)
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            what = " ".join(argv[:4])
            raise BenchError(f"cannot make the peer's environment ({what}):\n{tail}\n(--no-peer skips it)")
    MADE_FROM.write_text(wanted)
    return bindir


def refresh_needed(loads: int, connections: int) -> int:
    """Refresh tokens for every load of the refresh row: each takes 50 per connection, as ours does."""
    return loads * 50 * connections


class Peer:
    """django-oauth-toolkit's database, records and gunicorn for one run."""

    def __init__(self, admin_url: str, name: str, env: dict[str, str], run_dir: Path) -> None:
        self.db = Database(admin_url, name)
        # The peer's interpreter, not ours: nothing that points into the service's environment goes with it.
        self.env = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
        self.env |= {"DATABASE_URL": self.db.url, "DJANGO_SETTINGS_MODULE": "bench.dot.settings"}
        self.run_dir = run_dir
        self.bindir = environment()
        self.seed: DotSeed | None = None
        self.server: Gunicorn | None = None

    def prepare(self, tokens: int, refresh: int) -> Gunicorn:
        """Create, migrate and seed its database; return its gunicorn (not started)."""
        self.db.create()
        self._run("migrate", [str(self.bindir / "python"), "-m", "django", "migrate", "-v0"])
        out = self.run_dir / "dot-seed.json"
        self._run("seed", [str(self.bindir / "python"), "-m", "bench.dot.seed", str(tokens), str(refresh), str(out)])
        self.seed = DotSeed(**json.loads(out.read_text()))
        out.unlink()
        command = [str(self.bindir / "gunicorn"), "-c", str(DOT / "gunicorn.py"), "bench.dot.wsgi"]
        self.server = Gunicorn("django-oauth-toolkit", free_port(), self.env, self.run_dir / "dot.log", command=command)
        return self.server

    def _run(self, what: str, argv: list[str]) -> None:
        done = subprocess.run(argv, cwd=REPO, env=self.env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise BenchError(f"django-oauth-toolkit's {what} failed:\n{tail}")
