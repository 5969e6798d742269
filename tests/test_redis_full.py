"""A full Redis (``maxmemory`` reached under ``noeviction``: every write refused with OOM) is waited out like
an outage: the refusal is transient, workers retry their writes and RQ's bookkeeping until memory is freed
and live on, every run ends with each step committed once, a step whose ending cannot be written is left
to the reaper, and the CLI says it in one line. The Redis is the session's (tests.workers.refusing_writes
sets ``maxmemory`` 1 and restores 0)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.exceptions as rex
from rq.serializers import JSONSerializer

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.connection import REDIS_FULL, FailureStreak, is_transient, outlast, refuses_writes
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.process.dequeue import StopAwareQueue
from graphq.worker.queue import RQStepQueue, StepJob
from graphq.worker.step.context import WorkerContext, set_context
from graphq.worker.step.job import step_job
from tests.workers import (
    Procs,
    Start,
    graphq,
    line_count,
    refusing_writes,
    rq_states,
    wait_for,
    worker_children,
    worker_env,
)

REGISTRY = Registry.load(["tests.workflows.full"])


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.full", tmp_path, GRAPHQ_REDIS_RETRY_MAX_WAIT_S="0.5")


def _raised(call: Any) -> BaseException:
    try:
        call()
    except rex.RedisError as exc:
        return exc
    raise AssertionError("no error raised")


def test_a_refused_write_is_transient_however_redis_py_raises_it(redis_client: redis.Redis) -> None:
    """The OOM refusal of a command, of a write in a Lua script (a plain ResponseError quoting it) and of a
    MULTI is transient (retried like an outage); another error reply of a script stays permanent."""
    kv = redis_client
    kv.set("text", "x")
    with refusing_writes(kv):
        refused = [
            _raised(lambda: kv.set("k", "v")),
            _raised(lambda: kv.eval("return redis.call('HSET', KEYS[1], 'f', 'v')", 1, "h")),
            _raised(lambda: kv.pipeline(transaction=True).set("k", "v").get("k").execute()),
        ]
    other = _raised(lambda: kv.eval("return redis.call('INCR', KEYS[1])", 1, "text"))  # not an integer
    assert [type(e) for e in refused] == [rex.OutOfMemoryError, rex.ResponseError, rex.OutOfMemoryError]
    assert [(refuses_writes(e), is_transient(e)) for e in refused] == [(True, True)] * 3
    assert (type(other), refuses_writes(other), is_transient(other)) == (rex.ResponseError, False, False)
    assert kv.get("k") is None and kv.exists("h") == 0  # nothing of a refused write was written


def test_outlast_waits_for_a_full_redis_and_logs_it_once(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A write refused for want of memory is tried again until memory is freed (here after its third try),
    then goes through; the wait is logged once, with its reason, not once a try."""
    kv = redis_client
    tries: list[int] = []

    def write() -> Any:
        tries.append(1)
        return kv.set("k", "v")

    def free_after_three_tries() -> None:
        wait_for(lambda: len(tries) >= 3, what="three tries")
        kv.config_set("maxmemory", 0)

    freer = threading.Thread(target=free_after_three_tries)
    caplog.set_level(logging.WARNING, "graphcore.backend.connection")
    with refusing_writes(kv):
        freer.start()
        try:
            assert outlast(write) is True
        finally:
            freer.join(30)
    assert len(tries) >= 4 and kv.get("k") == b"v"
    call = f"{test_outlast_waits_for_a_full_redis_and_logs_it_once.__name__}.<locals>.write"
    assert [r.getMessage() for r in caplog.records] == [
        f"{REDIS_FULL}, retrying {call} until it accepts them (free memory or raise maxmemory)"
    ]


def test_a_call_failing_at_every_turn_is_logged_once_a_streak(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "graphq.test")
    beats = FailureStreak(logging.getLogger("graphq.test"), "worker w1 heartbeat")
    full = rex.OutOfMemoryError("command not allowed when used memory > 'maxmemory'.")
    for _ in range(3):
        beats.failed(full)
    beats.worked()
    beats.worked()
    beats.failed(rex.ResponseError("ERR bad record"))
    beats.failed(rex.ResponseError("ERR bad record"))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"worker w1 heartbeat failed, trying again until it works: {REDIS_FULL}"),
        ("DEBUG", f"worker w1 heartbeat failed, trying again until it works: {REDIS_FULL}"),
        ("DEBUG", f"worker w1 heartbeat failed, trying again until it works: {REDIS_FULL}"),
        ("WARNING", "worker w1 heartbeat works again"),
        ("WARNING", "worker w1 heartbeat failed: ERR bad record"),
        ("WARNING", "worker w1 heartbeat failed: ERR bad record"),
    ]


