"""``python -m bench.tokens COUNT``: add tokens to the database of ``DATABASE_URL`` until it holds COUNT.

PostgreSQL makes the rows itself (``INSERT ... SELECT ... FROM generate_series``,
a million a statement and a transaction), so no byte of them crosses the
connection: ten million take minutes where COPY from Python takes most of an
hour. A share of them (``--expired``, 0.5) expired one to two days ago, spread
over a day, so that ``flask --app app tokens purge`` has millions of rows to
delete; the rest stay valid for a week.

Each row's access token is ``PREFIX`` and its number written in 11 digits (43
characters, the length of a real one), ``PREFIX`` random for each call; the
row keeps its SHA-256 digest, as the service does. The command prints the
prefix and which numbers are live, so a load can present real tokens
(``sample``). Run with the service's environment (``DATABASE_URL``); the
tokens belong to the first application in the database and a user of its
domain, or the ones given. bench/README.md, "Ten million tokens".
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psycopg

# Rows a statement: each is its own transaction, so a long seeding holds no lock for long.
CHUNK = 1_000_000
LIVE_TTL = 7 * 24 * 3600
DEAD_TTL = 3600
DAY = 86400
# Expired rows are chosen by number: those whose number modulo this is below share x this.
GRAIN = 1000

INSERT = f"""
INSERT INTO token (application_id, user_id, access_token_digest, family, grant_type, scope,
                   issued_at, expires_in, purgeable_at)
