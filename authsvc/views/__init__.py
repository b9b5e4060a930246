"""Inspect and scopes (moving to authsvc.credentials with it)."""
