"""Workers outlive Redis outages: a private redis-server with append-only on is stopped
and started again on its port while runs are in flight; every worker survives, every run ends, nothing is
lost. The 3 s outage runs in ``make test``; the 20 s one is marked ``chaos`` (``make chaos``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.connection import connect, outlast
from graphcore.backend.embedded import EmbeddedRedis, free_port
from graphcore.backend.events import read_events
from graphcore.backend.runs import CANCEL_ERROR, RunRecord, RunStatus, now_iso
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue
from graphq.worker.step.context import WorkerContext, set_context
from graphq.worker.step.job import step_job
from graphq.worker.step.lease import Lease
from tests.workers import Procs, worker_env

REGISTRY = Registry.load(["tests.workflows.outage"])
RUNS, STEPS, SLEEP_S = 4, 12, 0.1


LONG_LEASES = {"GRAPHQ_LEASE_TTL_S": "30", "GRAPHQ_HEARTBEAT_INTERVAL_S": "1"}
"""Longer than the outage: the steps in flight keep their leases."""


def outage(
    tmp_path: Path, down_s: float, leases: dict[str, str] = LONG_LEASES
) -> tuple[list[RunRecord], dict[str, bytes | None]]:
    """Runs in flight on two workers through an outage of ``down_s``; returns the runs that ended (the
    last run of each chain) and, for each run the reaper continued, its ``refused:commit`` count."""
    server = EmbeddedRedis(tmp_path / "redis", port=free_port(), appendonly=True).start()
    procs = Procs(tmp_path)
    try:
        kv = connect(server.url, attempts=30, max_wait_s=0.5)
        client = Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=server.url)))
        env = worker_env(server.url, "tests.workflows.outage", GRAPHQ_REDIS_RETRY_MAX_WAIT_S="0.5", **leases)
        workers = [procs.start("worker", "--log-level", "error", env=env) for _ in range(2)]
        given = {"steps": STEPS, "sleep_s": SLEEP_S}
        runs = [client.enqueue("ticking", given, thread_id=f"t{i}") for i in range(RUNS)]
        deadline = time.monotonic() + 20
        while sum(client.get_run(r).step for r in runs) < RUNS * STEPS // 4:  # a quarter done: in flight
            assert time.monotonic() < deadline, "the runs did not get going"
            time.sleep(0.05)
        server.stop()
        time.sleep(down_s)
        server.start()  # same port, same append-only file
        done = outlast(client.wait, runs, timeout_s=60 + down_s)  # this client's socket is stale too
        logs = "".join(procs.logged(w) for w in workers)
        for run in done:
            assert run.status == RunStatus.COMPLETED, logs
            assert run.result == {**given, "trail": list(range(1, STEPS + 1))}
            history = client.get_history(run.thread_id)
            assert [c.step for c in history] == list(range(STEPS, -2, -1))  # each step committed once
        assert [w.poll() for w in workers] == [None, None], logs  # every worker survived
        after = client.enqueue("ticking", {"steps": 2, "sleep_s": 0.0}, thread_id="after")
        [last] = client.wait([after], timeout_s=20)  # and goes on taking work
        assert (last.status, last.result) == (
            RunStatus.COMPLETED,
            {"steps": 2, "sleep_s": 0.0, "trail": [1, 2]},
        )
        assert "Traceback" not in logs, logs
        lost = [(r.thread_id, r.continued_from_run_id) for r in done if r.continued_from_run_id]
        return done, {run: kv.hget(keys.run(thread, run), "refused:commit") for thread, run in lost}
    finally:
        procs.close()
        server.stop()


def test_workers_outlive_a_3s_redis_restart(tmp_path: Path) -> None:
    done, _ = outage(tmp_path, 3.0)
    assert [(r.step, r.continued_from_run_id) for r in done] == [(STEPS, None)] * RUNS  # no run interrupted


@pytest.mark.chaos
@pytest.mark.timeout(180)
def test_workers_outlive_a_20s_redis_restart(tmp_path: Path) -> None:
    done, _ = outage(tmp_path, 20.0)
    assert [(r.step, r.continued_from_run_id) for r in done] == [(STEPS, None)] * RUNS


@pytest.mark.chaos
@pytest.mark.timeout(180)
def test_a_20s_redis_restart_that_outlasts_the_leases_is_recovered_by_the_reaper(tmp_path: Path) -> None:
    """The steps in flight lose their leases during the outage: their workers' writes are refused when
    Redis is back, the reaper continues those runs (R14), and every chain ends completed, each step
    committed once."""
    leases = {
        "GRAPHQ_LEASE_TTL_S": "2",
        "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5",
        "GRAPHQ_REAPER_INTERVAL_S": "1",
    }
    done, refused = outage(tmp_path, 20.0, leases)
    # The steps in flight on the two workers (when the outage began) were continued, once each; each
    # interrupted run's commit was refused once its worker reached Redis again.
    assert 1 <= len(refused) <= 2  # at least one step was in flight: else nothing here was tested
    assert list(refused.values()) == [b"1"] * len(refused)
    assert [r.attempt for r in done if r.continued_from_run_id] == [2] * len(refused)


def test_a_step_whose_lease_lapsed_during_an_outage_changes_nothing(tmp_path: Path) -> None:
    """The outage outlasts the lease: when Redis is back the worker's writes for that step are refused (it
    is never half-committed); the worker lives on and takes the step again once it is queued again."""
    server = EmbeddedRedis(tmp_path / "redis", port=free_port(), appendonly=True).start()
    env = worker_env(
        server.url,
        "tests.workflows.fencing",
        tmp_path,
        GRAPHQ_LEASE_TTL_S="1",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.2",
        GRAPHQ_REAPER_INTERVAL_S="600",  # the step is queued again by hand below
        GRAPHQ_REDIS_RETRY_MAX_WAIT_S="0.5",
    )
    procs = Procs(tmp_path)
    worker = procs.start("worker", env=env)
    try:
        kv = connect(server.url, attempts=30, max_wait_s=0.5)
        registry = Registry.load(["tests.workflows.fencing"])
        settings = Settings(redis_url=server.url)
        client = Client(kv, registry, RQStepQueue(kv, settings))
        run_id = client.enqueue("zombie", {"names": ["slow", "fast"]}, thread_id="lapse")
        deadline = time.monotonic() + 20
        while kv.hget(keys.run("lapse", run_id), "partial") is None or not (tmp_path / "slow.log").exists():
            assert time.monotonic() < deadline, procs.logged(worker)
            time.sleep(0.05)
        head = client.get_run(run_id).head or ""
        server.stop()
        (tmp_path / "go").touch()  # the slow task ends while Redis is away
        time.sleep(3)  # longer than the lease
        server.start()
        deadline = time.monotonic() + 20
        while outlast(kv.hget, keys.run("lapse", run_id), "refused:pending") is None:
            assert time.monotonic() < deadline, procs.logged(worker)
            time.sleep(0.05)
        run = client.get_run(run_id)
        assert (run.status, run.step, run.head) == (RunStatus.RUNNING, 0, head)
        assert [c.step for c in client.get_history("lapse")] == [0, -1]
        assert len(kv.hgetall(keys.pending_writes("lapse", "", head))) == 1  # the fast task's, kept
        assert worker.poll() is None, procs.logged(worker)
        kv.zrem(keys.lease_index(), keys.lease_member("lapse", run_id))  # as a reaper would; then queue it
        pipe = kv.pipeline(transaction=True)
        pipe.multi()
        RQStepQueue(kv, settings).stage(pipe, run)
        pipe.execute()
        [done] = client.wait([run_id], timeout_s=20)
        assert (done.status, done.result) == (
            RunStatus.COMPLETED,
            {"names": ["slow", "fast"], "done": ["slow#2", "fast#1"]},
        ), procs.logged(worker)
        assert [c.step for c in client.get_history("lapse")] == [1, 0, -1]
        assert kv.hget(keys.run("lapse", run_id), "refused:pending") == b"1"
    finally:
        procs.close()
        server.stop()


def test_a_claim_retried_after_its_reply_was_lost_is_still_the_workers(redis_client: redis.Redis) -> None:
    """The worker retries a claim whose reply an outage swallowed (with the same lease token): the lease it
    took is its own (claimed), not "another worker holds the lease" (which would strand the step)."""
    kv = redis_client
    client = Client(kv, REGISTRY, RQStepQueue(kv, Settings()))
    run_id = client.enqueue("ticking", {"steps": 1, "sleep_s": 0.0}, thread_id="claimed")
    lease = Lease(kv, "claimed", run_id, 30, 10)
    first = lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json())[0]
    again = lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json())[0]
    other = Lease(kv, "claimed", run_id, 30, 10).claim(0, now_iso(), CANCEL_ERROR.model_dump_json())[0]
    assert (first, again, other) == (3, 3, 2)
    lease.release()


def test_a_status_change_retried_after_its_reply_was_lost_counts_as_made(redis_client: redis.Redis) -> None:
    """A fenced status change applied before an outage swallowed its reply, retried: made (so the step
    job goes on to hand the thread over), and written once; unfenced, the status rules refuse it."""
    kv = redis_client
    client = Client(kv, REGISTRY, RQStepQueue(kv, Settings()))
    run_id = client.enqueue("ticking", {"steps": 1, "sleep_s": 0.0}, thread_id="twice")
    run = client.get_run(run_id)
    lease = Lease(kv, "twice", run_id, 30, 10)
    assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json())[0] == 3
    failed = [("status", 0, {"status": "failed"})]
    fence = (lease.key, lease.token)
    made = [client.runs.set_status(run, RunStatus.FAILED, events=failed, fence=fence) for _ in range(2)]
    assert made == [True, True]
    assert client.runs.set_status(run, RunStatus.FAILED, events=failed) is False
    assert [e.data for e in read_events(kv, "twice", run_id) if e.mode == "status"] == [{"status": "failed"}]
    lease.release()


def test_a_pause_retried_after_its_reply_was_lost_counts_as_made(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that pauses for input gives its lease back in its status change; when an outage swallowed that
    change's reply, the retry finds the lease gone: the change counts as made (the step is awaiting input,
    nothing refused), not as a write refused by the fence, and the run's slot goes back at once (R8)."""
    kv = redis_client
    settings = Settings(redis_url=redis_url)
    registry = Registry.load(["tests.workflows.hitl"])
    run_id = Client(kv, registry, RQStepQueue(kv, settings)).enqueue("asking", {"topic": "x"}, thread_id="p")
    ctx = WorkerContext.build(kv, settings, registry)
    set_context(ctx)
    script = ctx.runs._set_status
    lost: list[bool] = []

    def reply_lost(*, keys: list[str], args: list[Any]) -> Any:
        reply = script(keys=keys, args=args)
        if args[0] == "awaiting_input" and not lost:
            lost.append(True)
            raise redis.ConnectionError("the reply was lost")
        return reply

    monkeypatch.setattr(ctx.runs, "_set_status", reply_lost)
    assert step_job(run_id, "p", 0) == "awaiting input: 1 request(s)"
    run = RunRecord.from_hash(kv.hgetall(keys.run("p", run_id)))
    assert (lost, run.status) == ([True], RunStatus.AWAITING_INPUT)
    assert [f for f in kv.hkeys(keys.run("p", run_id)) if f.startswith(b"refused:")] == []
    member = keys.lease_member("p", run_id)
    assert kv.zscore(keys.lease_index(), member) is None
    assert kv.hexists(keys.admission("holders"), member) == 0
    statuses = [e.data["status"] for e in read_events(kv, "p", run_id) if e.mode == "status"]
    assert statuses == ["running", "awaiting_input"]
