"""Tokens: every read and write of access and refresh tokens, API keys and spent codes.

A grant says what to issue in a typed record (``issue.Issue``, with the
``issue.Lineage`` that ties it to the grant before it) and gets back a typed
answer (``issue.Issued``); how the rows are written is decided here. Outside
this package token rows are only listed (the admin pages):

- issue: the record a grant hands over, the outcome it gets back, and the write.
- rows: the single statement that writes a token with its audit record (and a
  spent code or a refresh token's claim) on PostgreSQL.
- lookups: a token found by what a client presents (revocation, introspection, the grants).
- presented: inspect's one prepared statement per presented access token or API key.
- refresh: a refresh token kept (no rotation) or judged when presented again.
- spent_codes: a code's single use in SQL, and revoking what a replayed code produced.
- revocation: revoking by token, family, user or application; deleting and purging rows.
- api_keys: issuing, listing, noting the use of, revoking and deleting API keys.
"""
