"""Worker processes: RQ ``SimpleWorker`` taking step jobs, N processes for ``--concurrency N``.

SIGTERM to the parent is passed to every child; RQ's warm shutdown lets the current job finish.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Sequence
from typing import Any

from rq import SimpleWorker
from rq.serializers import JSONSerializer

from graphcore.backend.connection import connect
from graphcore.backend.embedded import exit_with_parent
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.settings import Settings, get_settings
from worker.context import WorkerContext, set_context
from worker.liveness import new_worker_id, start_liveness
from worker.outage import outage_proof
from worker.queue import StepJob

__all__ = ["run_worker", "run_workers"]


def run_worker(
    settings: Settings | None = None,
    *,
    burst: bool = False,
    registry: Registry | None = None,
    kv: Any = None,
    log_level: str = "WARNING",
) -> bool:
    """Run one worker in this process until stopped (or, with ``burst``, until its queues are empty).

    It listens on the queue of every workflow in ``registry`` (one queue per workflow).

    Returns:
        True when it worked at least one job.

    Raises:
        RedisUnavailableError: Redis cannot be reached.
        ConfigError: there are no workflows to work on.
    """
    settings = settings or get_settings()
    client = kv if kv is not None else connect(settings.redis_url or "")
    reg = registry or Registry.load(settings.workflows.split(","))
    ctx = WorkerContext.build(client, settings, reg)
    set_context(ctx)
    queues = [ctx.queue.queue(name) for name in reg.names()]
    if not queues:
        raise ConfigError("no workflows to work on: register some (entry points) or pass --workflows")
    ctx.worker_id = new_worker_id()
    worker_class = outage_proof(SimpleWorker)  # its loop outlives Redis outages
    worker = worker_class(
        queues, connection=client, serializer=JSONSerializer, name=ctx.worker_id, job_class=StepJob
    )
    logging.getLogger("rq.worker").setLevel(log_level)
    stop_liveness = start_liveness(client, settings, ctx.worker_id, [q.name for q in queues])
    try:
        return bool(worker.work(burst=burst, logging_level=log_level, with_scheduler=False))
    finally:
        stop_liveness()


def _child(burst: bool, log_level: str, parent_pid: int) -> None:
    exit_with_parent(parent_pid)  # a SIGKILLed parent must not leave workers taking jobs
    run_worker(burst=burst, log_level=log_level)


def run_workers(concurrency: int, *, burst: bool = False, log_level: str = "WARNING") -> Sequence[int]:
    """Run ``concurrency`` worker processes and wait for them; returns their exit codes.

    SIGTERM or SIGINT to this process is passed on to every child as SIGTERM (RQ's warm shutdown: the
    current step finishes, then the child exits).
    """
    if concurrency == 1:
        run_worker(burst=burst, log_level=log_level)
        return [0]
    mp = multiprocessing.get_context("spawn")
    procs = [
        mp.Process(target=_child, args=(burst, log_level, os.getpid()), name=f"graphq-worker-{i}")
        for i in range(concurrency)
    ]

    def forward(signum: int, _frame: Any) -> None:
        for p in procs:
            if p.pid is not None and p.is_alive():
                p.terminate()

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return [p.exitcode or 0 for p in procs]
