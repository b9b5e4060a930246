"""Multi-factor sign-in: authenticator apps (TOTP), recovery codes, the domain's policy and the
step between a correct password and the ``user`` session."""
