"""``python -m bench``: start the service, load it, print the table (bench/README.md)."""

from bench.cli import main

raise SystemExit(main())
