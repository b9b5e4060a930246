"""``python -m authsvc.openapi [--check]``: write openapi.json from base.json and the admin schemas.

With ``--check``, write nothing and fail if openapi.json is not what it would
write (the test suite runs this check).
"""

from __future__ import annotations

import sys

from authsvc.openapi.document import DOCUMENT, build, render


def main(argv: list[str]) -> int:
    text = render(build())
    if "--check" in argv:
        if DOCUMENT.read_text() != text:
            print(f"{DOCUMENT} is out of date: run python -m authsvc.openapi", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(text)
    print(f"wrote {DOCUMENT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
