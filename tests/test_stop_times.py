"""Stops take seconds, not a minute, with the redis-py that pip resolves.

From redis-py 8.2 on, ``PubSubWorkerThread.stop()`` joins without a timeout while RQ's command thread sits
in a read of up to 60 s: an idle ``graphq worker`` took 22–24 s to stop after SIGTERM, ``--burst`` on empty
queues 61 s, and ``graphq run`` sometimes hung about 60 s after "completed". Each stop here is an event
awaited with a generous bound (a busy machine is slow, not a minute slow), on real processes and signals.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path

import pytest
import redis
from rq import SimpleWorker

from graphq.worker.process.commands import JOIN_S, POLL_S
from graphq.worker.process.rq_worker import graphq_worker
from tests.envs import clean_env
from tests.workers import Procs, Start, graphq, wait_for, worker_env

STOP_BOUND_S = 12.0
"""Generous for a stop that takes well under a second idle; well short of the old 22 to 61 s."""


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.basic")


@pytest.mark.parametrize("processes", [1, 2])
def test_sigterm_stops_an_idle_worker_within_seconds(
    start: Start, procs: Procs, redis_client: redis.Redis, processes: int
) -> None:
    """Also the idle case of test_e2e's stop (merged here): within its 10 s, and out of RQ's registry."""
    worker = start(processes=processes)
    time.sleep(2 * POLL_S)  # the command threads are in their reads
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(10) == 0, procs.logged(worker)
    assert redis_client.scard("rq:workers") == 0


def test_a_burst_worker_on_empty_queues_exits_within_seconds(env: dict[str, str]) -> None:
    done = graphq("worker", "--burst", "--concurrency", "2", env=env, timeout=STOP_BOUND_S + 8)
    assert done.returncode == 0, done.stderr


def test_graphq_run_exits_once_its_run_completed(procs: Procs, tmp_path: Path) -> None:
    """Three local runs (the embedded Redis): each process ends soon after its run completed."""
    env = clean_env(GRAPHQ_DATA_DIR=str(tmp_path / "data"), GRAPHQ_WORKFLOWS="tests.workflows.basic")
    for n in range(3):
        proc = procs.start("run", "counter", "--input", '{"limit": 2}', "--thread", f"t{n}", env=env)
        assert proc.wait(STOP_BOUND_S + 10) == 0, procs.logged(proc)
        assert re.search(r"\bcompleted\b", procs.logged(proc)), procs.logged(proc)


def test_the_command_thread_stops_within_its_bound_while_it_reads(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """In process: the worker's RQ command thread, waiting in its read, is stopped by ``unsubscribe``
    within :data:`graphq.worker.process.commands.JOIN_S`, and its connection is closed (the channel has no
    subscriber)."""
    worker_class = graphq_worker(SimpleWorker)
    worker = worker_class(["graphq:counter"], connection=redis_client)
    worker.subscribe()
    thread = worker.pubsub_thread
    assert isinstance(thread, threading.Thread) and thread.is_alive()
    channel = worker.pubsub_channel_name
    assert redis_client.pubsub_numsub(channel) == [(channel.encode(), 1)]
    time.sleep(2 * POLL_S)
    begun = time.monotonic()
    worker.unsubscribe()
    assert time.monotonic() - begun < JOIN_S + 8  # the old join waited out a read of up to 60 s
    assert not thread.is_alive()
    wait_for(lambda: redis_client.pubsub_numsub(channel) == [(channel.encode(), 0)], 10, "the unsubscribe")