def test_enqueue_while_redis_refuses_writes_says_it_in_one_line(
    redis_client: redis.Redis, env: dict[str, str]
) -> None:
    with refusing_writes(redis_client):
        done = graphq("enqueue", "gated", "--input", '{"name": "x", "steps": 1, "gate": 0}', env=env)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        f"error: {REDIS_FULL}; free memory or raise maxmemory\n",
    )
    assert redis_client.keys("*") == []  # nothing half-enqueued


def test_runs_end_and_workers_live_on_when_redis_refuses_their_commits(
    client: Client, redis_client: redis.Redis, start: Start, procs: Procs, tmp_path: Path
) -> None:
    """Two steps end while Redis is full: one whose commit rides RQ's success pipeline (the run goes on),
    one whose commit completes its run (a round trip of its own). Both commits wait until memory is freed,
    then apply: each run completes, each step committed once and each node run once; the worker's processes
    all live on."""
    worker = start("--concurrency", "2", processes=2)
    children = worker_children(worker.pid)
    going = client.enqueue("gated", {"name": "going", "steps": 3, "gate": 2}, thread_id="going")
    ending = client.enqueue("gated", {"name": "ending", "steps": 3, "gate": 3}, thread_id="ending")
    at_gates = [tmp_path / "going.at-gate", tmp_path / "ending.at-gate"]
    wait_for(lambda: all(p.exists() for p in at_gates), 30, "both nodes at their gate")
    commits = ("retrying BaseWorker.handle_job_success until", "retrying CommitScript.run until")
    with refusing_writes(redis_client):
        (tmp_path / "go").touch()
        wait_for(lambda: all(c in procs.logged(worker) for c in commits), 30, "both commits refused")
    runs = client.wait([going, ending], timeout_s=60)
    logged = procs.logged(worker)
    for run in runs:
        assert (run.status, run.continued_from_run_id) == (RunStatus.COMPLETED, None), logged
        name = run.thread_id
        assert run.result == {
            "name": name,
            "steps": 3,
            "gate": 2 if name == "going" else 3,
            "trail": [1, 2, 3],
        }
        assert [c.step for c in client.get_history(name)] == [3, 2, 1, 0, -1]  # each step committed once
        assert line_count(tmp_path / f"{name}.log") == 3  # each node ran once
    assert [logged.count(c) for c in commits] == [1, 1]  # each wait logged once
    assert (worker.poll(), worker_children(worker.pid)) == (None, children), logged
    assert "Traceback" not in logged, logged


