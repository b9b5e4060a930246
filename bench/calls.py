"""Python function calls per request of each grant, in process: a figure that noise does not move.

On a shared machine CPU per request moves with the load of others; the
number of Python calls a request makes does not, and it follows the
interpreter's share of the CPU. This drives the app in process (Flask's
test client) against the stack of ``python -m bench --serve``: its
PostgreSQL database and its Redis. Run it from the checkout to measure
(another checkout measures that code against the same stack)::

    .venv/bin/python -m bench --serve --tokens 10000 --database calls   # in another terminal
    .venv/bin/python -m bench.calls bench/results/serve-calls.json redis://127.0.0.1:PORT/0

The Redis URL is printed by ``--serve``. It adds a confidential application
bound to the seeded service account and a device application (through the
CLI, in process), signs the seeded person in once, then counts the calls
(cProfile) of 50 requests of each kind after 20 unmeasured ones. The code
flow counts an authorisation and an exchange as two requests, as the table does.

``--only KEYS`` measures those scenarios only; ``--cpu N`` also times N
unprofiled requests of each (``time.process_time``: this process's CPU, the
app's and the test client's, not Redis's or PostgreSQL's), the least of three
rounds; ``--dump DIR`` writes each scenario's cProfile statistics to
``DIR/KEY.pstats``, which ``python -m bench.calls_diff BEFORE NOW`` compares
function by function (two checkouts, each against its own ``--serve`` stack).
``--callgrind`` counts machine instructions instead, a figure the load of others
moves least: run under ``valgrind --tool=callgrind --instr-atstart=no`` from a
scratch directory (the default ``callgrind.out.PID`` files are read back), it
switches instrumentation on around the measured requests only.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import json
import logging
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from bench.seed import HOST, PASSWORD, PERSON_EMAIL, REDIRECT_URI, SERVICE_EMAIL

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
WARMUP, MEASURED = 20, 50


def worker_environment(serve_json: Path, redis_url: str, **extra: str) -> dict:
    """The environment a worker of the ``--serve`` stack runs with (plus ``extra``); its serve JSON, read."""
    info = json.loads(serve_json.read_text())
    database = next(iter(info["instances"].values()))["database"]
    os.environ.update(
        AUTHSVC_WEB_WORKER="1",
        AUTHSVC_ENV="production",
        SECRET_KEY="calls-" * 8,
        DATABASE_URL=database.replace("postgresql://", "postgresql+psycopg://"),
        REDIS_URL=redis_url,
        **extra,
    )
    logging.disable(logging.WARNING)
    return info


def scenarios(serve_json: Path, redis_url: str) -> dict[str, tuple[Callable[[], object], int]]:
    """Each scenario's request (a callable) and how many requests one call makes, against the stack."""
    unlimited = "100000000/minute"
    info = worker_environment(
        serve_json,
        redis_url,
        AUTHSVC_COOKIE_SECURE="false",
        AUTHSVC_SIGNIN_RATE_LIMIT=unlimited,
        AUTHSVC_SIGNIN_ACCOUNT_RATE_LIMIT=unlimited,
        AUTHSVC_TOKEN_RATE_LIMIT=unlimited,
        AUTHSVC_CLIENT_FAILURE_RATE_LIMIT=unlimited,
        AUTHSVC_CLIENT_FAILURE_CLIENT_RATE_LIMIT=unlimited,
    )
    from authsvc import create_app
    from bench.bare_app import app as bare_app

    app = create_app()
    client, bare = app.test_client(), bare_app.test_client()
    headers = {"Host": HOST}
    runner = app.test_cli_runner()

    def cli(*args: str) -> dict:
        result = runner.invoke(args=list(args))
        assert result.exit_code == 0, result.output
        return json.loads([line for line in result.output.splitlines() if line.startswith("{")][-1])

    machine = cli(
        "apps", "create", "--domain", HOST, "--name", "Calls machine", "--confidential",
        "--service-account", SERVICE_EMAIL,
    )  # fmt: skip
    device = cli(
        "apps", "create", "--domain", HOST, "--name", "Calls screen", "--redirect-uri", REDIRECT_URI, "--device"
    )
    signin = {"email": PERSON_EMAIL, "password": PASSWORD}
    assert client.post("/auth/signin", query_string=signin, headers=headers).status_code == 202
    client_id = info["client_id"]
    database = next(iter(info["instances"].values()))["database"]

    def authorise(openid: bool) -> str:
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "scope": "public"}
        if openid:
            query.update(scope="openid", nonce="calls-nonce-0123456789")
        response = client.get("/auth/oauth/authorize", query_string=query, headers=headers)
        assert response.status_code == 302, response.data
        return parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]

    def exchange(code: str) -> dict:
        query = {"grant_type": "authorization_code", "client_id": client_id, "redirect_uri": REDIRECT_URI}
        response = client.post("/auth/oauth/token", query_string={**query, "code": code}, headers=headers)
        assert response.status_code == 200, response.data
        return response.get_json()

    refresh_tokens = [exchange(authorise(False))["refresh_token"]]

    def refresh() -> None:
        form = {"grant_type": "refresh_token", "refresh_token": refresh_tokens.pop(), "client_id": client_id}
        response = client.post("/auth/oauth/token", data=form, headers=headers)
        assert response.status_code == 200, response.data
        refresh_tokens.append(response.get_json()["refresh_token"])

    secret = base64.b64encode(f"{machine['client_id']}:{machine['client_secret']}".encode()).decode()

    def client_credentials() -> None:
        form = {"grant_type": "client_credentials"}
        response = client.post("/auth/oauth/token", data=form, headers={**headers, "Authorization": f"Basic {secret}"})
        assert response.status_code == 200, response.data

    started = client.post("/auth/oauth/device_authorization", data={"client_id": device["client_id"]}, headers=headers)
    device_code = started.get_json()["device_code"]

    def device_poll() -> None:
        form = {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": device["client_id"]}
        assert client.post("/auth/oauth/token", data=form, headers=headers).status_code == 400  # slow_down

    twin_client = twin_client_credentials(database)
    return {
        "bare": (lambda: bare.get("/"), 1),
        "twin_client_credentials": (twin_client, 1),
        "code_flow": (lambda: exchange(authorise(False)), 2),
        "code_flow_openid": (lambda: exchange(authorise(True)), 2),
        "refresh": (refresh, 1),
        "client_credentials": (client_credentials, 1),
        "device_poll": (device_poll, 1),
    }


def twin_client_credentials(database: str) -> Callable[[], object]:
    """The Authlib twin's client credentials request (bench/twin.py), in process, with a client of its own."""
    import hashlib
    import secrets

    import psycopg

    from bench import twin

    client_id, client_secret = secrets.token_urlsafe(24), secrets.token_urlsafe(32)
    with psycopg.connect(database, autocommit=True) as conn:
        user_id = conn.execute("SELECT min(id) FROM twin_user").fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO twin_client (client_id, client_secret, client_id_issued_at, client_secret_expires_at, "
            "client_metadata, user_id) VALUES (%s, %s, 0, 0, %s, %s)",
            (
                client_id,
                hashlib.sha256(client_secret.encode()).hexdigest(),
                json.dumps({"grant_types": ["client_credentials"], "scope": "public"}),
                user_id,
            ),
        )
    previous = os.environ["DATABASE_URL"]
    os.environ["DATABASE_URL"] = database
    try:
        client = twin.create_app().test_client()
    finally:
        os.environ["DATABASE_URL"] = previous
    secret = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()

    def request() -> None:
        response = client.post(
            "/oauth/token", data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {secret}"}
        )
        assert response.status_code == 200, response.data

    return request


def count(serve_json: Path, redis_url: str) -> dict[str, float]:
    """Python calls per request of each scenario (and the bare route's, for scale)."""
    return {
        key: profiled(request, WARMUP, MEASURED).total_calls / MEASURED / per_run  # type: ignore[attr-defined]
        for key, (request, per_run) in scenarios(serve_json, redis_url).items()
    }


def _nothing() -> None:
    pass


# ``settle`` (bench/traced_calls.py: the export of the spans the requests made) runs after the warm-up,
# before the measured window, and at the window's end, inside it: its work is counted with the requests'.


def cpu_ms(request: Callable[[], object], runs: int, rounds: int = 3, settle: Callable[[], object] = _nothing) -> float:
    """This process's CPU milliseconds per call of ``request``: the least of ``rounds`` rounds of ``runs`` calls."""
    best = float("inf")
    for _ in range(rounds):
        settle()
        began = time.process_time()
        for _ in range(runs):
            request()
        settle()
        best = min(best, (time.process_time() - began) / runs)
    return best * 1000


def profiled(
    request: Callable[[], object], warmup: int, measured: int, settle: Callable[[], object] = _nothing
) -> pstats.Stats:
    """cProfile's statistics of ``measured`` calls of ``request``, after ``warmup`` unmeasured ones."""
    for _ in range(warmup):
        request()
    settle()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(measured):
        request()
    settle()
    profile.disable()
    return pstats.Stats(profile)


def instructions(
    key: str, request: Callable[[], object], measured: int, dump: int, settle: Callable[[], object] = _nothing
) -> int:
    """Instructions (callgrind's Ir) of ``measured`` calls of ``request``; ``dump`` is this process's dump number."""
    pid = str(os.getpid())
    for _ in range(WARMUP):
        request()
    settle()
    subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    for _ in range(measured):
        request()
    settle()
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "-d", key, pid], check=True, capture_output=True)
    totals = Path(f"callgrind.out.{pid}.{dump}").read_text().split("\ntotals:", 1)[1].split()[0]
    return int(totals)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calls", description=__doc__.split("\n\n")[0])
    parser.add_argument("serve_json", type=Path, help="the JSON that `python -m bench --serve` wrote")
    parser.add_argument("redis_url", help="the Redis URL that `python -m bench --serve` printed")
    parser.add_argument("--only", default="", metavar="KEYS", help="these scenarios only, comma-separated")
    parser.add_argument("--cpu", type=int, default=0, metavar="N", help="also CPU ms per request over N requests")
    parser.add_argument("--dump", type=Path, default=None, metavar="DIR", help="write DIR/KEY.pstats")
    parser.add_argument("--callgrind", action="store_true", help="instructions per request (under callgrind)")
    args = parser.parse_args(argv)
    chosen = scenarios(args.serve_json, args.redis_url)
    if args.only:
        chosen = {key: chosen[key] for key in args.only.split(",")}
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    if args.callgrind:
        for dump, (key, (request, per_run)) in enumerate(chosen.items(), start=1):
            count = instructions(key, request, MEASURED, dump) / MEASURED / per_run
            print(f"{key:24s} {count / 1e6:7.3f} M instructions per request", flush=True)
        return 0
    for key, (request, per_run) in chosen.items():
        stats = profiled(request, WARMUP, MEASURED)
        if args.dump:
            stats.dump_stats(args.dump / f"{key}.pstats")
        line = f"{key:20s} {stats.total_calls / MEASURED / per_run:8.0f} Python calls per request"  # type: ignore[attr-defined]
        if args.cpu:
            line += f"  {cpu_ms(request, args.cpu) / per_run:7.3f} ms CPU per request"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
