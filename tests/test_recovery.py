"""Crash recovery from the queue (R14, R18) with real `graphq worker` subprocesses and SIGKILL:
the reaper finds the dead worker's lapsed lease and continues the run (or starts it again), within
GRAPHQ_LEASE_TTL_S + GRAPHQ_REAPER_INTERVAL_S; short settings keep these tests fast."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq import Queue, Worker
from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.workers import live_workers
from graphcore.engine.registry import Registry
from graphq.worker.queue import RQStepQueue
from tests.workers import Procs, graphq, wait_for
from tests.workflows.crash import FLAGS, REAPER_S, TTL_S, crash_env, executions

REGISTRY = Registry.load(["tests.workflows.crash"])
BOUND_S = TTL_S + REAPER_S
SLACK_S = 10.0
"""Scheduling slack on a busy machine, on top of the bound: BOUND_S + SLACK_S (12.3 s) stays well below the
default settings' 25 s (a recovery that ignored the short ones) and the 60 s node of ``longnode``."""


@pytest.fixture
def procs(redis_url: str, tmp_path: Path) -> Iterator[Procs]:
    with Procs(tmp_path, crash_env(redis_url)) as started:
        yield started


def continued(client: Client, run_id: str) -> RunRecord | None:
    run = client.get_run(run_id)
    return client.get_run(run.continued_by_run_id) if run.continued_by_run_id else None


def test_sigkill_mid_step_is_continued_from_the_latest_checkpoint(
    client: Client, redis_client: redis.Redis, procs: Procs, tmp_path: Path
) -> None:
    """A step of three parallel tasks, one finished (its writes persisted), two running: SIGKILL the worker.
    The reaper (in the other worker) continues the run within the bound; the continuation names its
    predecessor, skips the finished task, and ends with the right state; each step is committed once."""
    run_id = client.enqueue("crashfan", {"names": ["fast", "slow-a", "slow-b"]})
    thread = client.get_run(run_id).thread_id
    procs.start("worker")
    procs.start("worker")
    wait_for(
        lambda: executions(redis_client) == {"prepare": 1, "fast": 1, "slow-a": 1, "slow-b": 1},
        timeout_s=30,
        what="tasks",
    )
    head = client.get_run(run_id).head or ""
    wait_for(
        lambda: redis_client.hlen(keys.pending_writes(thread, "", head)) == 1,
        timeout_s=30,
        what="fast's writes",
    )
    crashed = client.get_run(run_id)
    assert (crashed.status, crashed.step, crashed.worker is not None) == (RunStatus.RUNNING, 1, True)
    victim = procs.holding(crashed.worker or "")
    killed = time.monotonic()
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(10)
    redis_client.hset(FLAGS, "go", "1")
    successor = wait_for(
        lambda: continued(client, run_id), timeout_s=BOUND_S + SLACK_S + 10, what="the continuation"
    )
    assert time.monotonic() - killed <= BOUND_S + SLACK_S
    [final] = client.wait([run_id], timeout_s=30)
    assert final.id == successor.id
    old = client.get_run(run_id)
    assert (old.status, old.continued_by_run_id) == (RunStatus.FAILED, successor.id)
    assert old.error is not None and old.error.type == "WorkerLost"
    assert old.error.message.startswith(f"worker {crashed.worker} stopped renewing its lease on step 2; ")
    assert (final.status, final.continued_from_run_id, final.attempt) == (RunStatus.COMPLETED, run_id, 2)
    assert final.worker not in (None, crashed.worker)
    assert final.result == {
        "names": ["fast", "slow-a", "slow-b"],
        "prepared": True,
        "done": ["fast", "slow-a", "slow-b"],
        "joined": 3,
    }
    assert executions(redis_client) == {"prepare": 1, "fast": 1, "slow-a": 2, "slow-b": 2, "join": 1}
    history = client.get_history(thread)
    assert [c.step for c in history] == [3, 2, 1, 0, -1]
    assert len({c.id for c in history}) == 5
    assert [r.id for r in client.chain(successor.id)] == [run_id, successor.id]


