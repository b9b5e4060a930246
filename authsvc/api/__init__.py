"""Presenting a credential on API requests: the lookup, inspect's fast path and connections, its views."""
