"""The same records for many tests, written once through the models and then put back as rows.

For the fuzzing tests (tests/api/fuzz/test_openapi_schemathesis.py, tests.helpers.hostile_input): hundreds of
tests a pass, each on emptied tables with the same records. Making them through ``World`` (an ORM session, a
commit and a refresh a record, a password hashed a user) cost a test more than emptying the tables did; the
rows they leave, and the id counters, are the same every time, so a test gets them back in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from authsvc.core.database import db
from tests.helpers import BACKEND, empty_database


class WorldSnapshot:
    """Every table's rows and every id counter as ``build`` left emptied tables; ``restore`` puts them back."""

    def __init__(self, app, build: Callable[[], Any]) -> None:
        with app.app_context():
            empty_database(app)
        self.built = build()
        with app.app_context(), db.engine.connect() as conn:
            self.rows = {
                table: [dict(row) for row in conn.execute(table.select()).mappings()]
                for table in db.metadata.sorted_tables
            }
            self.rows = {table: rows for table, rows in self.rows.items() if rows}
            if BACKEND == "postgresql":
                found = conn.execute(text("SELECT schemaname, sequencename, last_value FROM pg_sequences")).all()
                self.counters = [
                    f'setval(\'"{schema}"."{name}"\', {value}, true)'
                    for schema, name, value in found
                    if value is not None
                ]
            else:
                self.counters = [
                    tuple(row) for row in conn.exec_driver_sql("SELECT name, seq FROM sqlite_sequence").all()
                ]

    def restore(self, app) -> Any:
        """Tables emptied, then the snapshot's rows and id counters; what ``build`` returned."""
        with app.app_context():
            empty_database(app)
            with db.engine.begin() as conn:
                for table, rows in self.rows.items():  # parents first (sorted_tables)
                    conn.execute(table.insert(), rows)
                if BACKEND == "postgresql":
                    if self.counters:
                        conn.exec_driver_sql("SELECT " + ", ".join(self.counters))
                else:
                    conn.exec_driver_sql("DELETE FROM sqlite_sequence")
                    for name, seq in self.counters:
                        conn.exec_driver_sql("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, seq))
        return self.built
