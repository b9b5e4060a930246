"""The fast reads: one-row lookups as prepared statements on PostgreSQL connections of their own.

Every API request and every grant reads a row or two found by a unique index
and joined by primary key. These run outside SQLAlchemy's pool and execution
(docs/performance.md, "Inspect, counted"):

- pool: ``Readers`` (a psycopg_pool pool in autocommit, per app) and
  ``read_one``, the one entry point. Its users: inspect's credential lookups
  (authsvc.tokens.presented, below Flask in authsvc.api.fastpath), the grants'
  client, code user and refresh-token reads (authsvc.oauth.clients,
  authsvc.oauth.grants, authsvc.oauth.refresh_grant), the current signing key
  (authsvc.oauth.keys) and a session's user (authsvc.auth.sessions).
- entities: a row read so, made into the session's ORM entity without a
  second SELECT.
- roundtrip: one prepared statement's round trip through psycopg's libpq
  wrapper, with a deadline.
"""
