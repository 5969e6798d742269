"""Waiting stops at a run that waits for input: ``Client.wait`` and ``graphq enqueue --wait`` (exit 3, with
the open requests and how to answer them, as ``graphq run`` prints them), with a ``graphq worker`` process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from graphcore.client import Client
from graphcore.registry import Registry
from graphcore.runs import RunStatus
from graphcore.settings import Settings
from tests.envs import clean_env
from worker.queue import RQStepQueue

ROOT = Path(__file__).resolve().parent.parent
MODULE = "tests.workflows.hitl"
REGISTRY = Registry.load([MODULE])


@pytest.fixture
def client(redis_client: redis.Redis, redis_url: str) -> Client:
    return Client(redis_client, REGISTRY, RQStepQueue(redis_client, Settings(redis_url=redis_url)))


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    return clean_env(GRAPHQ_REDIS_URL=redis_url, GRAPHQ_WORKFLOWS=MODULE, PYTHONUNBUFFERED="1")


@pytest.fixture
def worker(env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "worker"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )
    log.close()
    yield proc
    proc.terminate()
    proc.wait(15)


def graphq(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=30,
        check=False,
    )


def test_client_wait_returns_at_each_pause_and_at_the_end(
    client: Client, worker: subprocess.Popen[bytes]
) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"})
    [paused] = client.wait([run_id], timeout_s=20)
    assert (paused.status, paused.result) == (RunStatus.AWAITING_INPUT, None)
    assert [r.value for r in client.requests(run_id)] == [{"question": "first about tea?"}]
    client.answer(run_id, "green")
    [again] = client.wait([run_id], timeout_s=20)
    assert again.status == RunStatus.AWAITING_INPUT
    assert [r.value for r in client.requests(run_id)] == [{"question": "second?"}]
    client.answer(run_id, "hot")
    [done] = client.wait([run_id], timeout_s=20)
    assert (done.status, done.result) == (
        RunStatus.COMPLETED, {"topic": "tea", "answers": ["green", "hot"], "done": True}
    )
