"""The embedded store kept across restarts (authsvc.core.store_snapshot), on the real in-process store."""

from __future__ import annotations

import json
import logging
import time

import fakeredis
import pytest

from authsvc.core import store_snapshot


@pytest.fixture
def store():
    return fakeredis.FakeRedis(decode_responses=True)


def test_a_snapshot_brings_back_every_kind_of_key_with_the_time_it_had_left(store, tmp_path):
    store.set("authsvc:session:d1", json.dumps({"user": 1}), ex=600)
    store.hset("authsvc:sid-rps:d2", mapping={"sid": "s", "user": "1", "app:3": "1"})
    store.sadd("authsvc:user-sids:1", "a", "b")
    store.rpush("authsvc:list", "x", "y")
    store.zadd("LIMITS:window", {"m1": 1.5, "m2": 2.0})
    store.set("authsvc:forever", "1")
    path = tmp_path / "store.json"

    assert store_snapshot.save(store, path) == 6
    assert path.stat().st_mode & 0o777 == 0o600
    restarted = fakeredis.FakeRedis(decode_responses=True)
    assert store_snapshot.load(restarted, path) == 6

    assert json.loads(restarted.get("authsvc:session:d1")) == {"user": 1}
    assert 590 <= restarted.ttl("authsvc:session:d1") <= 600
    assert restarted.hgetall("authsvc:sid-rps:d2") == {"sid": "s", "user": "1", "app:3": "1"}
    assert restarted.smembers("authsvc:user-sids:1") == {"a", "b"}
    assert restarted.lrange("authsvc:list", 0, -1) == ["x", "y"]
    assert restarted.zrange("LIMITS:window", 0, -1, withscores=True) == [("m1", 1.5), ("m2", 2.0)]
    assert restarted.ttl("authsvc:forever") == -1


def test_an_expired_key_is_not_brought_back(store, tmp_path):
    store.set("authsvc:code:gone", "1", px=1)
    time.sleep(0.01)
    path = tmp_path / "store.json"
    store_snapshot.save(store, path)
    restarted = fakeredis.FakeRedis(decode_responses=True)
    store_snapshot.load(restarted, path)
    assert restarted.get("authsvc:code:gone") is None


@pytest.mark.parametrize("content", ["not json", '{"version": 99, "keys": {}}', "[]"])
def test_an_unreadable_snapshot_starts_an_empty_store_with_a_warning(store, tmp_path, caplog, content):
    path = tmp_path / "store.json"
    path.write_text(content)
    with caplog.at_level(logging.WARNING, logger="authsvc.core.store_snapshot"):
        assert store_snapshot.load(store, path) == 0
    assert "starting with an empty store" in caplog.text
    assert store.dbsize() == 0


def test_no_snapshot_yet_is_an_empty_store(store, tmp_path):
    assert store_snapshot.load(store, tmp_path / "missing.json") == 0
