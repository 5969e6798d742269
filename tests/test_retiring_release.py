"""Retiring a release (the chart's ``worker.versions[].takeNewRuns: false``): a ``graphq worker`` with
``GRAPHQ_TAKE_NEW_RUNS=false`` listens only on the queue of the runs pinned to its version, so it finishes
those and starts no run; the new release's workers start the new ones. Two releases of one workflow
(tests/workflows/versioned_v1.py and versioned_v2.py), their workers as subprocesses."""

from __future__ import annotations

import signal

import redis

from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunStatus
from graphq.worker.queue import queue_name, step_job_id
from tests.test_version_pinning import V1, VERSION_1, VERSION_2, _live_queues, paused, queued, ran
from tests.workers import Procs, ended, wait_for, worker_env

REGISTRY = V1


def test_a_worker_taking_no_new_runs_finishes_its_pinned_runs_and_leaves_new_ones_to_the_new_release(
    client: Client, redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    old_run = paused(client, redis_client, redis_url)  # started by release 1: pinned to it
    retiring = procs.start(
        "worker", env=worker_env(redis_url, "tests.workflows.versioned_v1", GRAPHQ_TAKE_NEW_RUNS="false")
    )
    pinned_queue = queue_name("graphq", "versioned", VERSION_1)
    assert wait_for(lambda: _live_queues(redis_client), 60, "the retiring worker") == {pinned_queue}
    new_runs = client.enqueue_many([RunRequest("versioned", {}) for _ in range(3)])
    client.answer(old_run, "yes")
    assert ended(client, old_run, 60).status == RunStatus.COMPLETED
    assert ran(client, old_run) == ["v1:a", "v1:ask", "v1:c"]
    # The only live worker never listened on the workflow's queue: the new runs are there, not started.
    assert queued(redis_client, None) == [step_job_id(run_id, 0).encode() for run_id in new_runs]
    assert [client.get_run(run_id).version for run_id in new_runs] == [None, None, None]
    procs.start("worker", env=worker_env(redis_url, "tests.workflows.versioned_v2"))
    for run_id in new_runs:
        assert ended(client, run_id, 60).status == RunStatus.COMPLETED
        assert client.get_run(run_id).version == VERSION_2
        assert ran(client, run_id) == ["v2:a", "v2:ask", "v2:c"]
    retiring.send_signal(signal.SIGTERM)
    assert retiring.wait(60) == 0
