"""A node that raises ``SystemExit``, ``KeyboardInterrupt`` or ``asyncio.CancelledError`` fails its run like
any node error, on a real `graphq worker`: the run ends Failed naming the exception and the
node, its admission slot is freed, the worker process takes the next run, `graphq enqueue --wait` returns
and `graphq run` prints one error line. A signal that stops a worker at once is not taken for the node's.
(In process, such an exception reaches the caller as itself, as LangGraph's: tests/compat/test_run_errors.py.)
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from graphcore.backend import admission
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue
from tests.workers import ROOT, Start, ended, graphq, wait_for, worker_env

FLOWS = "tests.workflows.run_errors"
REGISTRY = Registry.load([FLOWS])

RAISING = {
    "exits": "NodeError: node 'bail' raised SystemExit: 3",
    "interrupts": "NodeError: node 'bail' raised KeyboardInterrupt: from the node",
    "cancels": "NodeError: node 'bail' raised CancelledError: from the node",
    "async-exits": "NodeError: node 'bail' raised SystemExit: 3",
    "async-interrupts": "NodeError: node 'bail' raised KeyboardInterrupt: from the node",
    "async-cancels": "NodeError: node 'bail' raised CancelledError: from the node",
}
"""Workflow → the run's error (``type: message``): its node ``bail`` raises the exception."""


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, FLOWS, tmp_path, GRAPHQ_MAX_CONCURRENT_RUNS="1")


def one_slot(kv: redis.Redis, url: str) -> Client:
    """A client whose runs take one admission slot of one (GRAPHQ_MAX_CONCURRENT_RUNS=1)."""
    return Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url, max_concurrent_runs=1)))


def ran(tmp_path: Path) -> list[str]:
    """``node pid`` of each node run, in order (tests.workflows.run_errors._log)."""
    path = tmp_path / "ran.log"
    return path.read_text().splitlines() if path.exists() else []


def test_each_run_fails_naming_the_node_and_one_worker_process_takes_the_next(
    redis_client: redis.Redis, redis_url: str, start: Start, tmp_path: Path
) -> None:
    """Six runs whose node raises, then one that completes, on one worker process with one admission slot:
    each fails with its error and frees the slot for the next (which could not start otherwise), all in the
    same process, which is still there."""
    client = one_slot(redis_client, redis_url)
    worker = start()
    ids = [client.enqueue(name, {}) for name in RAISING] + [client.enqueue("fine", {})]
    runs = [ended(client, run_id, timeout_s=60) for run_id in ids]
    assert [(r.status, r.error and f"{r.error.type}: {r.error.message}") for r in runs] == [
        *((RunStatus.FAILED, error) for error in RAISING.values()),
        (RunStatus.COMPLETED, None),
    ]
    assert [(r.error.node, r.error.step) for r in runs[:-1] if r.error] == [("bail", 1)] * len(RAISING)
    pids = {line.split()[1] for line in ran(tmp_path)}
    assert len(ran(tmp_path)) == len(RAISING) and len(pids) == 1  # ("bail <pid>"; fine's node logs none)
    assert len({r.worker for r in runs}) == 1
    assert worker.poll() is None
    # The last run's slot goes back just after its completing commit, which its status already shows.
    freed = wait_for(lambda: _slots(redis_client) in ([], [(0, 0)]), 30, "the last run's slot to go back")
    assert freed and _slots(redis_client) in ([], [(0, 0)])


def _slots(kv: redis.Redis) -> list[tuple[int, int]]:
    """``(running, queued)`` of each tenant with admission records."""
    return [(t.running, t.queued) for t in admission.tenants(kv, 0)]


def test_enqueue_wait_returns_with_the_error(env: dict[str, str], start: Start) -> None:
    """`graphq enqueue --wait` of a run whose node exits returns (exit 1), naming the error and its step."""
    start()
    done = graphq("enqueue", "exits", "--wait", env=env, timeout=60)
    assert done.returncode == 1, done.stderr
    run_id = done.stdout.strip()
    assert done.stderr == (
        f"run {run_id} (exits) failed at step 1: NodeError: node 'bail' raised SystemExit: 3\n"
        "error: 1 of 1 runs did not complete\n"
    )


def test_graphq_run_prints_one_error_line(env: dict[str, str]) -> None:
    """`graphq run` of a run whose node exits: exit 1, one error line, no RQ traceback."""
    done = graphq("run", "exits", env=env, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].endswith(" failed at step 1: NodeError: node 'bail' raised SystemExit: 3")


_IN_PROCESS = "from graphq.worker.process.rq_worker import run_worker; run_worker()"
"""A worker in this process, with RQ's own signal handlers (as a program embedding graphq runs one)."""


def test_a_cold_stop_inside_a_node_leaves_the_run_to_crash_recovery(
    client: Client, env: dict[str, str], tmp_path: Path
) -> None:
    """A worker run in process (RQ's handlers) stopped at once by a second Ctrl-C while its node runs in
    its main thread: the SystemExit RQ raises there is the worker's, not the node's. The run is not failed;
    its lease is not given back but lapses, so it is listed stuck and a reaper acts on it (it was left
    Running, with no lease, for ever)."""
    run_id = client.enqueue("napping", {})
    short_lease = {"GRAPHQ_LEASE_TTL_S": "1", "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.3"}
    worker = subprocess.Popen([sys.executable, "-c", _IN_PROCESS], env={**env, **short_lease}, cwd=ROOT)
    try:
        wait_for(lambda: ran(tmp_path), 60, "the node to start")

        def interrupted() -> bool:  # RQ takes a second signal within 1 s of the first for the same one
            if worker.poll() is None:
                worker.send_signal(signal.SIGINT)
            return worker.poll() is not None

        wait_for(interrupted, 60, "the worker to stop")
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait(10)
    run = client.get_run(run_id)
    assert (run.status, run.error) == (RunStatus.RUNNING, None)
    stuck = wait_for(lambda: client.stuck_runs(), 30, "its lease to lapse")
    assert [r.id for r, _ in stuck] == [run_id]
