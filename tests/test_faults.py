"""Fault injection with real processes and signals: SIGKILL mid-step, a Redis that lost its scripts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings, get_settings
from tests.envs import clean_env
from worker.process import run_worker
from worker.queue import RQStepQueue
from worker.reaper import Reaper

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = Registry.load(["tests.workflows.faults"])


def wait_for(predicate: Any, timeout_s: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    base = clean_env()
    return {
        **base,
        "GRAPHQ_REDIS_URL": redis_url,
        "GRAPHQ_WORKFLOWS": "tests.workflows.faults",
        "GRAPHQ_TEST_DIR": str(tmp_path),
        "GRAPHQ_LEASE_TTL_S": "1",
        "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.2",
        "PYTHONUNBUFFERED": "1",
    }


def start_worker(env: dict[str, str], tmp_path: Path, *extra: str) -> subprocess.Popen[bytes]:
    log = (tmp_path / "worker.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "worker", *extra],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_sigkill_mid_step_keeps_finished_tasks(
    env: dict[str, str], tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    """I2 with a real SIGKILL: tasks that finished before the crash do not run again when the step does (in
    the reaper's continuation of the run)."""
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, Settings(redis_url=redis_url)))
    run_id = client.enqueue("slowfan", {"names": ["fast-a", "slow", "fast-b"]})
    run = client.get_run(run_id)
    worker = start_worker(env, tmp_path)
    try:
        wait_for(
            lambda: lines(tmp_path / "slow.log") == 1 and client.get_run(run_id).head is not None,
            what="the slow task to start",
        )
        head = client.get_run(run_id).head or ""
        wait_for(
            lambda: redis_client.hlen(keys.pending_writes(run.thread_id, "", head)) == 2,
            what="both fast tasks to persist their writes",
        )
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
    crashed = client.get_run(run_id)
    assert crashed.status == RunStatus.RUNNING
    assert crashed.step == 0
    assert [c.step for c in client.get_history(run.thread_id)] == [-1]
    wait_for(
        lambda: redis_client.exists(keys.lease(run.thread_id, run_id)) == 0,
        timeout_s=5,
        what="the dead worker's lease to lapse",
    )
    (tmp_path / "go").touch()
    [(reaped, outcome)] = Reaper(redis_client, Settings(redis_url=redis_url)).sweep()  # no reaper ran yet
    assert (reaped, outcome.verdict) == (run_id, "continued")
    second = start_worker(env, tmp_path, "--burst")
    assert second.wait(30) == 0
    [final] = client.wait([run_id], timeout_s=10)  # the chain's last run: the continuation
    assert (final.id, final.status, final.continued_from_run_id) == (
        outcome.detail,
        RunStatus.COMPLETED,
        run_id,
    )
    assert final.result == {"names": ["fast-a", "slow", "fast-b"], "done": ["fast-a", "slow", "fast-b"]}
    assert (lines(tmp_path / "fast-a.log"), lines(tmp_path / "fast-b.log"), lines(tmp_path / "slow.log")) == (
        1,
        1,
        2,
    )
    assert [c.step for c in client.get_history(run.thread_id)] == [0, -1]


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
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]