@pytest.mark.parametrize("attempts", [0, 1, pytest.param(2, marks=pytest.mark.chaos)])  # 2: make chaos
def test_max_resume_attempts_bounds_the_chain(
    client: Client, redis_client: redis.Redis, redis_url: str, tmp_path: Path, attempts: int
) -> None:
    """A node that kills its own worker every time: chains of 1, 2 and 3 runs (3: make chaos); the last
    stays failed naming the setting; `enqueue --wait` follows the chain, exits 1 and reports the chain's
    last run."""
    env = crash_env(redis_url, GRAPHQ_MAX_RESUME_ATTEMPTS=str(attempts))
    with Procs(tmp_path, env) as procs:
        procs.start("reaper")
        procs.keep_one_worker()
        done = graphq("enqueue", "suicide", "--input", "{}", "--wait", env=env, timeout=60)
    first = done.stdout.splitlines()[0]
    chain = client.chain(first)
    assert [r.attempt for r in chain] == list(range(1, attempts + 2))
    assert [r.status for r in chain] == [RunStatus.FAILED] * (attempts + 1)
    assert [r.continued_from_run_id for r in chain] == [None] + [r.id for r in chain[:-1]]
    last = chain[-1]
    assert last.error is not None and last.error.type == "WorkerLost"
    assert last.error.message.endswith(
        f"; not continued: the chain reached GRAPHQ_MAX_RESUME_ATTEMPTS={attempts} (attempt {attempts + 1})"
    )
    assert done.returncode == 1, done.stderr
    chain_note = f", attempt {attempts + 1} of its chain, continues {chain[-2].id}" if attempts else ""
    assert f"run {last.id} (suicide{chain_note}) failed at step 2: WorkerLost: " in done.stderr
    assert executions(redis_client) == {"first": 1, "doom": attempts + 1}


def test_resume_off_starts_the_run_again_from_its_input(
    client: Client, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    run_id = client.enqueue("crashonce", {"n": 1})
    with Procs(tmp_path, crash_env(redis_url, GRAPHQ_RESUME_INTERRUPTED_RUNS="false")) as procs:
        procs.keep_one_worker()
        [final] = client.wait([run_id], timeout_s=30)
    assert (final.id, final.status, final.attempt) == (run_id, RunStatus.COMPLETED, 2)
    assert final.continued_by_run_id is None and final.continued_from_run_id is None
    assert final.interrupted is not None and final.interrupted.type == "WorkerLost"
    assert final.interrupted.message.startswith("worker ") and " stopped renewing its lease on step 2; " in (
        final.interrupted.message
    )
    assert final.result == {"n": 1, "trail": ["first", "doom"]}
    assert executions(redis_client) == {"first": 2, "doom": 2}
    history = client.get_history(final.thread_id)
    assert [c.step for c in history] == [2, 1, 0, -1, 1, 0, -1]  # the first attempt's checkpoints stay
    assert [len(client.chain(run_id))] == [1]


def in_rq(kv: redis.Redis, queue: str, job_id: str) -> bool:
    """Whether RQ knows the job as queued, being dequeued (RQ's intermediate queue), started or finished."""
    rq_queue = Queue(queue, connection=kv)
    for key in (rq_queue.key, rq_queue.intermediate_queue_key):
        if job_id.encode() in kv.lrange(key, 0, -1):
            return True
    return any(
        job_id in reg(queue, connection=kv).get_job_ids() for reg in (StartedJobRegistry, FinishedJobRegistry)
    )


def test_b16_killed_worker_mid_job_leaves_no_lost_or_stuck_job(
    client: Client, redis_client: redis.Redis, procs: Procs, redis_url: str
) -> None:
    """A worker killed mid-step (R18; the failure of rq/rq#2015, #1164, #507): a step job running a 60 s
    node, SIGKILL its worker. The run is continued from its last committed checkpoint within the bound; no
    committed step runs again; the step job of the unfinished run is always known (to RQ, or staged by the
    reaper); no abandoned job stays in RQ's started (or failed) registry; the killed worker leaves `graphq
    workers` and RQ's registry."""
    run_id = client.enqueue("longnode", {})
    thread = client.get_run(run_id).thread_id
    procs.start("worker")
    procs.start("worker")
    wait_for(lambda: executions(redis_client).get("long") == 1, timeout_s=30, what="the long node to start")
    crashed = client.get_run(run_id)
    queue = RQStepQueue(redis_client).of(crashed).name  # its steps after the first: its version's queue
    job_id = f"graphq-{run_id}-1"
    assert job_id in StartedJobRegistry(queue, connection=redis_client).get_job_ids()

    def beating() -> bool:  # a worker's record shows the step it holds as of its next heartbeat
        now = server_ms(redis_client)
        return any(w.id == crashed.worker and w.run_id == run_id for w in live_workers(redis_client, now))

    wait_for(beating, timeout_s=20, what="the holder's heartbeat to name its step")
    shown = graphq("workers", "-o", "json", env=crash_env(redis_url), timeout=30)
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)
    assert len(listed) == 2
    holder = next(w for w in listed if w["id"] == crashed.worker)
    assert (holder["run_id"], holder["step"], queue in holder["queues"]) == (run_id, 1, True)
    assert holder["thread_step"] == 2  # the thread's: one more than the run's count (the input applied is 0)
    victim = procs.holding(crashed.worker or "")
    killed = time.monotonic()
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(10)

    def step_job_known() -> bool:
        chain = client.chain(run_id)
        last = chain[-1]
        if last.terminal:
            return last.status == RunStatus.COMPLETED
        staged = redis_client.zscore(keys.recovery(), keys.recovery_member("enqueue", thread, last.id))
        if staged is None:  # taken off its queue, not claimed yet: the index of unclaimed jobs has it
            staged = redis_client.zscore(keys.steps_index(), keys.step_member(thread, last.id, last.step))
        job = f"graphq-{last.id}-{last.step}"
        again = client.get_run(last.id)
        assert (
            staged is not None
            or in_rq(redis_client, queue, job)
            or (again.step, again.status)
            != (
                last.step,
                last.status,
            )
        ), f"step job {job} of unfinished run {last.id} is in no registry"
        return False

    seen: list[float] = []

    def continued_and_done() -> bool:
        if not seen and client.get_run(run_id).continued_by_run_id:
            seen.append(time.monotonic())
        return step_job_known()

    wait_for(continued_and_done, timeout_s=BOUND_S + SLACK_S + 20, what="the chain to complete")
    assert seen and seen[0] - killed <= BOUND_S + SLACK_S
    successor = continued(client, run_id)
    assert successor is not None and successor.status == RunStatus.COMPLETED
    assert successor.result == {"trail": ["first", "long"]}
    assert executions(redis_client) == {"first": 1, "long": 2}
    assert [c.step for c in client.get_history(thread)] == [2, 1, 0, -1]
    assert job_id not in StartedJobRegistry(queue, connection=redis_client).get_job_ids()
    assert job_id not in FailedJobRegistry(queue, connection=redis_client).get_job_ids()

    def gone() -> bool:
        names = {w.name for w in Worker.all(connection=redis_client)}
        live = client.kv.zrangebyscore(keys.workers(), "-inf", "+inf")
        return crashed.worker not in names and (crashed.worker or "").encode() not in live

    wait_for(gone, timeout_s=BOUND_S + SLACK_S, what="the killed worker to leave the registries")


