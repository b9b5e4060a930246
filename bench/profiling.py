"""``--profile``: py-spy samples the gunicorn workers while a load runs.

The samples are written as collapsed stacks (``bench/results/profile-NAME.txt``,
for flamegraph tools or speedscope) and summarised: the share of a request's
wall time spent in each function, counted once per stack (inclusive) and at the
top of the stack (self). Waiting on PostgreSQL or Redis shows as time in the
socket call that waits (``--idle`` sampling), which is the point.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

from devtools.services import tool

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
# Frames below this one are the request; the rest is gunicorn waiting for one.
REQUEST_FRAME = "handle_request"


def start(master_pid: int, out: Path, duration: float, rate: int = 200) -> subprocess.Popen:
    argv = [
        tool("py-spy"),
        "record",
        "--pid",
        str(master_pid),
        "--subprocesses",
        "--idle",
        "--nonblocking",
        "--rate",
        str(rate),
        "--duration",
        str(max(1, round(duration))),
        "--format",
        "raw",
        "--output",
        str(out),
    ]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _short(frame: str) -> str:
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match["file"]
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match['func']} ({path})"


def _is_request_frame(name: str) -> bool:
    # py-spy names methods "Class.method" (newer) or "method" (older).
    func = name.split(" ", 1)[0]
    return func == REQUEST_FRAME or func.endswith("." + REQUEST_FRAME)


def summarise(raw: Path, top: int = 30) -> str:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        names = [_short(f) for f in frames]
        try:
            begin = next(i for i, name in enumerate(names) if _is_request_frame(name))
        except StopIteration:
            continue
        request_frames = names[begin:]
        n = int(count)
        total += n
        for name in set(request_frames):
            inclusive[name] += n
        own[request_frames[-1]] += n
    if not total:
        return "no samples inside a request\n"
    lines = [f"{total} samples inside requests", "", "inclusive  self   function"]
    for name, n in inclusive.most_common(top):
        lines.append(f"{100 * n / total:8.1f}%  {100 * own[name] / total:5.1f}%  {name}")
    lines += ["", "self (top of stack)"]
    for name, n in own.most_common(top // 2):
        lines.append(f"{100 * n / total:8.1f}%  {name}")
    return "\n".join(lines) + "\n"
