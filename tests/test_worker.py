"""The RQ step job on a real Redis, statuses, history, fencing, recovery (R1-R4, I1, I2)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis

import graphq.worker.step.handover
import graphq.worker.step.job
from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunError, RunStatus, now_iso
from graphcore.engine.algo import apply_writes, prepare_tasks
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError, LeaseLostError
from graphcore.settings import Settings
from graphcore.types import TaskWrites
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.claim import CANCEL_ERROR_JSON
from graphq.worker.step.committing import commit_step
from graphq.worker.step.context import WorkerContext, get_context, set_context
from graphq.worker.step.fence import refused
from graphq.worker.step.handover import Stop, abandon
from graphq.worker.step.job import step_job
from graphq.worker.step.lease import Lease
from tests.workflows import recovery

REGISTRY = Registry.load(["tests.workflows.basic", "tests.workflows.recovery"])


def work(redis_client: redis.Redis, redis_url: str) -> None:
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)


def test_counter_completes_with_one_checkpoint_per_super_step(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    run_id = client.enqueue("counter", {"limit": 4})
    assert client.get_run(run_id).status == RunStatus.QUEUED
    work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.step == 4
    assert run.result == {"limit": 4, "n": 4, "log": ["bump1", "bump2", "bump3", "bump4"]}
    history = client.get_history(run.thread_id)
    assert [(c.step, c.source) for c in history] == [
        (4, "loop"),
        (3, "loop"),
        (2, "loop"),
        (1, "loop"),
        (0, "loop"),
        (-1, "input"),
    ]
    assert [c.next_tasks[0].node for c in history[-2:]] == ["bump", "__start__"]
    assert run.head == history[0].id
    assert run.started_at is not None and run.ended_at is not None


def test_events_stream_records_statuses_updates_and_values(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    run_id = client.enqueue("counter", {"limit": 2})
    work(redis_client, redis_url)
    run = client.get_run(run_id)
    events = list(read_events(redis_client, run.thread_id, run_id))
    modes = [(e.mode, e.step) for e in events]
    assert modes == [
        ("status", 1),
        ("values", 0),
        ("updates", 1),
        ("values", 1),
        ("updates", 2),
        ("values", 2),
        ("status", 2),
    ]
    assert events[2].data == {"bump": {"n": 1, "log": ["bump1"]}}
    assert events[-1].data == {"status": "completed"}


def test_fan_out_and_join_on_the_queue(client: Client, redis_client: Any, redis_url: str) -> None:
    run_id = client.enqueue("fanout", {"items": [1, 2, 3, 4]})
    work(redis_client, redis_url)
    assert client.get_run(run_id).result == {"items": [1, 2, 3, 4], "squares": [1, 4, 9, 16], "total": 30}


def test_failing_node_keeps_earlier_checkpoints(client: Client, redis_client: Any, redis_url: str) -> None:
    run_id = client.enqueue("failing", {})
    work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "NodeError"
    assert run.error.message == "node 'explode' raised RuntimeError: kaboom at node explode"
    assert "RuntimeError: kaboom" in run.error.traceback
    history = client.get_history(run.thread_id)
    assert [(c.step, c.channel_values) for c in history] == [(1, {"n": 1}), (0, {}), (-1, {})]


def test_unserialisable_value_fails_naming_state_path(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    run_id = client.enqueue("unserialisable", {})
    work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert run.error.message.startswith("node 'unserialisable' wrote state.bad.inner[1]: type 'object'")


def test_step_limit_fails_naming_the_setting(client: Client, redis_client: Any, redis_url: str) -> None:
    exact = client.enqueue("counter", {"limit": 5}, config={"max_super_steps": 5})
    over = client.enqueue("counter", {"limit": 6}, config={"max_super_steps": 5})
    work(redis_client, redis_url)
    assert client.get_run(exact).status == RunStatus.COMPLETED
    failed = client.get_run(over)
    assert failed.status == RunStatus.FAILED
    assert failed.error is not None and "max_super_steps=5" in failed.error.message
    assert failed.step == 5


def test_duplicate_step_job_is_a_no_op(client: Client, redis_client: Any, redis_url: str) -> None:
    run_id = client.enqueue("counter", {"limit": 1})
    work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert step_job(run_id, run.thread_id, 0) == "skipped: run is completed at step 1"
    assert len(client.get_history(run.thread_id)) == 3


def test_a_duplicate_job_leaves_a_cancel_to_the_worker_that_holds_the_step(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    """A cancel requested while a step runs, then a duplicate job of that step (a lost job queued again, RQ's
    abandoned-job handling): its claim, without the lease, writes nothing (I1) — the run stays Running and
    keeps its thread, its events unchanged — and the cancel ends the run at a claim that holds the lease."""
    run_id = client.enqueue("counter", {"limit": 3}, thread_id="dup")
    run = client.get_run(run_id)
    holder = Lease(redis_client, "dup", run_id, 30, 10)
    assert holder.claim(0, now_iso(), CANCEL_ERROR_JSON)[0] == 3
    assert client.runs.set_status(run, RunStatus.RUNNING, fence=(holder.key, holder.token))
    assert client.cancel(run_id) == "cancel requested: the run stops before its next super-step"
    events = redis_client.xlen(keys.run_events("dup", run_id))
    set_context(WorkerContext.build(redis_client, Settings(redis_url=redis_url), REGISTRY))
    assert step_job(run_id, "dup", 0) == "skipped: another worker holds the lease"
    after = client.get_run(run_id)
    assert (after.status, after.error, after.ended_at) == (RunStatus.RUNNING, None, None)
    assert redis_client.xlen(keys.run_events("dup", run_id)) == events
    assert redis_client.get(keys.thread_active("dup")) == run_id.encode()
    assert redis_client.get(holder.key) == holder.token.encode()
    holder.release()
    assert step_job(run_id, "dup", 0) == "canceled before the step"
    assert client.get_run(run_id).status == RunStatus.CANCELED


def test_a_given_up_step_closed_again_after_a_lost_reply_hands_the_thread_over(
    client: Client, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The close of a step given up (a drain, a deadline: graphq.worker.step.handover.abandon) whose reply an
    outage swallowed, retried: the close counts as made (abandon_step.lua finds its own status, end and
    error), so the thread goes on to its next run at once, not when the reaper looks at busy threads (a lease
    TTL later)."""
    first = client.enqueue("counter", {"limit": 3}, thread_id="given-up")
    second = client.enqueue("counter", {"limit": 1}, thread_id="given-up")  # waits for the thread (I3)
    lease = Lease(redis_client, "given-up", first, 30, 10)
    assert lease.claim(0, now_iso(), CANCEL_ERROR_JSON)[0] == 3
    close = graphq.worker.step.handover.script(redis_client, "abandon_step")
    lost: list[bool] = []

    def reply_lost(**call: Any) -> Any:
        reply = close(**call)
        if not lost:
            lost.append(True)
            raise redis.ConnectionError("the reply was lost")
        return reply

    monkeypatch.setattr(graphq.worker.step.handover, "script", lambda kv, name: reply_lost)
    stop = Stop(RunStatus.FAILED, RunError(type="NodeTimeoutError", message="node 'bump' timed out"))
    assert abandon(redis_client, Settings(), "given-up", first, lease.token, stop, 0) is True
    run = client.get_run(first)
    assert (lost, run.status, run.error) == ([True], RunStatus.FAILED, stop.error)
    assert redis_client.get(keys.thread_active("given-up")) == second.encode()
    statuses = [e.data["status"] for e in read_events(redis_client, "given-up", first) if e.mode == "status"]
    assert statuses == ["failed"]