SELECT %(application)s, %(user)s,
       encode(sha256(convert_to(%(prefix)s || lpad(i::text, 11, '0'), 'UTF8')), 'hex'),
       md5(%(prefix)s || i::text), 'password', 'public',
       CASE WHEN i %% {GRAIN} < %(dead)s THEN %(dead_issued)s - i %% {DAY} ELSE %(now)s END,
       CASE WHEN i %% {GRAIN} < %(dead)s THEN {DEAD_TTL} ELSE {LIVE_TTL} END,
       CASE WHEN i %% {GRAIN} < %(dead)s THEN %(dead_issued)s - i %% {DAY} + {DEAD_TTL} ELSE %(now)s + {LIVE_TTL} END
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i
"""  # noqa: S608 - constants only


@dataclass
class Batch:
    """The tokens one call added: numbers ``first`` to ``last`` behind ``prefix``; ``dead`` of each GRAIN expired."""

    prefix: str
    first: int
    last: int
    dead: int

    @property
    def count(self) -> int:
        return max(0, self.last - self.first + 1)

    def token(self, number: int) -> str:
        return f"{self.prefix}{number:011d}"

    def is_live(self, number: int) -> bool:
        return number % GRAIN >= self.dead

    def sample(self, count: int) -> list[str]:
        """Up to ``count`` live tokens of the batch, at random."""
        live = [n for n in range(self.first, self.last + 1) if self.is_live(n)] if self.count <= count * 4 else []
        if live:
            return [self.token(n) for n in random.sample(live, min(count, len(live)))]
        picked: set[int] = set()
        while len(picked) < count and self.count and self.dead < GRAIN:
            number = random.randint(self.first, self.last)
            if self.is_live(number):
                picked.add(number)
        return [self.token(n) for n in picked]


def owner(conn: psycopg.Connection) -> tuple[int, int]:
    """The first application and a user of its domain (preferring a service account): whose tokens they are."""
    row = conn.execute(
        'SELECT a.id, u.id FROM application a JOIN "user" u ON u.domain_id = a.domain_id '
        "ORDER BY a.id, u.service_account DESC, u.id LIMIT 1"
    ).fetchone()
    if row is None:
        raise SystemExit("bench.tokens: the database has no application with a user in its domain (seed one first)")
    return row[0], row[1]


def count_tokens(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM token").fetchone()[0]


def grow(
    conn: psycopg.Connection,
    count: int,
    expired: float = 0.5,
    application_id: int | None = None,
    user_id: int | None = None,
    say: Callable[[str], None] | None = None,
    connect: Callable[[], psycopg.Connection] | None = None,
) -> Batch:
    """Add tokens until ``conn``'s database holds ``count``; ``expired`` of the new ones are dead. VACUUM ANALYZEs.

    With ``connect`` (a new connection to the same database), the chunks are shared among as many
    connections as the machine has cores: each INSERT is one backend's work on one core.
    """
    if application_id is None or user_id is None:
        application_id, user_id = owner(conn)
    batch = Batch(secrets.token_urlsafe(24), 0, count - count_tokens(conn) - 1, round(expired * GRAIN))
    conn.commit()  # the reads above opened a transaction (without autocommit); the inserts are each their own
    now = int(time.time())
    chunks = [(first, min(batch.last, first + CHUNK - 1)) for first in range(batch.first, batch.last + 1, CHUNK)]
    done = [0]

    def insert(connection: psycopg.Connection, share: list[tuple[int, int]]) -> None:
        for first, last in share:
            parameters = {
                "application": application_id,
                "user": user_id,
                "prefix": batch.prefix,
                "dead": batch.dead,
                "now": now,
                "dead_issued": now - DAY - DEAD_TTL,
                "first": first,
                "last": last,
            }
            connection.execute(INSERT, parameters)
            connection.commit()
            done[0] += last - first + 1
            if say:
                say(f"  {done[0]:,} of {batch.count:,} tokens")

    def insert_apart(share: list[tuple[int, int]]) -> None:
        assert connect is not None
        with connect() as connection:
            insert(connection, share)

    lanes = min(len(chunks), os.cpu_count() or 1) if connect is not None else 1
    if lanes > 1:
        with ThreadPoolExecutor(lanes) as pool:
            list(pool.map(insert_apart, [chunks[lane::lanes] for lane in range(lanes)]))
    else:
        insert(conn, chunks)
    if batch.count:
        # What autovacuum does in a steady state: statistics and the visibility map (index-only scans).
        # Then a checkpoint: in a steady state the load's gigabytes are written out, where after the
        # seeding the server writes them during the first rounds that measure the largest database.
        was, conn.autocommit = conn.autocommit, True
        try:
            conn.execute("VACUUM (ANALYZE) token")
            try:
                conn.execute("CHECKPOINT")
            except psycopg.errors.InsufficientPrivilege:  # neither a superuser nor pg_checkpoint's member
                if say:
                    say("  no CHECKPOINT (the role may not): the first rounds share the server with its writes")
        finally:
            conn.autocommit = was
    return batch


def _url(url: str) -> str:
    # SQLAlchemy's spelling (postgresql+psycopg://) to libpq's.
    return url.replace("postgresql+psycopg://", "postgresql://").replace("postgres://", "postgresql://")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tokens", description=__doc__.split("\n\n")[0])
    p.add_argument("count", help="tokens the database holds when done (10_000_000 for ten million)")
    p.add_argument("--expired", type=float, default=0.5, help="share of the new tokens that expired (0.5)")
    args = p.parse_args(argv)
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgresql", "postgres:")):
        print("bench.tokens: set DATABASE_URL to the PostgreSQL database to grow", file=sys.stderr)
        return 2
    if not 0 <= args.expired <= 1:
        print("bench.tokens: --expired is a share, from 0 to 1", file=sys.stderr)
        return 2
    began = time.monotonic()
    with psycopg.connect(_url(url)) as conn:
        batch = grow(
            conn, int(args.count.replace("_", "")), args.expired, say=print, connect=lambda: psycopg.connect(_url(url))
        )
    print(
        f"bench.tokens: {batch.count:,} tokens added in {time.monotonic() - began:.1f} s "
        f"({batch.dead / GRAIN:.0%} expired); a live one: {batch.sample(1)[0] if batch.count else '-'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
