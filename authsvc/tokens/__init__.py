"""Tokens: every write of access and refresh tokens and of spent codes, and the reads the grants make.

A grant says what to issue in a typed record (``issue.Issue``, with the
``issue.Lineage`` that ties it to the grant before it) and gets back a typed
answer (``issue.Issued``); how the rows are written is decided here:

- issue: the record a grant hands over, the outcome it gets back, and the write.
- rows: the single statement that writes a token with its audit record (and a
  spent code or a refresh token's claim) on PostgreSQL.
- spent_codes: a code's single use in SQL, and revoking what a replayed code produced.
"""
