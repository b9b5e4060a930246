"""Benchmarks of authsvc, run by hand: ``python -m bench`` (see bench/README.md)."""
