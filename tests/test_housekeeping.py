"""Housekeeping loops and owner-token locks (R13, R18): one active instance per loop, locks renewed and
released only with their owner's token. Real Redis."""

from __future__ import annotations

import threading
import time

import redis

from graphcore import keys
from graphcore.backend.locks import OwnerLock
from graphcore.settings import Settings
from graphq.worker.housekeeping.loops import Loop, loops, run_loop, start_housekeeping
from tests.workers import wait_for

KEY = keys.housekeeping_lock("test")


def test_an_owner_lock_is_renewed_and_released_only_with_its_token(redis_client: redis.Redis) -> None:
    first, second = OwnerLock(redis_client, KEY, 5), OwnerLock(redis_client, KEY, 5)
    assert first.hold() and first.hold()
    assert not second.hold()
    assert not second.release()
    assert redis_client.get(KEY) == first.token.encode()
    assert 4000 < redis_client.pttl(KEY) <= 5000
    assert first.release()
    assert redis_client.exists(KEY) == 0
    assert not first.release()


def test_an_expired_owner_cannot_touch_its_successors_lock(redis_client: redis.Redis) -> None:
    """A pass longer than the lock's TTL (K1): the old owner neither renews nor releases the new one's."""
    slow, fresh = OwnerLock(redis_client, KEY, 0.05), OwnerLock(redis_client, KEY, 30)
    assert slow.hold()
    time.sleep(0.1)
    assert fresh.hold()
    assert not slow.hold()
    assert not slow.release()
    assert redis_client.get(KEY) == fresh.token.encode()
    assert redis_client.pttl(KEY) > 29_000  # not shortened to the old owner's TTL


def test_the_loops_and_their_locks() -> None:
    settings = Settings(
        reaper_interval_s=2,
        lease_ttl_s=20,
        request_expiration_scan_interval_s=7,
        retention_sweep_interval_s=9,
        webhook_interval_s=3,
        webhook_timeout_s=4,
    )
    found = loops(redis.Redis(), settings)
    assert [(lp.name, lp.interval_s, lp.lock_ttl_s) for lp in found] == [
        ("reaper", 2, 5),
        ("request-expiry", 7, None),
        ("retention", 9, None),
        ("webhooks", 3, 11),  # two intervals, a POST's timeout and a second
    ]
    assert keys.housekeeping_lock("reaper") == keys.reaper_lock() == "graphq:reaper:lock"
    assert found[1].lock(redis.Redis()).ttl_ms == 15_000


def test_one_instance_of_a_loop_ticks_and_gives_its_lock_back(
    redis_client: redis.Redis, redis_url: str
) -> None:
    ticks: list[int] = []
    stop = threading.Event()
    instances = [
        Loop("test", 0.02, lambda i=i: ticks.append(i))
        for i in range(3)  # type: ignore[misc]
    ]
    threads = [
        threading.Thread(target=run_loop, args=(redis.Redis.from_url(redis_url), lp, stop))
        for lp in instances
    ]
    for t in threads:
        t.start()
    wait_for(lambda: len(ticks) >= 10, 20, "ten ticks")
    stop.set()
    for t in threads:
        t.join(20)
    assert len(ticks) >= 10
    assert len(set(ticks)) == 1  # one active instance: the one that took the lock first
    assert redis_client.exists(KEY) == 0


def test_once_skips_a_loop_another_instance_runs(redis_client: redis.Redis) -> None:
    loop = Loop("test", 1, lambda: "done")
    other = loop.lock(redis_client)
    assert other.hold()
    assert loop.once(redis_client) == (False, None)
    assert other.release()
    assert loop.once(redis_client) == (True, "done")
    assert redis_client.exists(KEY) == 0


def test_start_housekeeping_starts_every_loop(redis_client: redis.Redis, redis_url: str) -> None:
    stop = threading.Event()
    settings = Settings(
        redis_url=redis_url,
        reaper_interval_s=0.05,
        request_expiration_scan_interval_s=0.05,
        retention_sweep_interval_s=0.05,
        webhook_interval_s=0.05,
    )
    threads = start_housekeeping(redis_client, settings, stop)
    names = ("reaper", "request-expiry", "retention", "webhooks")
    assert [t.name for t in threads] == [f"graphq-{n}" for n in names]
    wait_for(
        lambda: redis_client.exists(*(keys.housekeeping_lock(n) for n in names)) == len(names),
        20,
        "each loop to take its lock",
    )
    stop.set()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads)
    assert redis_client.exists(*(keys.housekeeping_lock(n) for n in names)) == 0
