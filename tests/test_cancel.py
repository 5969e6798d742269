"""Cancellation on the queue with a worker in a subprocess (X1-X4, I6, C7)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import CancelReply, Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import wait_for as wait_until
from tests.workers import worker_env
from tests.workflows.hitl import SLOW_TICKS

REGISTRY = Registry.load(["tests.workflows.hitl"])


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.hitl", tmp_path)


def wait_for(client: Client, run_id: str, status: RunStatus, timeout_s: float = 15) -> float:
    start = time.monotonic()
    while client.get_run(run_id).status != status:
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"run {run_id} is {client.get_run(run_id).status}, not {status}")
        time.sleep(0.05)
    return time.monotonic() - start


def test_cancel_a_queued_run_and_a_completed_one(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("looping", {"until": 1})
    assert client.try_cancel(run_id) == CancelReply("canceled", changed=True)
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    assert run.error is not None and (run.error.type, run.error.message) == (
        "Canceled",
        "canceled by request",
    )
    assert client.try_cancel(run_id) == CancelReply(
        f"run {run_id} is already canceled; nothing changed", False
    )
    assert client.cancel(run_id) == f"run {run_id} is already canceled; nothing changed"
    assert type(client.cancel(run_id)) is str  # a node may keep it in its state (serde takes no str subclass)


def holding_a_later_step(client: Client, redis_client: redis.Redis, run_id: str, lease_key: str) -> bool:
    """Two steps of ``run_id`` committed and a worker holding a later one (a step's commit frees the lease
    until the next job claims it)."""
    leased = redis_client.exists(lease_key)
    return client.get_run(run_id).step >= 2 and bool(leased)


def cancel_a_held_step(client: Client, redis_client: redis.Redis, attempts: int = 5) -> str:
    """Enqueue ``slow-loop`` and cancel it while a worker holds its third step or a later one; returns the
    run's id. Seeing the lease and cancelling are two calls: on a loaded machine the step may commit, freeing
    the lease, in between, and the cancel then ends the run at once ("canceled"); a new run is tried then."""
    replies = []
    for _ in range(attempts):
        run_id = client.enqueue("slow-loop", {})
        wait_for(client, run_id, RunStatus.RUNNING)
        held = keys.lease(client.get_run(run_id).thread_id, run_id)
        wait_until(
            lambda run_id=run_id, held=held: holding_a_later_step(client, redis_client, run_id, held),
            30,
            "two committed steps and a worker holding the next",
        )
        replies.append(client.cancel(run_id))
        if replies[-1] == "cancel requested: the run stops before its next super-step":
            return run_id
    raise AssertionError(f"no cancel reached a held step in {attempts} runs: {replies}")


def test_cooperative_cancel_stops_before_the_next_step_and_keeps_checkpoints(
    client: Client, worker: subprocess.Popen[bytes], redis_client: redis.Redis
) -> None:
    run_id = cancel_a_held_step(client, redis_client)
    wait_for(client, run_id, RunStatus.CANCELED, timeout_s=20)
    run = client.get_run(run_id)
    history = client.get_history(run.thread_id)
    assert (
        len(history) == run.step + 2 >= 4
    )  # every committed step kept, the input checkpoint and its input applied
    ticks = history[0].channel_values["ticks"]
    assert ticks == list(range(1, run.step + 1))
    assert client.cancel(run_id) == f"run {run_id} is already canceled; nothing changed"
    # X4: the thread continues from its last checkpoint in a new run.
    again = client.resume(run_id)
    wait_for(client, again, RunStatus.COMPLETED, timeout_s=90)  # SLOW_TICKS steps of 0.3 s
    assert client.get_run(again).result == {"ticks": list(range(1, SLOW_TICKS + 1))}


def test_interrupting_cancel_reaches_the_running_node(
    client: Client, worker: subprocess.Popen[bytes], redis_client: redis.Redis, tmp_path: Path
) -> None:
    """The node waits 30 s on its cancel token: the run is canceled long before (the keeper looks every
    0.5 s)."""
    run_id = client.enqueue("patient", {})
    wait_until(lambda: (tmp_path / "patient.log").exists(), what="the node to wait on its token")
    client.cancel(run_id, interrupt=True)
    wait_for(client, run_id, RunStatus.CANCELED, timeout_s=15)
    run = client.get_run(run_id)
    assert run.error is not None and run.error.message == "canceled by request; running nodes were signalled"
    assert [c.step for c in client.get_history(run.thread_id)] == [0, -1]
    statuses = [
        e.data["status"] for e in read_events(redis_client, run.thread_id, run_id) if e.mode == "status"
    ]
    assert statuses == ["running", "canceled"]
