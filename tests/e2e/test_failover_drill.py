"""The failover drill (docs/deployment.md, "High availability"): real clusters on loopback, two service
instances under load, the Redis primary killed, then the PostgreSQL primary.

Started here: a Redis primary, a replica and three Sentinels; a PostgreSQL
primary and a synchronous streaming replica (devtools.ha_cluster). Two
gunicorn instances reach them through ``REDIS_SENTINELS`` and a multi-host
``DATABASE_URL``. A steady, bounded load of inspect, sign-in + code flow and
password grant runs throughout. The load must see only a healthy service's
answers (200, 202, 302, 401 for a revoked token) or 503 with Retry-After,
each within 8 s, and full service again within 30 s of each promotion,
without a restart. Afterwards every token revoked before (or just before a
crash) is refused, no spent code works, every user and application is there.
The failovers and recovery times are printed (``-s`` shows them; the junit
log keeps them).
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest
import requests

from devtools.ha_cluster import PostgresPair, RedisSentinels, missing_binaries
from devtools.processes import REPO, Gunicorn, free_port
from tests.helpers.failover_load import PASSWORD, REDIRECT, Load, healthy_again

pytestmark = [pytest.mark.slow, pytest.mark.postgresql]  # once per test command: its clusters are its own
try:  # its own worker under pytest-xdist --dist loadgroup: it starts nine servers
    import xdist  # noqa: F401

    pytestmark.append(pytest.mark.xdist_group("failover_drill"))
except ImportError:
    pass

HEALTHY = {200, 202, 302, 401}
ANSWER_WITHIN = 8.0
RECOVER_WITHIN = 30.0


def log(message: str) -> None:
    print(f"[failover drill {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _seed(env: dict[str, str]) -> tuple[str, str]:
    """Migrate and create the domain, the application, two users and a system admin's API key (readyz shows
    it the servers), in this process (the CLI is slower). Answers the client_id and the key."""
    from flask_migrate import upgrade

    from authsvc import create_app
    from authsvc.cli import migrations
    from authsvc.core import security
    from authsvc.core.database import db
    from authsvc.core.models import ApiKey, Application, Domain, User
    from config.settings import database_url

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": database_url(env["DATABASE_URL"]),
            "SECRET_KEY": env["SECRET_KEY"],
            "REDIS_URL": None,
            "AUTHSVC_BCRYPT_ROUNDS": 4,
        }
    )
    migrations.install(app)
    with app.app_context():
        upgrade()
        domain = Domain(name="Drill", host="127.0.0.1", scopes="public")
        db.session.add(domain)
        db.session.flush()
        client_id = security.new_secret()[:22]
        # No PKCE required: keeps the load's code flow short; PKCE is tested elsewhere.
        db.session.add(
            Application(
                domain_id=domain.id,
                name="Drill app",
                client_id=client_id,
                redirect_uris=[REDIRECT],
                scopes="public",
                require_pkce=False,
            )
        )
        for email, service in (("person@example.com", False), ("robot@example.com", True)):
            user = User(domain_id=domain.id, email=email, name=email, service_account=service, email_verified=True)
            user.set_password(PASSWORD)
            db.session.add(user)
        root = User(domain_id=domain.id, email="root@example.com", name="Root", admin=True, system_admin=True)
        db.session.add(root)
        db.session.flush()
        key_id, key_secret = secrets.token_hex(8), security.new_secret()
        db.session.add(
            ApiKey(
                id=key_id,
                domain_id=domain.id,
                user_id=root.id,
                name="drill",
                secret_digest=security.digest(key_secret),
                scopes="admin",
                permission="admin",
            )
        )
        db.session.commit()
        db.engine.dispose()
    return client_id, f"{key_id}.{key_secret}"


def test_failover_drill():
    why = missing_binaries()
    if why:
        pytest.skip(f"the failover drill needs its clusters: {why}")
    began = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="authsvc-drill-"))
    try:
        with RedisSentinels(workdir, replicas=1, sentinels=3) as redis_cluster, PostgresPair(workdir) as pg:
            redis_cluster.start()
            pg.start()
            log(f"Redis primary 127.0.0.1:{redis_cluster.primary()}, Sentinels {redis_cluster.sentinels}")
            log(f"PostgreSQL primary 127.0.0.1:{pg.ports[0]}, replica 127.0.0.1:{pg.ports[1]} ({pg.sync_state()})")
            _drill(workdir, redis_cluster, pg)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    log(f"drill done in {time.monotonic() - began:.1f} s")


def _drill(workdir: Path, redis_cluster: RedisSentinels, pg: PostgresPair) -> None:
    hosts = ",".join(f"127.0.0.1:{port}" for port in pg.ports)
    env = {
        "PATH": f"{REPO / '.venv/bin'}:/usr/bin:/bin",
        "DATABASE_URL": f"postgresql://postgres@{hosts}/postgres?target_session_attrs=read-write",
        "REDIS_SENTINELS": redis_cluster.sentinels,
        "REDIS_SENTINEL_SERVICE": "authsvc",
        "SECRET_KEY": secrets.token_urlsafe(32),
        "AUTHSVC_COOKIE_SECURE": "false",
        "AUTHSVC_BCRYPT_ROUNDS": "4",
        "AUTHSVC_INSTANCE_DIR": str(workdir),
        "AUTHSVC_RETRY_AFTER": "2",
        "AUTHSVC_DATABASE_TIMEOUT": "2",
        "AUTHSVC_STATEMENT_TIMEOUT": "3",
        "AUTHSVC_SIGNIN_RATE_LIMIT": "100000/minute",
        "AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT": "100000/minute",
        "AUTHSVC_TOKEN_RATE_LIMIT": "100000/minute",
        "AUTHSVC_CLIENT_FAILURE_RATE_LIMIT": "100000/minute",
        "AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT": "100000/minute",
        "AUTHSVC_LOCKOUT_THRESHOLD": "100000",
        "AUTHSVC_LOCKOUT_ADDRESS_THRESHOLD": "100000",
        "WEB_CONCURRENCY": "2",
        "AUTHSVC_ACCESS_LOG": "1",
    }
    client_id, admin_key = _seed(env)
    instances = []
    for number in (0, 1):
        port = free_port()
        server = Gunicorn(f"authsvc-{number}", port, env, workdir / f"service-{number}.log")
        server.start(workers=2)
        instances.append(server)
    try:
        urls = [f"http://127.0.0.1:{server.port}" for server in instances]
        _under_load(urls, client_id, admin_key, redis_cluster, pg)
    except BaseException:
        for server in instances:
            log(f"{server.name} log tail:\n{server.process.log_tail(40) if server.process else ''}")
        raise
    finally:
        for server in instances:
            server.stop()
        # Errors are logged with their trace (and a 500's access line): print each, whatever the outcome.
        for number in (0, 1):
            text = (workdir / f"service-{number}.log").read_text(errors="replace")
            for line in text.splitlines():
                if re.search(r'"level": "(error|critical)"|"status": 500\b|^Traceback|Error handling request', line):
                    log(f"authsvc-{number}: {line[:6000]}")


def _under_load(
    urls: list[str], client_id: str, admin_key: str, redis_cluster: RedisSentinels, pg: PostgresPair
) -> None:
    # A confidential-less service client for the password grant: the same public application serves.
    load = Load(urls, client_id, client_id, revoked=[])
    _wait_ready(urls)
    assert load.code_flow(0) and load.code_flow(1), load.seen[-6:]
    # Tokens revoked before the drill.
    revoked = []
    for _ in range(4):
        token = _password_token(urls[0], client_id)
        response = requests.post(
            urls[1] + "/auth/oauth/revoke", data={"token": token, "client_id": client_id}, timeout=10
        )
        assert response.status_code == 200
        revoked.append(token)
    load.revoked = revoked
    users, applications = _counts(pg)

    threads = [threading.Thread(target=load.run, args=(instance,), daemon=True) for instance in (0, 0, 1, 1)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(2)
        # ---- Redis: the primary crashes; the Sentinels promote the replica.
        old = redis_cluster.primary()
        killed = time.monotonic()
        redis_cluster.kill(old)
        log(f"Redis primary 127.0.0.1:{old} killed")
        while redis_cluster.primary() in (old, None):
            assert time.monotonic() - killed < 30, "the Sentinels did not promote the replica"
            time.sleep(0.1)
        promoted = time.monotonic()
        log(f"Redis failover: 127.0.0.1:{redis_cluster.primary()} promoted {promoted - killed:.1f} s after the kill")
        took = healthy_again(load, promoted, RECOVER_WITHIN)
        log(f"Redis: service recovered {took:.1f} s after promotion, {promoted - killed + took:.1f} s after the kill")
        _assert_ready(urls, admin_key, redis=f"127.0.0.1:{redis_cluster.primary()}")

        # ---- PostgreSQL: a revocation acknowledged just before the crash must survive it (synchronous commit).
        last = _password_token(urls[0], client_id)
        form = {"token": last, "client_id": client_id}
        assert requests.post(urls[0] + "/auth/oauth/revoke", data=form, timeout=10).status_code == 200
        revoked.append(last)
        killed = time.monotonic()
        pg.kill_primary()
        log(f"PostgreSQL primary 127.0.0.1:{pg.ports[0]} killed")
        time.sleep(1)  # a failover manager's detection time
        pg.promote()
        promoted = time.monotonic()
        log(f"PostgreSQL failover: 127.0.0.1:{pg.ports[1]} promoted {promoted - killed:.1f} s after the kill")
        took = healthy_again(load, promoted, RECOVER_WITHIN)
        log(f"PostgreSQL: service recovered {took:.1f} s after the promotion")
        _assert_ready(urls, admin_key, database=f"127.0.0.1:{pg.ports[1]}")
        time.sleep(1)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(30)

    # ---- What the load saw.
    statuses: dict[int, int] = {}
    for _, _, _, status, _, _ in load.seen:
        statuses[status] = statuses.get(status, 0) + 1
    log(f"load: {len(load.seen)} requests, by status {dict(sorted(statuses.items()))}")
    bad = [entry for entry in load.seen if entry[3] not in HEALTHY and not (entry[3] == 503 and entry[5])]
    assert not bad, f"answers a healthy service does not give (or 503 without Retry-After): {bad[:10]}"
    slow = [entry for entry in load.seen if entry[4] > ANSWER_WITHIN]
    assert not slow, f"answers slower than {ANSWER_WITHIN:.0f} s: {slow[:10]}"

    # ---- Afterwards: revocations held, spent codes stay spent, nothing lost.
    for token in revoked:
        response = requests.get(
            urls[1] + "/api/engine/v2/api_keys/inspect", headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
        assert response.status_code == 401, "a token revoked before the drill works again"
    for code in load.spent_codes:
        exchange = {"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": REDIRECT}
        response = requests.post(urls[0] + "/auth/oauth/token", params=exchange, timeout=10)
        assert response.status_code == 400, "a spent code works again"
    assert _counts(pg, primary=1) == (users, applications)
    log(f"afterwards: {len(revoked)} revoked tokens refused, {len(load.spent_codes)} spent codes refused")


def _password_token(url: str, client_id: str) -> str:
    data = {"grant_type": "password", "username": "robot@example.com", "password": PASSWORD, "client_id": client_id}
    response = requests.post(url + "/auth/oauth/token", json=data, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def _counts(pg: PostgresPair, primary: int = 0) -> tuple[int, int]:
    with psycopg.connect(pg.url(pg.ports[primary]), connect_timeout=5) as conn:
        users = conn.execute('SELECT count(*) FROM "user"').fetchone()[0]
        applications = conn.execute("SELECT count(*) FROM application").fetchone()[0]
    return users, applications


def _wait_ready(urls: list[str]) -> None:
    deadline = time.monotonic() + 30
    for url in urls:
        while requests.get(url + "/readyz", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "an instance did not become ready"
            time.sleep(0.2)


def _assert_ready(urls: list[str], admin_key: str, **servers: str) -> None:
    """Every instance is ready and names ``servers`` to a system admin."""
    for url in urls:
        deadline = time.monotonic() + 10
        while True:
            answer = requests.get(url + "/readyz", headers={"X-API-Key": admin_key}, timeout=10)
            named = answer.json().get("servers", {})
            if answer.status_code == 200 and all(named.get(kind) == where for kind, where in servers.items()):
                break
            assert time.monotonic() < deadline, f"/readyz does not name {servers}: {answer.json()}"
            time.sleep(0.2)
