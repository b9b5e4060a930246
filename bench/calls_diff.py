"""Where two checkouts' requests differ, function by function: ``python -m bench.calls --dump``'s statistics.

Each checkout dumps its scenarios' cProfile statistics against its own
``--serve`` stack (``python -m bench.calls SERVE_JSON REDIS_URL --dump DIR``,
run from that checkout), then::

    .venv/bin/python -m bench.calls_diff BEFORE_DIR NOW_DIR [--top 25] [--only KEYS]

prints, per scenario, the total calls and own time of each side and the
functions whose calls or own time grew the most. Functions are named by
their path from the package (``authsvc/...``, a site-package's path), so
the same function of two checkouts matches. Own time under the profiler is
inflated by it, so read the call counts first and the times as a ranking.
"""

from __future__ import annotations

import argparse
import pstats
import re
import sys
from pathlib import Path

_PREFIX = re.compile(r"^.*?(?:site-packages/|lib/python3[.\d]*/|(?=authsvc/)|(?=bench/))")


def _name(key: tuple[str, int, str]) -> str:
    path, line, func = key
    return f"{_PREFIX.sub('', path)}:{func}" if path != "~" else func


def by_function(path: Path) -> dict[str, tuple[int, float, float]]:
    """Calls, own seconds and cumulative seconds per function (summed over functions of one name)."""
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    out: dict[str, tuple[int, float, float]] = {}
    for key, (_, calls, own, cumulative, _callers) in stats.items():
        name = _name(key)
        before = out.get(name, (0, 0.0, 0.0))
        out[name] = (before[0] + calls, before[1] + own, before[2] + cumulative)
    return out


def compare(before: Path, now: Path, top: int) -> str:
    old, new = by_function(before), by_function(now)
    lines = [
        f"{before.stem}: calls {sum(v[0] for v in old.values()):,} -> {sum(v[0] for v in new.values()):,}; "
        f"own time {sum(v[1] for v in old.values()):.3f} -> {sum(v[1] for v in new.values()):.3f} s (profiled)"
    ]
    names = set(old) | set(new)

    def grown(index: int) -> list[str]:
        delta = {n: new.get(n, (0, 0.0, 0.0))[index] - old.get(n, (0, 0.0, 0.0))[index] for n in names}
        ranked = sorted(names, key=lambda n: -delta[n])[:top]
        return [
            f"  {old.get(n, (0, 0.0, 0.0))[index]:>10.4g} -> {new.get(n, (0, 0.0, 0.0))[index]:>10.4g}  {n}"
            for n in ranked
            if delta[n] > 0
        ]

    lines += ["  calls grew most:", *grown(0), "  cumulative time grew most:", *grown(2)]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calls_diff", description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("now", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--only", default="", metavar="KEYS")
    args = parser.parse_args(argv)
    keys = args.only.split(",") if args.only else sorted(p.stem for p in args.now.glob("*.pstats"))
    for key in keys:
        print(compare(args.before / f"{key}.pstats", args.now / f"{key}.pstats", args.top), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
