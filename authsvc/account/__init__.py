"""People help themselves by e-mail: a forgotten password (``password``), a verified address
(``verification``), invitations (``invitations``, ``invitation_pages``) and sign-up (``signup``), all through
single-use links (``links``; an invitation's secret is its own row's). docs/account.md."""
