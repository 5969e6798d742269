"""Fault injection with real processes and signals: SIGKILL mid-step, a Redis that lost its scripts."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings, get_settings
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from tests.workers import Procs, line_count, wait_for, worker_env

REGISTRY = Registry.load(["tests.workflows.faults"])


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(
        redis_url,
        "tests.workflows.faults",
        tmp_path,
        GRAPHQ_LEASE_TTL_S="1",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.2",
    )


def test_sigkill_mid_step_keeps_finished_tasks(
    env: dict[str, str], tmp_path: Path, redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    """I2 with a real SIGKILL: tasks that finished before the crash do not run again when the step does (in
    the reaper's continuation of the run)."""
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, Settings(redis_url=redis_url)))
    run_id = client.enqueue("slowfan", {"names": ["fast-a", "slow", "fast-b"]})
    run = client.get_run(run_id)
    worker = procs.start("worker", env=env)
    wait_for(
        lambda: line_count(tmp_path / "slow.log") == 1 and client.get_run(run_id).head is not None,
        what="the slow task to start",
    )
    head = client.get_run(run_id).head or ""
    wait_for(
        lambda: redis_client.hlen(keys.pending_writes(run.thread_id, "", head)) == 2,
        what="both fast tasks to persist their writes",
    )
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)
    crashed = client.get_run(run_id)
    assert crashed.status == RunStatus.RUNNING
    assert crashed.step == 0
    assert [c.step for c in client.get_history(run.thread_id)] == [0, -1]  # the input, the input applied
    wait_for(
        lambda: redis_client.exists(keys.lease(run.thread_id, run_id)) == 0,
        timeout_s=5,
        what="the dead worker's lease to lapse",
    )
    (tmp_path / "go").touch()
    [(reaped, outcome)] = Reaper(redis_client, Settings(redis_url=redis_url)).sweep()  # no reaper ran yet
    assert (reaped, outcome.verdict) == (run_id, "continued")
    second = procs.start("worker", "--burst", env=env)
    assert second.wait(30) == 0
    [final] = client.wait([run_id], timeout_s=10)  # the chain's last run: the continuation
    assert (final.id, final.status, final.continued_from_run_id) == (
        outcome.detail,
        RunStatus.COMPLETED,
        run_id,
    )
    assert final.result == {"names": ["fast-a", "slow", "fast-b"], "done": ["fast-a", "slow", "fast-b"]}
    assert [line_count(tmp_path / f"{task}.log") for task in ("fast-a", "fast-b", "slow")] == [1, 1, 2]
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]


def test_commit_survives_a_flushed_script_cache(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)  # the flushing node connects through the settings
    get_settings.cache_clear()
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))
    run_id = client.enqueue("flushing", {})
    run_worker(settings, burst=True, registry=REGISTRY, kv=redis_client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"n": 2}
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]
