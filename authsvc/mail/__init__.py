"""E-mail: messages composed from templates, queued in the outbox with the change that causes them, and
sent by the outbox's senders through SMTP (or, in development without SMTP, written to instance/mail/).
docs/account.md describes the settings and what is sent."""
