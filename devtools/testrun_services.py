"""What the test command needs before its passes (devtools/testrun.py), on top of ``devtools.services``: the
Debian programs some tests need (chromium, slapd, xmlsec1), installed with apt-get when missing and allowed
(``TOOLS``, ``ensure``); the PostgreSQL database of the run (``postgres_url``: AUTHSVC_TEST_DATABASE_URL or a fresh
one, and ``drop_worker_databases`` for what killed workers leave); and its Redis (``redis_url``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from devtools.services import STANDARD_POSTGRES, ServiceError, Services, redact, slapd_binary
from devtools.testrun_report import say


@dataclass(frozen=True)
class DebianTool:
    """A program some tests need, from Debian's packages, installed by the test command when missing."""

    binary: str  # what is looked for on PATH (or by ``found``)
    packages: tuple[str, ...]
    needed_by: str  # "the browser tests", said in the progress lines
    found: Callable[[], object] | None = None  # how to look for it, when PATH is not where it is
    recommends: bool = True  # whether apt-get brings the packages' recommended ones too


TOOLS = (
    # The browser tests drive Debian's chromium through Playwright; no browser is ever downloaded.
    DebianTool("chromium", ("chromium",), "the browser tests"),
    # The LDAP tests start a private OpenLDAP slapd (usually outside PATH: devtools.services finds it).
    DebianTool("slapd", ("slapd", "ldap-utils"), "the LDAP tests", found=slapd_binary, recommends=False),
    # The SAML tests (and SAML sign-in itself) need xmlsec1, which pysaml2 runs for signatures.
    DebianTool("xmlsec1", ("xmlsec1",), "the SAML tests"),
)


def ensure(tool: DebianTool) -> None:
    """Install ``tool``'s packages with apt-get when it is missing and we may; else say which tests will skip."""
    if tool.found() if tool.found else shutil.which(tool.binary):
        return
    if os.getuid() == 0 and shutil.which("apt-get"):
        say(f"installing Debian's {' and '.join(tool.packages)} for {tool.needed_by} (apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-qq", *([] if tool.recommends else ["--no-install-recommends"])]
        if all(
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode == 0
            for command in (["apt-get", "update", "-qq"], [*install, *tool.packages])
        ):
            return
    say(
        f"{tool.binary} is missing and could not be installed (apt-get install {' '.join(tool.packages)}): "
        f"{tool.needed_by} will be SKIPPED"
    )


def postgres_url(services: Services) -> str | None:
    """AUTHSVC_TEST_DATABASE_URL, else a fresh database of this run on a server found or started."""
    given = os.environ.get("AUTHSVC_TEST_DATABASE_URL")
    if given:
        say(f"PostgreSQL: using AUTHSVC_TEST_DATABASE_URL ({redact(given)})")
        return given
    # One database per run, the pid in its name: two runs on one machine (two
    # checkouts, CI beside a developer) must not empty each other's tables.
    name = f"authsvc_test_{os.getpid()}"
    admin_url = services.postgres()
    if admin_url == STANDARD_POSTGRES:
        try:
            database = services.database(admin_url, name)
            say(f"PostgreSQL: fresh database {name} on 127.0.0.1:5432")
            return database.url
        except (ServiceError, psycopg.Error) as exc:
            say(f"PostgreSQL: database {name} could not be created on 127.0.0.1:5432 ({exc}); trying a private cluster")
        admin_url = services.postgres(standard=False)
    if admin_url is None:
        return None
    database = services.database(admin_url, name)
    say(f"PostgreSQL: fresh database {name}")
    return database.url


def drop_worker_databases(url: str) -> None:
    """The databases pytest-xdist's workers made beside ``url``'s (``<name>_gwN``) that a killed worker left."""
    name = url.rsplit("/", 1)[1]
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            pattern = name.replace("_", "\\_") + "\\_gw%"
            rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,)).fetchall()
            for (leftover,) in rows:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(leftover)))
    except psycopg.Error as exc:
        say(f"PostgreSQL: could not drop the workers' databases ({exc})")


def redis_url(services: Services) -> str | None:
    given = os.environ.get("AUTHSVC_TEST_REDIS_URL")
    if given:
        say(f"Redis: using AUTHSVC_TEST_REDIS_URL ({redact(given)}); its database is flushed by the tests")
        return given
    return services.redis(shared=True)