def test_graphq_reaper_holds_the_lock_and_gives_it_back_on_sigterm(
    redis_client: redis.Redis, procs: Procs
) -> None:
    reaper = procs.start("reaper")
    token = wait_for(lambda: redis_client.get(keys.reaper_lock()), timeout_s=10, what="the reaper's lock")
    ttl_ms = redis_client.pttl(keys.reaper_lock())
    assert 0 < ttl_ms <= min(TTL_S, 2 * REAPER_S + 1) * 1000
    time.sleep(3 * REAPER_S)
    assert redis_client.get(keys.reaper_lock()) == token  # kept (compare-and-expire), not taken anew
    os.killpg(reaper.pid, signal.SIGTERM)
    assert reaper.wait(20) == 0
    assert redis_client.exists(keys.reaper_lock()) == 0


def test_a_worker_killed_while_the_handler_runs_leaves_the_node_done(
    client: Client, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Error handlers: on the queue the node's failure is saved, fenced by the lease, before its
    handler runs. The handler SIGKILLs its ``graphq worker`` on its first run; the run's continuation (the
    reaper's, on the restarted worker) runs only the handler, which gets the saved text. Before, the node
    ran again (``fails`` 2) and the handler got the exception (``KeyError``, ``'boom'``)."""
    run_id = client.enqueue("handlerkill", {})
    with Procs(tmp_path, crash_env(redis_url)) as procs:
        procs.keep_one_worker()
        [final] = client.wait([run_id], timeout_s=BOUND_S + SLACK_S + 30)
    assert (final.status, final.continued_from_run_id) == (RunStatus.COMPLETED, run_id)
    assert final.result == {"trail": ["first", "fails", "str", "KeyError('boom')"]}
    assert executions(redis_client) == {"first": 1, "fails": 1, "handler": 2}
