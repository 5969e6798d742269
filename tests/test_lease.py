"""The lease keeper (R18) on a real Redis: a successful step never reports its lease lost.

The commit gives the lease back in its own transaction (``commit_step.lua`` flag ``L``); the keeper thread
may renew between that commit and the step leaving the keeper, and must not take the key the commit deleted
for a lost lease (it logged ``lease ... lost`` after a successful step on a 50 MB state).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
import redis

import graphq.worker.step.lease
from graphcore.backend.client import Client
from graphcore.backend.connection import connect
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from graphq.worker.step.commit_script import CommitScript

REGISTRY = Registry.load(["tests.workflows.leases", "tests.workflows.basic"])
FAST_KEEPER = {"heartbeat_interval_s": 0.05, "lease_ttl_s": 5.0}
"""The keeper looks every 50 ms (it ticks at min(heartbeat, 0.5 s))."""


def work(kv: redis.Redis, url: str) -> None:
    run_worker(Settings(redis_url=url, **FAST_KEEPER), burst=True, registry=REGISTRY, kv=kv)


def lease_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "graphq.lease" and r.levelno >= logging.INFO]


def follow(url: str, thread_id: str, run_id: str, stop: threading.Event) -> None:
    """Read the run's events as they come, as ``graphq run`` does while its worker works (each step's
    ``updates`` event holds the step's writes: the reader decodes megabytes right after each commit)."""
    kv = connect(url)
    after = "0-0"
    while not stop.is_set():
        for event in read_events(kv, thread_id, run_id, after, block_ms=100):
            after = event.id
    kv.close()


def test_large_state_steps_keep_their_lease(
    redis_client: redis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, Settings(redis_url=redis_url)))
    run_id = client.enqueue("big-state", {"size": 16_000_000, "steps": 4})  # each step commits 16 MB
    stop = threading.Event()
    reader = threading.Thread(target=follow, args=(redis_url, run_id, run_id, stop), daemon=True)
    reader.start()
    try:
        with caplog.at_level(logging.WARNING):
            work(redis_client, redis_url)
    finally:
        stop.set()
        reader.join(5)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.COMPLETED, 4)
    assert run.result is not None and run.result["n"] == 4 and len(run.result["blob"]) == 16_000
    assert lease_warnings(caplog) == []


def test_a_keeper_tick_between_the_commit_and_the_step_end_is_not_a_loss(
    redis_client: redis.Redis,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race made certain: right after every commit, before the step job goes on, the keeper ticks."""
    commit = CommitScript.run
    ticks: list[bool] = []

    def commit_then_tick(
        self: CommitScript, script_keys: list[str], argv: list[Any], what: str, *rest: Any
    ) -> str:
        verdict = commit(self, script_keys, argv, what, *rest)
        keeper = graphq.worker.step.lease._keeper(self.kv, FAST_KEEPER["heartbeat_interval_s"])
        for lease in [x for x in list(keeper.leases) if x.key == script_keys[1]]:
            keeper._tick(lease)
            ticks.append(lease in keeper.leases)
        return verdict

    monkeypatch.setattr(CommitScript, "run", commit_then_tick)
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, Settings(redis_url=redis_url)))
    run_id = client.enqueue("counter", {"limit": 3})
    with caplog.at_level(logging.WARNING):
        work(redis_client, redis_url)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    # The input commit (keeps the lease) and the last step's; steps 0 and 1 commit in RQ's success
    # pipeline, and their leases leave the keeper before the commit is sent (no tick can find it gone).
    assert ticks == [True, True]
    assert lease_warnings(caplog) == []
