"""A worker process: an RQ ``SimpleWorker`` taking step jobs (``graphq worker`` runs N of them under a
supervising process, :mod:`graphq.worker.process.supervisor`)."""

from __future__ import annotations

import logging
from types import FrameType
from typing import Any

from rq import SimpleWorker
from rq.serializers import JSONSerializer

from graphcore.backend import published
from graphcore.backend.catalog import publish
from graphcore.backend.connection import connect, outlast
from graphcore.engine.registry import Registry
from graphcore.errors import ColdStop, ConfigError
from graphcore.settings import Settings, get_settings
from graphq.worker.process.commands import BoundedCommands
from graphq.worker.process.liveness import new_worker_id, start_liveness
from graphq.worker.process.outage import OutlastOutages
from graphq.worker.process.switch import KillSwitch
from graphq.worker.queue import StepJob
from graphq.worker.rq_hooks import SendsUnsentCommits
from graphq.worker.step.context import WorkerContext, set_context
from graphq.worker.step.lease import LeaseListener

__all__ = ["ColdStops", "graphq_worker", "run_worker"]


def run_worker(
    settings: Settings | None = None,
    *,
    burst: bool = False,
    registry: Registry | None = None,
    kv: Any = None,
    log_level: str = "WARNING",
    worker_class: type[SimpleWorker] = SimpleWorker,
    listener: LeaseListener | None = None,
) -> bool:
    """Run one worker in this process until stopped (or, with ``burst``, until its queues are empty).

    It listens on the queues of every workflow in ``registry`` (each workflow's, and that of the steps of its
    runs pinned to the version served here: :meth:`~graphq.worker.step.context.WorkerContext.listen`), and
    publishes them
    in the workflow catalog once its heartbeat is written (:func:`graphcore.backend.catalog.publish`).
    ``worker_class``: the RQ worker class (``graphq worker`` runs
    :class:`graphq.worker.process.supervisor.SupervisedWorker`
    children under a supervising parent). ``listener``: told of each lease the worker holds (the
    supervising parent's channel; :attr:`graphq.worker.step.context.WorkerContext.listener`).

    Returns:
        True when it worked at least one job.

    Raises:
        RedisUnavailableError: Redis cannot be reached.
        ConfigError: there are no workflows to work on, or a node's settings are above
            ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH`` (refused at publish, naming workflow, node, size and limit).
    """
    settings = settings or get_settings()
    client = kv if kv is not None else connect(settings.redis_url or "")
    reg = registry or Registry.load(settings.workflows.split(","))
    ctx = WorkerContext.build(client, settings, reg)
    ctx.listener = listener
    set_context(ctx)
    if not reg.names():
        raise ConfigError("no workflows to work on: register some (entry points) or pass --workflows")
    names = ctx.listen()  # the worker builds its queues of its own queue class
    ctx.worker_id = new_worker_id()
    worker_class = graphq_worker(worker_class)
    worker = worker_class(
        names, connection=client, serializer=JSONSerializer, name=ctx.worker_id, job_class=StepJob
    )
    logging.getLogger("rq.worker").setLevel(log_level)
    stop_liveness = start_liveness(client, settings, ctx.worker_id, names)
    # R8, R5: commands without the variables obey them. Redis away or full at the start is waited out.
    outlast(published.publish, client, settings, ctx.worker_id)
    try:
        outlast(publish, client, ctx.worker_id, reg.graphs.values(), settings.max_node_settings_length)
        return bool(worker.work(burst=burst, logging_level=log_level, with_scheduler=False))
    finally:
        stop_liveness()


def graphq_worker(worker_class: type[SimpleWorker]) -> type[SimpleWorker]:
    """``worker_class`` (``SimpleWorker`` or a subclass) with graphq's mixins before it in the MRO: RQ's
    Redis calls outlive outages (:class:`graphq.worker.process.outage.OutlastOutages`), the kill switch is
    obeyed (R6, :class:`graphq.worker.process.switch.KillSwitch`), RQ's command thread stops within seconds
    (:class:`graphq.worker.process.commands.BoundedCommands`), its cold stop is told from a node's
    ``SystemExit`` (:class:`ColdStops`), and a step's commit that RQ's success pipeline never carried is sent
    after the job (:class:`graphq.worker.rq_hooks.SendsUnsentCommits`)."""
    if issubclass(worker_class, OutlastOutages):
        return worker_class
    bases = (OutlastOutages, SendsUnsentCommits, KillSwitch, BoundedCommands, ColdStops, worker_class)
    return type(f"Graphq{worker_class.__name__}", bases, {})


class ColdStops(SimpleWorker):
    """The mixin: RQ's cold stop (the second Ctrl-C or SIGTERM to a worker whose signal handlers are RQ's)
    raises :class:`~graphcore.errors.ColdStop` instead of a plain ``SystemExit``. Raised wherever the main
    thread is, it may land inside a node running there; the step job then leaves the step to crash recovery
    instead of failing the run as it does for a node's own ``SystemExit``."""

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        try:
            super().request_force_stop(signum, frame)
        except SystemExit:
            raise ColdStop() from None