def test_late_commit_without_the_lease_is_rejected(client: Client, redis_client: Any, redis_url: str) -> None:
    run_id = client.enqueue("counter", {"limit": 3})
    work(redis_client, redis_url)  # sets up the worker context; the run completes
    ctx = get_context()
    run = client.get_run(run_id)
    run.status, run.step = RunStatus.RUNNING, 1
    redis_client.hset(keys.run(run.thread_id, run_id), mapping={"status": "running", "step": "1"})
    lease = Lease(redis_client, run.thread_id, run_id, 30, 10)
    assert lease.acquire()
    redis_client.set(lease.key, "someone-else")
    head = client.get_state(run.thread_id)
    late = apply_writes(REGISTRY.get("counter"), head, [], {"run_id": run_id})
    before = len(client.get_history(run.thread_id))
    attempt = StepAttempt(ctx, run, lease, None)
    attempt.cp = head
    with lease, pytest.raises(LeaseLostError, match=r"commit of run \w+ step 1 refused: the lease is no"):
        commit_step(attempt, REGISTRY.get("counter"), late, [], False)
    assert len(client.get_history(run.thread_id)) == before
    assert redis_client.hget(keys.run(run.thread_id, run_id), "step") == b"1"
    assert redis_client.hget(keys.run(run.thread_id, run_id), "refused:commit") == b"1"