def test_a_worker_started_while_redis_refuses_writes_waits_then_works(
    client: Client, redis_client: redis.Redis, procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    """Its first heartbeat waits for memory (and the rest of its start after it); the worker process is
    never replaced, and takes work once memory is freed."""
    with refusing_writes(redis_client):
        worker = procs.start("worker", env=env)
        wait_for(
            lambda: "retrying Heartbeat.beat until" in procs.logged(worker), 30, "the first beat refused"
        )
        children = worker_children(worker.pid)
    wait_for(lambda: rq_states(redis_client) == ["idle"], 30, "the worker to take jobs")
    run_id = client.enqueue("gated", {"name": "late", "steps": 2, "gate": 0})
    [done] = client.wait([run_id], timeout_s=30)
    logged = procs.logged(worker)
    assert (done.status, done.result) == (
        RunStatus.COMPLETED,
        {"name": "late", "steps": 2, "gate": 0, "trail": [1, 2]},
    ), logged
    assert (len(children), worker.poll(), worker_children(worker.pid)) == (1, None, children), logged
    assert "Traceback" not in logged, logged


def test_a_dequeue_refused_by_a_full_redis_waits_then_takes_the_job(
    client: Client, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on one queue pops with LMOVE, a write: refused, it is tried again (RQ's loop would stop the
    worker) until memory is freed, and takes the job. (The queue class's state is per process: a worker
    stopped in an earlier test of this process left it stopping.)"""
    monkeypatch.setattr(StopAwareQueue, "stopping", False)
    kv = redis_client
    run_id = client.enqueue("gated", {"name": "popped", "steps": 1, "gate": 0})
    queue = client.queue.queue("gated")
    refused = kv.info("stats")["total_error_replies"]

    def free_once_refused() -> None:
        wait_for(lambda: kv.info("stats")["total_error_replies"] > refused, what="the pop refused")
        kv.config_set("maxmemory", 0)

    freer = threading.Thread(target=free_once_refused)
    with refusing_writes(kv):
        freer.start()
        try:
            job, _ = StopAwareQueue.dequeue_any(
                [queue], None, connection=kv, job_class=StepJob, serializer=JSONSerializer
            )
        finally:
            freer.join(30)
    assert job.args == [run_id, client.get_run(run_id).thread_id, 0]


def test_a_step_whose_end_cannot_be_written_leaves_its_lease_to_the_reaper(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node fails and the run's failure cannot be written (a permanent error reply): the step job gives
    the lease nothing back, so the run stays where the reaper finds it; once the lease lapses, the reaper
    continues the run (released, the lease would leave it Running for ever, in no index)."""
    kv = redis_client
    settings = Settings(redis_url=redis_url, lease_ttl_s=1, heartbeat_interval_s=0.2)
    client = Client(kv, REGISTRY, RQStepQueue(kv, settings))
    run_id = client.enqueue("failing", {}, thread_id="left")
    ctx = WorkerContext.build(kv, settings, REGISTRY)
    set_context(ctx)

    written = ctx.runs.set_status

    def unwritable(run: Any, status: RunStatus, **options: Any) -> bool:
        if status == RunStatus.FAILED:
            raise rex.ResponseError("ERR the failure could not be written")
        return written(run, status, **options)

    monkeypatch.setattr(ctx.runs, "set_status", unwritable)
    with pytest.raises(rex.ResponseError, match="could not be written"):
        step_job(run_id, "left", 0)
    member = keys.lease_member("left", run_id)
    assert kv.zscore(keys.lease_index(), member) is not None  # still where the reaper looks
    assert client.get_run(run_id).status == RunStatus.RUNNING
    wait_for(lambda: kv.exists(keys.lease("left", run_id)) == 0, what="the lease to lapse")
    [(reaped, outcome)] = Reaper(kv, settings).sweep()
    assert (reaped, outcome.verdict) == (run_id, "continued")
    continuation = client.get_run(outcome.detail)
    assert (continuation.continued_from_run_id, continuation.status) == (run_id, RunStatus.QUEUED)


@pytest.mark.chaos  # make test: the commits refused, the dequeue refused and the start-up tests above
def test_runs_in_flight_through_4s_of_a_full_redis_all_complete(
    client: Client, redis_client: redis.Redis, start: Start, procs: Procs
) -> None:
    """The episode as seen on real processes: six runs of eight steps on two worker processes, Redis full
    for 4 s while they run. Every run completes (continued or not), each step committed once; the worker's
    processes all live on."""
    worker = start("--concurrency", "2", processes=2)
    children = worker_children(worker.pid)
    given = [{"name": f"r{i}", "steps": 8, "gate": 0} for i in range(6)]
    runs = [client.enqueue("gated", g, thread_id=g["name"]) for g in given]
    wait_for(lambda: sum(client.get_run(r).step for r in runs) >= 6, 30, "the runs to get going")
    with refusing_writes(redis_client):
        time.sleep(4)  # the fault's length, not a wait for an event
    done = client.wait(runs, timeout_s=90)
    logged = procs.logged(worker)
    for run, g in zip(done, given, strict=True):
        assert (run.status, run.result) == (RunStatus.COMPLETED, {**g, "trail": list(range(1, 9))}), logged
        assert [c.step for c in client.get_history(g["name"])] == list(range(8, -2, -1))  # committed once
    assert (worker.poll(), worker_children(worker.pid)) == (None, children), logged
    assert "Traceback" not in logged, logged
