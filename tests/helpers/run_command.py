"""``./scripts/run`` as a newcomer starts it: on a free port, with an instance directory of its own."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import requests

from tests.helpers.servers import ROOT

# "  service account      service@localhost / PASSWORD (password grant)": the demo block's rows.
ROW = re.compile(r"^  (?P<label>[a-z ]+?)\s{2,}(?P<value>\S.*)$")


class Run:
    """A running ./scripts/run, its output so far, and the demo block it printed."""

    def __init__(self, process: subprocess.Popen, lines: list[str], demo: dict[str, str]) -> None:
        self.process, self.lines, self.demo = process, lines, demo

    def credentials(self) -> dict[str, str]:
        service, _, service_password = self.demo["service account"].split()[:3]
        person, _, person_password = self.demo["person"].split()[:3]
        return {
            "client_id": self.demo["application"].split()[0],
            "username": service,
            "password": service_password,
            "person": person,
            "person_password": person_password,
        }


def start(instance: Path, port: int) -> Run:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(instance)),
        "PORT": str(port),
        "AUTHSVC_INSTANCE_DIR": str(instance),
    }
    process = subprocess.Popen(
        [str(ROOT / "scripts/run")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 120
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("Serving on"):
            break
        assert time.monotonic() < deadline
    demo = {m["label"]: m["value"] for m in map(ROW.match, lines) if m}
    assert demo, f"the run command printed no demo block: {lines}"
    # The rest of the output, read off the pipe so that gunicorn never blocks on it.
    threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in process.stdout), daemon=True).start()
    while True:
        try:
            requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return Run(process, lines, demo)
        except (requests.ConnectionError, requests.Timeout):
            assert process.poll() is None and time.monotonic() < deadline, lines
            time.sleep(0.2)


def stop(run: Run) -> None:
    os.killpg(run.process.pid, signal.SIGTERM)
    run.process.wait(timeout=30)
