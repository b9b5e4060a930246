"""e-mail addresses stored before the normal form: normalised, unless that would make two accounts one

Revision ID: f1b8c4e2a7d9
Revises: e5c1a9d7b3f2
Create Date: 2026-12-02 08:20:00.000000

Every surface stores an address in one form (authsvc.core.validation.email: lower case,
Unicode NFC, the domain in its Unicode form) and sign-in looks the typed address up in that
form; rows written before that rule may hold another spelling (a decomposed accent, an
``xn--`` domain), which no sign-in would find. Each such row is rewritten to the normal form,
and so are the unspent e-mailed links sent to its old spelling.

Accounts are never merged: when the normal form is already another row's address in the same
domain, or two rows would share it, every row concerned is left as it is and the upgrade logs
their ids (never the addresses) for an administrator to decide. An address that is not valid
under today's rule is left as it is too. The downgrade changes nothing: the normal form is a
spelling of the same address.
"""
import logging
from collections import defaultdict

from alembic import op
from sqlalchemy import text

from authsvc.core import validation


# revision identifiers, used by Alembic.
revision = 'f1b8c4e2a7d9'
down_revision = 'e5c1a9d7b3f2'
branch_labels = None
depends_on = None

log = logging.getLogger('authsvc.migrations')


def upgrade():
    bind = op.get_bind()
    rows = bind.execute(text('SELECT id, domain_id, email FROM "user"')).all()
    taken = {(row.domain_id, row.email) for row in rows}
    wanted = defaultdict(list)
    for row in rows:
        try:
            normal = validation.email(row.email)
        except validation.Invalid:
            continue
        if normal != row.email:
            wanted[(row.domain_id, normal)].append(row)
    for (domain_id, normal), found in sorted(wanted.items(), key=lambda item: item[1][0].id):
        if len(found) > 1 or (domain_id, normal) in taken:
            others = bind.execute(
                text('SELECT id FROM "user" WHERE domain_id = :domain AND email = :email'),
                {'domain': domain_id, 'email': normal},
            ).scalars().all()
            log.warning(
                'users %s of domain %s are one e-mail address in its normal form: left as they are, not merged',
                ', '.join(str(user_id) for user_id in sorted([row.id for row in found] + list(others))),
                domain_id,
            )
            continue
        (row,) = found
        bind.execute(text('UPDATE "user" SET email = :email WHERE id = :id'), {'email': normal, 'id': row.id})
        bind.execute(
            text('UPDATE account_link SET email = :email WHERE user_id = :id AND email = :old'),
            {'email': normal, 'id': row.id, 'old': row.email},
        )


def downgrade():
    pass
