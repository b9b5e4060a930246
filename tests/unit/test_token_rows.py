"""The grants' one-statement writes (authsvc.tokens.rows): each part writes only its own columns.

SQLAlchemy compiles an INSERT or UPDATE with a column for every parameter of the execution named as
one of its table's columns, CTEs included: the parameters of one part must not name a column of
another part's table. Compiled here with the parameters each statement is executed with.
"""

import re

from sqlalchemy.dialects import postgresql

from authsvc.core.audit import record_values
from authsvc.tokens import rows as token_rows

ROW = dict.fromkeys(token_rows.TOKEN_COLUMNS, 1)
SPENT_CODE = {"spent_digest": "d", "spent_family": "f", "spent_until": 1}
CLAIMED = {"claim_id": 1, "claimed_at": 1}


def _compiled(spent_code=None, claimed=None):
    record = record_values("token.issued", domain_id=1, actor="client:x", details={})
    statement, parameters = token_rows.one_statement(ROW, record, spent_code, claimed)
    return str(statement.compile(dialect=postgresql.dialect(), column_keys=list(parameters)))


def test_the_refresh_claim_sets_only_refreshed_at():
    sql = _compiled(claimed=CLAIMED)
    [assignments] = re.findall(r"UPDATE token SET (.*?) WHERE", sql, re.S)
    assert assignments.split("=")[0] == "refreshed_at" and assignments.count("=") == 1, sql


def test_the_code_exchange_notes_only_the_codes_own_columns():
    sql = _compiled(spent_code=SPENT_CODE)
    assert re.findall(r"INSERT INTO spent_code \((.*?)\)", sql) == ["digest, family, expires_at"], sql


def test_each_write_inserts_the_tokens_columns_and_its_record():
    for sql in (_compiled(), _compiled(spent_code=SPENT_CODE), _compiled(claimed=CLAIMED)):
        [token_columns] = re.findall(r"INSERT INTO token \((.*?)\)", sql)
        assert token_columns.split(", ") == list(token_rows.TOKEN_COLUMNS), sql
        [record_columns] = re.findall(r"INSERT INTO audit_record \((.*?)\)", sql)
        assert record_columns == "at, domain_id, event, actor, ip, details, target", sql
