"""People help themselves by e-mail: a forgotten password (``password``) and a verified address
(``verification``), both through single-use links (``links``). docs/account.md."""