def test_finished_tasks_are_not_run_again(client: Client, redis_client: Any, redis_url: str) -> None:
    """I2: a re-executed step skips tasks whose writes were persisted by the earlier attempt."""
    recovery.CALLS.clear()
    run_id = client.enqueue("recovery", {"names": ["a", "b", "c"]})
    run = client.get_run(run_id)
    # First attempt: apply the input (as step 0 does), then "crash" after task 'b' persisted its writes.
    graph = REGISTRY.get("recovery")
    from graphcore.engine.algo import apply_input

    cp = apply_input(graph, None, {"names": ["a", "b", "c"]}, {"run_id": run_id})
    store = client.checkpoints
    store.put(run.thread_id, cp)
    redis_client.hset(keys.run(run.thread_id, run_id), "head", cp.id)
    task_b = prepare_tasks(graph, cp)[1]
    lease = Lease(redis_client, run.thread_id, run_id, 30, 10)
    assert lease.acquire()
    ctx = WorkerContext.build(redis_client, Settings(redis_url=redis_url), REGISTRY)
    attempt = StepAttempt(ctx, run, lease, None)
    attempt.cp = cp
    attempt.put_writes(TaskWrites(task_b.id, "work", [("done", ["B-from-first-attempt"])], []))
    redis_client.delete(lease.key)  # the first worker died: its lease lapsed
    work(redis_client, redis_url)
    final = client.get_run(run_id)
    assert final.status == RunStatus.COMPLETED
    assert dict(recovery.CALLS) == {"a": 1, "c": 1}
    assert final.result is not None and final.result["done"] == ["A", "B-from-first-attempt", "C"]
    # Dropped with the commit (in the checkpoint now): a queued thread keeps no committed step's task writes.
    assert redis_client.exists(keys.pending_writes(run.thread_id, "", cp.id)) == 0
    assert redis_client.hget(keys.run(run.thread_id, run_id), "partial") is None


