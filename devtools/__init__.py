"""Development tools: the virtualenv, the servers tests and benchmarks need, the test runner, the locks.

Not part of the service. ``devtools.venv`` runs on a bare ``python3``; the rest
runs in the project's ``.venv``.
"""
