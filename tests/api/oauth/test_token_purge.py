"""The purge of dead tokens and spent codes: bounded batches, one statement each, through an index.

A purge of millions of rows runs beside live traffic: each batch must be one
short statement that reads only the rows it deletes, in a transaction of its
own, so that neither its locks nor its reads grow with the table or with what
earlier batches deleted.
"""

import json

import pytest
from sqlalchemy import event, func, insert, select, text

from authsvc.core.database import db, now
from authsvc.core.models import SpentCode, Token


def dead_tokens(app, application_id, user_id, count, *, dead_at):
    """``count`` tokens purgeable from ``dead_at`` on, one second apart."""
    with app.app_context():
        db.session.execute(
            insert(Token),
            [
                {
                    "application_id": application_id,
                    "user_id": user_id,
                    "access_token_digest": f"{dead_at + i:064x}",
                    "family": f"dead-{dead_at + i}",
                    "grant_type": "password",
                    "scope": "public",
                    "issued_at": dead_at + i - 60,
                    "expires_in": 60,
                    "purgeable_at": dead_at + i,
                }
                for i in range(count)
            ],
        )
        db.session.commit()


class Statements:
    """What the app's engine sends while a command runs: each statement, and each commit."""

    def __init__(self, app):
        self.app = app
        self.sent: list[tuple[str, object]] = []
        self.commits = 0

    def __enter__(self):
        with self.app.app_context():
            self.engine = db.engine
        event.listen(self.engine, "before_cursor_execute", self._statement)
        event.listen(self.engine, "commit", self._commit)
        return self

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self._statement)
        event.remove(self.engine, "commit", self._commit)

    def _statement(self, conn, cursor, statement, parameters, context, executemany):
        self.sent.append((statement, parameters))

    def _commit(self, conn):
        self.commits += 1

    def on(self, table):
        return [(s, p) for s, p in self.sent if f"FROM {table}" in s or f"INTO {table}" in s or f"UPDATE {table}" in s]


def purge(runner, *args):
    result = runner.invoke(args=["tokens", "purge", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_batch_of_a_purge_is_one_delete_and_one_commit(app, runner, setup):
    dead_tokens(app, setup.public_app.id, setup.service.id, 7, dead_at=now() - 7200)
    with Statements(app) as seen:
        out = purge(runner, "--batch-size", "3")
    assert out["deleted"] == 7
    assert out["batches"] == 3
    on_token = seen.on("token")
    # 3 + 3 + 1: the short batch says the purge is done, without a statement more.
    assert len(on_token) == 3, on_token
    assert all(statement.lstrip().upper().startswith("DELETE FROM TOKEN") for statement, _ in on_token)
    # Every batch is its own transaction (the spent codes' one more): no lock is held across batches.
    assert seen.commits >= 4
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Token)) == 0


def test_no_batch_deletes_more_than_the_batch_size(app, runner, setup):
    dead_tokens(app, setup.public_app.id, setup.service.id, 10, dead_at=now() - 7200)
    live = now() + 3600
    dead_tokens(app, setup.public_app.id, setup.service.id, 2, dead_at=live)
    with Statements(app) as seen:
        out = purge(runner, "--batch-size", "4")
    assert (out["deleted"], out["batches"]) == (10, 3)
    # Each statement names its bound: nothing a batch deletes is left to the planner's estimate.
    for _, parameters in seen.on("token"):
        assert 4 in (parameters.values() if isinstance(parameters, dict) else parameters), parameters
    with app.app_context():
        left = db.session.scalars(select(Token.purgeable_at)).all()
    assert sorted(left) == [live, live + 1]


def test_spent_codes_are_purged_in_batches_too(app, runner, setup):
    with app.app_context():
        db.session.execute(
            insert(SpentCode),
            [{"digest": f"{i:064x}", "family": f"f{i}", "expires_at": now() - 100 + i} for i in range(5)]
            + [{"digest": "f" * 64, "family": "live", "expires_at": now() + 600}],
        )
        db.session.commit()
    with Statements(app) as seen:
        purge(runner, "--batch-size", "2")
    spent = seen.on("spent_code")
    assert len(spent) == 3, spent  # 2 + 2 + 1
    with app.app_context():
        assert db.session.scalars(select(SpentCode.family)).all() == ["live"]


@pytest.mark.postgresql
def test_a_purge_batch_reads_the_index_from_where_the_last_one_ended(app, runner, setup):
    """On a large table the batch's plan is an index range scan from the previous batch's end, never a scan.

    Deleted rows leave their index entries until VACUUM: a batch that started
    from the lowest ``purgeable_at`` each time would walk every row that the
    batches before it deleted, and the purge would slow down as it went.
    """
    dead_at = now() - 86400
    bulk_dead_tokens(app, setup, 30000, dead_at)
    with Statements(app) as seen:
        out = purge(runner, "--batch-size", "1000")
    assert out["deleted"] == 30000
    batches = seen.on("token")
    assert len(batches) == 31  # 30 full ones, and the one that finds nothing more
    # Each batch starts where the one before it ended (at the last moment it deleted: rows may share it).
    starts = [parameters["purgeable_at_1"] for _, parameters in batches]
    assert starts[0] < dead_at
    assert starts[1:] == [dead_at + 1000 * k - 1 for k in range(1, 31)]
    # The plans on the full table (again), first batch and last.
    bulk_dead_tokens(app, setup, 30000, dead_at)
    with app.app_context(), db.engine.connect() as conn:
        plans = [
            "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
            for statement, parameters in (batches[0], batches[-1])
        ]
        conn.rollback()
    for plan in plans:
        assert "Seq Scan" not in plan, plan
        assert "Index Scan using ix_token_purgeable_at" in plan, plan
        assert "purgeable_at >=" in plan, plan


def bulk_dead_tokens(app, setup, count, dead_at):
    """``count`` tokens purgeable one second apart from ``dead_at`` on, inserted by PostgreSQL itself."""
    with app.app_context():
        db.session.execute(
            text(
                "INSERT INTO token (application_id, user_id, access_token_digest, family, grant_type, scope,"
                " issued_at, expires_in, purgeable_at)"
                " SELECT :app, :user, md5(i::text) || md5((-i)::text), md5(i::text), 'password', 'public',"
                " :dead + i - 60, 60, :dead + i FROM generate_series(0, :count - 1) AS i"
            ),
            {"app": setup.public_app.id, "user": setup.service.id, "dead": dead_at, "count": count},
        )
        db.session.commit()
        # As autovacuum would leave it: statistics and the visibility map.
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM (ANALYZE) token"))
