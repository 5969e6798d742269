"""Every write of a step job is fenced by its lease (I1, I7), with real worker processes
and real signals: a worker paused (SIGSTOP) past its lease changes nothing when it wakes (SIGCONT)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunError, RunStatus
from graphcore.engine.algo import apply_input
from graphcore.engine.registry import Registry
from graphcore.errors import LeaseLostError
from graphcore.settings import Settings
from graphcore.types import TaskWrites
from graphq.worker.queue import RQStepQueue
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.ending import end
from graphq.worker.step.fence import REFUSED
from graphq.worker.step.job import _mark_running
from graphq.worker.step.lease import Lease
from graphq.worker.step.pausing import seed_answers
from tests.workers import Procs, line_count, wait_for, worker_env

REGISTRY = Registry.load(["tests.workflows.fencing"])

CASES: dict[str, tuple[dict[str, Any], dict[bytes, bytes], list[str]]] = {
    # input; the refusals counted in the run hash once the zombie woke; the successor's result
    "commit": ({"names": ["solo"]}, {b"refused:commit": b"1"}, ["solo#2"]),
    "pending": ({"names": ["slow", "fast"]}, {b"refused:pending": b"1"}, ["slow#2", "fast#1"]),
    "status": ({"names": ["doomed"], "fail": True}, {b"refused:status": b"1"}, ["doomed#2"]),
    "subgraph": ({"names": ["sub"]}, {b"refused:subgraph": b"1"}, ["sub#2"]),
}
WORKFLOW = {"subgraph": "zombie-sub"}
"""Each case runs workflow ``zombie``, but for these."""
TASKS = [n for given, _, _ in CASES.values() for n in given["names"]]
"""solo, slow, fast, doomed, sub: each logs a line in ``<name>.log`` when it starts."""


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(
        redis_url,
        "tests.workflows.fencing",
        tmp_path,
        GRAPHQ_LEASE_TTL_S="1",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.2",
        GRAPHQ_REAPER_INTERVAL_S="600",  # this test takes the steps over by hand
    )


@pytest.fixture
def zombies(procs: Procs, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """One `graphq worker` per case, each in its own process group: SIGSTOP/SIGCONT reach every process."""
    return [procs.start("worker", env=env) for _ in CASES]


def pause_mid_step(
    client: Client, kv: redis.Redis, tmp_path: Path, zombies: list[subprocess.Popen[bytes]]
) -> dict[str, str]:
    """Enqueue each case's run and SIGSTOP the workers once each holds one run's step: its tasks started,
    the fast task's writes persisted. Returns the run ids by case."""
    runs = {
        case: client.enqueue(WORKFLOW.get(case, "zombie"), given, thread_id=case)
        for case, (given, _, _) in CASES.items()
    }
    wait_for(lambda: all(line_count(tmp_path / f"{n}.log") == 1 for n in TASKS), what="every task to start")
    head = client.get_run(runs["pending"]).head or ""
    wait_for(lambda: kv.hlen(keys.pending_writes("pending", "", head)) == 1, what="the fast task's writes")
    for proc in zombies:
        os.killpg(proc.pid, signal.SIGSTOP)
    return runs


def wake_and_check_refused(
    client: Client, kv: redis.Redis, zombies: list[subprocess.Popen[bytes]], runs: dict[str, str]
) -> None:
    """SIGCONT the zombies (whose runs were taken over and have ended): each one's write is refused and
    counted in its run's hash, and changes neither that run's record nor any other key of its thread."""
    before = {case: run_and_thread(client, kv, case, run_id) for case, run_id in runs.items()}
    for case, run_id in runs.items():
        assert refusals(kv, case, run_id) == {}, case
    for proc in zombies:
        os.killpg(proc.pid, signal.SIGCONT)
    for case, run_id in runs.items():
        wait_for(
            lambda case=case, run_id=run_id: refusals(kv, case, run_id) != {},  # type: ignore[misc]
            timeout_s=10,
            what=f"the zombie of run {case} to try its write",
        )
    time.sleep(0.5)  # a zombie that got through would have written by now
    for case, run_id in runs.items():
        assert refusals(kv, case, run_id) == CASES[case][1], case
        assert run_and_thread(client, kv, case, run_id) == before[case], case


def take_over(kv: redis.Redis, settings: Settings, client: Client, run_id: str) -> None:
    """What a reaper would do with the step of a worker whose lease lapsed: queue the step again (the lease
    index entry, where the claim keeps one, is the reaper's to clear)."""
    run = client.get_run(run_id)
    kv.zrem(keys.lease_index(), keys.lease_member(run.thread_id, run_id))
    pipe = kv.pipeline(transaction=True)
    pipe.multi()
    RQStepQueue(kv, settings).stage(pipe, run)
    pipe.execute()


def refusals(kv: redis.Redis, thread: str, run_id: str) -> dict[bytes, bytes]:
    return {k: v for k, v in kv.hgetall(keys.run(thread, run_id)).items() if k.startswith(b"refused:")}


def thread_keys(kv: redis.Redis, thread: str, *runs: str) -> dict[bytes, Any]:
    """Every key of the thread with its content (DUMP), but the runs' hashes (where refusals are counted):
    checkpoints of every namespace, pending writes, answers, request records, event streams."""
    skip = {keys.run(thread, run_id).encode() for run_id in runs}
    return {k: kv.dump(k) for k in kv.scan_iter(match=keys.thread_pattern(thread)) if k not in skip}


def run_and_thread(client: Client, kv: redis.Redis, thread: str, run_id: str) -> tuple[Any, ...]:
    """The run's record and :func:`thread_keys` but the hashes of the run and of its continuation."""
    run = client.get_run(run_id)
    return run.model_dump(), thread_keys(kv, thread, run_id, run.continued_by_run_id or "")


