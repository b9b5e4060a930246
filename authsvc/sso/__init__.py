"""Upstream identity providers (today OIDC / OAuth 2.0 SSO): providers, the flow, linking, delegated tokens."""
