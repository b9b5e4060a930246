"""The embedded store kept across restarts: a JSON snapshot of its keys, written now and then and at exit.

Without ``REDIS_URL`` the store lives in the web worker's memory (fakeredis), and a restart
of ``./scripts/run`` would sign everyone out, as no Redis would. With
``AUTHSVC_STORE_SNAPSHOT`` (a file; ``./scripts/run`` sets ``instance/store.json``) the web
worker loads the snapshot at start and writes it every ``INTERVAL`` seconds, off the request
path, and once more when it exits. What is lost to a killed process is at most an interval's
changes.

The file holds what the store holds: records named by a digest of their secret
(authsvc.core.store), never a usable session id or code, with the time each has left. It is
JSON (never pickle), written to a temporary file and renamed, mode 0600.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import redis

log = logging.getLogger(__name__)

INTERVAL = 5.0
_VERSION = 1


def _entry(client: redis.Redis, name: str) -> dict[str, Any] | None:
    """One key as JSON: its type, value and milliseconds to live (None: none)."""
    kind = client.type(name)
    value: Any
    if kind == "string":
        value = client.get(name)
    elif kind == "hash":
        value = client.hgetall(name)
    elif kind == "set":
        value = sorted(client.smembers(name))  # type: ignore[arg-type]
    elif kind == "list":
        value = client.lrange(name, 0, -1)
    elif kind == "zset":
        value = client.zrange(name, 0, -1, withscores=True)
    else:  # gone since the scan, or a type the service does not keep
        return None
    ttl = client.pttl(name)
    if not isinstance(ttl, int) or ttl == -2 or ttl == 0:  # expired since it was read: not kept forever
        return None
    return {"type": kind, "value": value, "pttl": ttl if ttl > 0 else None}


def _restore(client: redis.Redis, name: str, entry: dict[str, Any]) -> None:
    kind, value = entry["type"], entry["value"]
    pipe = client.pipeline()
    pipe.delete(name)
    if kind == "string":
        pipe.set(name, value)
    elif kind == "hash" and value:
        pipe.hset(name, mapping=value)
    elif kind == "set" and value:
        pipe.sadd(name, *value)
    elif kind == "list" and value:
        pipe.rpush(name, *value)
    elif kind == "zset" and value:
        pipe.zadd(name, {member: score for member, score in value})
    if entry.get("pttl"):
        pipe.pexpire(name, entry["pttl"])
    pipe.execute()


def save(client: redis.Redis, path: Path) -> int:
    """Write every key of ``client`` to ``path``; the number written."""
    keys = {}
    for name in client.scan_iter(count=1000):
        entry = _entry(client, name)
        if entry is not None:
            keys[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"version": _VERSION, "keys": keys}, f)
    os.replace(partial, path)
    return len(keys)


def load(client: redis.Redis, path: Path) -> int:
    """Put the keys of the snapshot at ``path`` into ``client``; the number loaded (0 without a usable file)."""
    try:
        snapshot = json.loads(path.read_text())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError) as exc:
        log.warning("store snapshot %s not loaded (%s): starting with an empty store", path, exc.__class__.__name__)
        return 0
    if not isinstance(snapshot, dict) or snapshot.get("version") != _VERSION:
        log.warning("store snapshot %s is of another version: starting with an empty store", path)
        return 0
    for name, entry in snapshot.get("keys", {}).items():
        _restore(client, name, entry)
    return len(snapshot.get("keys", {}))


def keep(client: redis.Redis, path: Path, interval: float = INTERVAL) -> None:
    """Load ``path`` into ``client`` now; save it every ``interval`` seconds and when the process exits."""
    loaded = load(client, path)
    if loaded:
        log.info("store snapshot: %d keys loaded from %s", loaded, path)
    stop = threading.Event()

    def save_quietly() -> None:
        try:
            save(client, path)
        except (OSError, redis.RedisError) as exc:
            log.warning("store snapshot %s not written: %s", path, exc.__class__.__name__)

    def periodically() -> None:
        while not stop.wait(interval):
            save_quietly()

    def at_exit() -> None:
        stop.set()
        save_quietly()

    threading.Thread(target=periodically, name="authsvc-store-snapshot", daemon=True).start()
    atexit.register(at_exit)
