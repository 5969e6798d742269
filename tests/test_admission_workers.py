"""Admission (R8) with real `graphq worker` subprocesses: the counts sampled inside the admission script
never exceed the limits over a few hundred runs on 4 worker processes, and a SIGKILLed worker's slot goes
to its run's continuation exactly once (not to the run waiting behind, and not lost)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend import admission
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue
from tests.workers import Procs, wait_for
from tests.workflows.crash import crash_env, executions

MODULES = "tests.workflows.admission,tests.workflows.crash"
REGISTRY = Registry.load(MODULES.split(","))
LIMITS = {"GRAPHQ_MAX_CONCURRENT_RUNS": "3", "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT": "2"}


@pytest.fixture
def procs(redis_url: str, tmp_path: Path) -> Iterator[Procs]:
    with Procs(tmp_path, crash_env(redis_url, MODULES, **LIMITS)) as started:
        yield started


def client_for(kv: redis.Redis, url: str, **limits: int) -> Client:
    return Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url, **limits)))


@pytest.mark.chaos  # make test: the limits in tests/test_admission.py, and the SIGKILL case below
def test_limits_hold_over_300_runs_on_4_worker_processes(
    redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    """300 short runs of 4 tenants (150, 90, 50, 10) on `graphq worker --concurrency 4`, limits 3 and 2 per
    tenant: the highest counts the script saw are the limits (never above), every run was admitted once
    and completed, and nothing is left holding or waiting."""
    admission.enable_debug(redis_client)
    client = client_for(redis_client, redis_url, max_concurrent_runs=3, max_concurrent_runs_per_tenant=2)
    sizes = {"a": 150, "b": 90, "c": 50, "d": 10}
    requests = [RunRequest("tick", {"sleep": 0.002}, tenant=t) for t, n in sizes.items() for _ in range(n)]
    ids = client.enqueue_many(requests)
    procs.start("worker", "--concurrency", "4")
    final = client.wait(ids, timeout_s=120)
    assert Counter(r.status for r in final) == {RunStatus.COMPLETED: 300}
    highest = admission.highest_counts(redis_client)
    assert highest["global"] == 3
    assert highest["tenant:a"] == 2  # its first two runs went straight in
    assert max(highest[f"tenant:{t}"] for t in sizes) == 2
    order = admission.admissions(redis_client)
    assert sorted(r for _, r in order) == sorted(ids)
    assert Counter(t for t, _ in order) == sizes
    assert set(t for t, _ in order[:8]) == set(sizes)  # every tenant within the first turns
    assert redis_client.hlen(keys.admission("counts")) == 0
    assert redis_client.hlen(keys.admission("holders")) == 0
    assert redis_client.hlen(keys.admission("entries")) == 0


def test_a_sigkilled_workers_slot_goes_to_its_continuation_once(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """One slot; `crashonce` kills its worker process in its second node; a `tick` run waits behind it.
    The reaper continues the crashed run and the continuation takes over its slot: the waiting run is not
    admitted meanwhile (never two holders), and is admitted once the continuation completes."""
    admission.enable_debug(redis_client)
    client = client_for(redis_client, redis_url, max_concurrent_runs=1)
    crashed, waiting = client.enqueue_many([RunRequest("crashonce", {"n": 1}), RunRequest("tick", {})])
    with Procs(tmp_path, crash_env(redis_url, MODULES, GRAPHQ_MAX_CONCURRENT_RUNS="1")) as procs:
        procs.keep_one_worker()
        wait_for(lambda: client.get_run(crashed).continued_by_run_id, timeout_s=30, what="the continuation")
        [done, behind] = client.wait([crashed, waiting], timeout_s=30)
    first = client.get_run(crashed)
    assert (first.status, first.error and first.error.type) == (RunStatus.FAILED, "WorkerLost")
    assert (done.id, done.continued_from_run_id) == (first.continued_by_run_id, crashed)
    assert done.status == RunStatus.COMPLETED
    assert behind.status == RunStatus.COMPLETED
    assert [r for _, r in admission.admissions(redis_client)] == [crashed, waiting]
    assert admission.highest_counts(redis_client)["global"] == 1
    assert behind.started_at is not None and done.ended_at is not None
    assert datetime.fromisoformat(behind.started_at) >= datetime.fromisoformat(done.ended_at)
    assert executions(redis_client) == {"first": 1, "doom": 2}
    assert redis_client.hlen(keys.admission("counts")) == 0
