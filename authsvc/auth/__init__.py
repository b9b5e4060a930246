"""Users signing in: passwords, lockouts, sessions, and the sign-in pages."""