def test_a_worker_paused_past_its_lease_changes_nothing_when_it_wakes(
    env: dict[str, str],
    tmp_path: Path,
    redis_client: redis.Redis,
    redis_url: str,
    procs: Procs,
    zombies: list[subprocess.Popen[bytes]],
) -> None:
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))
    runs = pause_mid_step(client, redis_client, tmp_path, zombies)
    wait_for(
        lambda: not any(redis_client.exists(keys.lease(case, run_id)) for case, run_id in runs.items()),
        timeout_s=5,
        what="the paused workers' leases to lapse",
    )
    for run_id in runs.values():
        take_over(redis_client, settings, client, run_id)
    (tmp_path / "go").touch()
    successor = procs.start("worker", "--burst", env=env)
    assert successor.wait(30) == 0, procs.logged(successor)
    for case, run_id in runs.items():
        done = client.get_run(run_id)
        assert (done.status, done.result) == (
            RunStatus.COMPLETED,
            {**CASES[case][0], "done": CASES[case][2]},
        ), case
    wake_and_check_refused(client, redis_client, zombies, runs)
    assert [line_count(tmp_path / f"{n}.log") for n in TASKS] == [2, 2, 1, 2, 2]  # solo, slow, fast, ...
    log = "".join(procs.logged(proc) for proc in zombies)
    assert log.count("refused: this worker no longer holds the step's lease") == len(CASES), log
    assert all(proc.poll() is None for proc in zombies)  # the zombies live on, and take new work


def test_every_write_of_a_step_job_is_refused_without_the_lease(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """Each write a step job makes, called while another worker holds the lease: refused, nothing written,
    each refusal counted in the run hash and in the process (graphq.worker.step.fence.REFUSED)."""
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))
    run_id = client.enqueue("zombie", {"names": ["a"]}, thread_id="w")
    run = client.get_run(run_id)
    run.preset_answers = {"0:0": "yes"}
    ctx = WorkerContext.build(redis_client, settings, REGISTRY)
    lease = Lease(redis_client, "w", run_id, 30, 10)
    redis_client.set(lease.key, "another-worker")
    cp = apply_input(REGISTRY.get("zombie"), None, {"names": ["a"]}, {"run_id": run_id})
    attempt = StepAttempt(ctx, run, lease, None)
    attempt.cp = cp
    before = REFUSED.counts()
    writes = [
        lambda: attempt.put_writes(TaskWrites(task_id="t", node="hold", writes=[])),
        lambda: seed_answers(attempt, cp),
        lambda: attempt.hset("requests", (keys.requests("w", run_id), {"r": b"x"})),
        lambda: attempt.hset("head", (keys.run("w", run_id), {"head": cp.id})),
        lambda: _mark_running(attempt, REGISTRY.get("zombie").config_for({})),
    ]
    for write in writes:
        with pytest.raises(LeaseLostError, match="refused: the lease is no longer held"):
            write()
    end(attempt, RunStatus.FAILED, RunError(type="X", message="late"))  # refused, not raised
    events = redis_client.xlen(keys.run_events("w", run_id))
    for chunk in ("one", "two"):  # a node's stream writes: refused, the node goes on
        attempt.event("custom", 0, {"node": "hold", "chunk": chunk})
    assert redis_client.xlen(keys.run_events("w", run_id)) == events
    assert refusals(redis_client, "w", run_id) == {
        b"refused:pending": b"1",
        b"refused:answers": b"1",
        b"refused:requests": b"1",
        b"refused:head": b"1",
        b"refused:status": b"2",
        b"refused:events": b"2",
    }
    after = REFUSED.counts()
    assert {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)} == {
        "pending": 1,
        "answers": 1,
        "requests": 1,
        "head": 1,
        "status": 2,
        "events": 2,
    }
    record = client.get_run(run_id)
    assert (record.status, record.head, record.error) == (RunStatus.QUEUED, None, None)
    assert redis_client.exists(keys.pending_writes("w", "", cp.id), keys.answers("w", "", cp.id)) == 0
    assert redis_client.exists(keys.requests("w", run_id)) == 0
    assert redis_client.get(lease.key) == b"another-worker"


def test_zombies_of_runs_the_reaper_continued_change_nothing(
    env: dict[str, str],
    tmp_path: Path,
    redis_client: redis.Redis,
    redis_url: str,
    procs: Procs,
    zombies: list[subprocess.Popen[bytes]],
) -> None:
    """The same paused workers, their steps found by the reaper of another worker (R18): each run is
    closed failed (WorkerLost) and continued (R14); the continuations complete; the woken zombies' writes to
    the runs they held are refused and counted, and change neither those runs nor the thread's history."""
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))
    runs = pause_mid_step(client, redis_client, tmp_path, zombies)
    (tmp_path / "go").touch()
    procs.start("worker", env=env, GRAPHQ_REAPER_INTERVAL_S="0.3")

    def continued(case: str) -> bool:
        record = client.get_run(runs[case])
        if record.continued_by_run_id is None:
            return False
        return client.get_run(record.continued_by_run_id).status == RunStatus.COMPLETED

    wait_for(lambda: all(continued(c) for c in CASES), timeout_s=20, what="the continuations to end")
    for case, run_id in runs.items():
        lost = client.get_run(run_id)
        assert (lost.status, lost.error is not None and lost.error.type) == (RunStatus.FAILED, "WorkerLost")
        successor_run = client.get_run(lost.continued_by_run_id or "")
        assert (successor_run.continued_from_run_id, successor_run.result) == (
            run_id,
            {**CASES[case][0], "done": CASES[case][2]},
        ), case
    wake_and_check_refused(client, redis_client, zombies, runs)