def test_worker_without_the_workflow_leaves_the_run_alone(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    """One queue per workflow: a worker never takes a run whose workflow it lacks; the run waits for one."""
    run_id = client.enqueue("counter", {"limit": 1})
    other = Registry.load(["tests.workflows.recovery"])
    run_worker(Settings(redis_url=redis_url), burst=True, registry=other, kv=redis_client)
    assert client.get_run(run_id).status == RunStatus.QUEUED
    assert client.get_history(client.get_run(run_id).thread_id) == []
    assert redis_client.lrange("rq:queue:graphq:counter", 0, -1) == [f"graphq-{run_id}-0".encode()]
    work(redis_client, redis_url)
    assert client.get_run(run_id).status == RunStatus.COMPLETED


def test_input_the_schema_does_not_accept_is_refused_before_any_write(
    client: Client, redis_client: Any
) -> None:
    from graphcore.errors import InvalidUpdateError

    with pytest.raises(InvalidUpdateError, match=r"unknown state key\(s\) \['limt'\]"):
        client.enqueue_many([])  # an empty batch is fine and writes nothing
        client.enqueue("counter", {"limt": 3})
    assert client.list_runs() == []
    assert redis_client.dbsize() == 0


def test_node_retries_are_recorded_in_the_run_events(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    from tests.workflows import basic

    basic.FLAKES["calls"] = 0
    run_id = client.enqueue("retrying", {})
    work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result == {"n": 3}
    retries = [e.data for e in read_events(redis_client, run.thread_id, run_id) if e.mode == "retry"]
    assert retries == [
        {
            "node": "flaky_call",
            "attempt": 1,
            "error": "ConnectionError: upstream unavailable (call 1)",
            "wait_s": 0.01,
        },
        {
            "node": "flaky_call",
            "attempt": 2,
            "error": "ConnectionError: upstream unavailable (call 2)",
            "wait_s": 0.02,
        },
    ]


def test_a_refused_commit_is_logged_once(
    client: Client,
    redis_client: Any,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A write refused by the fence is logged where it is refused (graphq.worker.step.fence), not again by
    step_job."""
    run_id = client.enqueue("counter", {"limit": 1})

    def zombie(*_: Any) -> str:
        raise refused("commit", run_id, 0, "the commit")

    monkeypatch.setattr(graphq.worker.step.job, "_run_through_outages", zombie)
    with caplog.at_level(logging.WARNING):
        work(redis_client, redis_url)
    warnings = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(f"run {run_id} step 0: the commit refused")


def test_a_runs_end_is_logged_with_the_threads_step_number(
    client: Client, redis_client: redis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Step numbers are the thread's everywhere (docs): a second run on a thread was logged as failed "at
    step 1" (its own count); its failed step is the thread's step 5 (input -1, input applied 0, ok 1, explode
    2 failed; input 2, input applied 3, ok 4, explode 5)."""
    first = client.enqueue("failing", {}, thread_id="t-ends")
    work(redis_client, redis_url)
    second = client.enqueue("failing", {"n": 5}, thread_id="t-ends")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="graphq.runs"):
        work(redis_client, redis_url)
    assert [client.get_run(r).status for r in (first, second)] == [RunStatus.FAILED, RunStatus.FAILED]
    assert client.get_run(second).step == 1
    assert [r.getMessage() for r in caplog.records if r.name == "graphq.runs"] == [
        f"run {second} failed at step 5: node 'explode' raised RuntimeError: kaboom at node explode"
    ]


def test_a_checkpoint_of_another_workflow_is_refused_with_its_nodes(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """A run of ``counter`` on a thread whose latest checkpoint is ``failing``'s (next task ``explode``):
    a fork there is refused at enqueue; a run continuing it fails naming the nodes. The worker failed it
    with a bare KeyError ('explode') from deep inside the step job (from a new-user trial)."""
    failed = client.enqueue("failing", {}, thread_id="t-mixed")
    work(redis_client, redis_url)
    head = client.get_run(failed).head
    assert client.get_state("t-mixed").next_tasks[0].node == "explode"
    message = (
        f"checkpoint {head} of thread 't-mixed': its next tasks run nodes ['explode'] that workflow "
        "'counter' does not have (a checkpoint of another workflow)"
    )
    with pytest.raises(InvalidUpdateError) as refused_fork:
        client.enqueue("counter", None, thread_id="t-mixed", config={"checkpoint_id": head})
    assert str(refused_fork.value) == message
    continued = client.enqueue("counter", None, thread_id="t-mixed")
    work(redis_client, redis_url)
    run = client.get_run(continued)
    assert (run.status, run.error and run.error.type, run.error and run.error.message) == (
        RunStatus.FAILED,
        "InvalidUpdateError",
        message,
    )
