"""RQ's work loop made to outlive Redis outages.

RQ retries its dequeue on a connection error (with a backoff that grows to a minute), but everything else
in its loop — the heartbeat after a job, maintenance, suspension checks, the bookkeeping of a job before
and after it runs — lets a ``ConnectionError`` reach the loop's catch-all, which logs "found an unhandled
exception, quitting" and stops the worker. A 3 s Redis restart therefore ended every busy worker.

:class:`OutlastOutages`, mixed into the worker class by :func:`graphq.worker.process.rq_worker.graphq_worker`,
retries each of those Redis calls for as long as Redis is away (capped backoff,
``GRAPHQ_REDIS_RETRY_MAX_WAIT_S``), and the dequeue backoff is capped the same way, so that a worker carries
on at most that long after Redis is back. The step job itself retries its own writes the same way; they are
fenced by the step's lease, so a step whose
lease lapsed during the outage changes nothing and is left to the reaper (never half-committed, I1). A full
Redis refusing writes (OOM) is waited out the same way (:func:`graphcore.backend.connection.is_transient`).
"""

from __future__ import annotations

import logging
from typing import Any

from rq import SimpleWorker

from graphcore.backend.connection import is_transient, outlast
from graphcore.settings import get_settings

__all__ = ["OutlastOutages"]

log = logging.getLogger("graphq.worker")


class OutlastOutages(SimpleWorker):
    """The mixin (placed before the worker class in the MRO): RQ's Redis bookkeeping retried through an
    outage. Each method is a plain ``outlast`` around RQ's own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connection_wait_time = get_settings().redis_retry_max_wait_s  # RQ's dequeue backoff cap

    def register_birth(self) -> None:
        outlast(super().register_birth)

    def subscribe(self) -> None:
        outlast(super().subscribe)

    def check_for_suspension(self, burst: bool) -> None:
        outlast(super().check_for_suspension, burst)

    def run_maintenance_tasks(self) -> None:
        outlast(super().run_maintenance_tasks)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if pipeline is not None:  # queued on a caller's pipeline: the caller's call is the one retried
            super().heartbeat(timeout, pipeline)
            return
        outlast(super().heartbeat, timeout)

    def set_state(self, state: str, pipeline: Any = None) -> None:
        if pipeline is not None:
            super().set_state(state, pipeline)
            return
        outlast(super().set_state, state)

    def prepare_execution(self, job: Any) -> Any:
        return outlast(super().prepare_execution, job)

    def prepare_job_execution(self, job: Any, remove_from_intermediate_queue: bool = False) -> None:
        outlast(super().prepare_job_execution, job, remove_from_intermediate_queue)

    def handle_execution_ended(self, job: Any, queue: Any, heartbeat_ttl: int) -> None:
        outlast(super().handle_execution_ended, job, queue, heartbeat_ttl)

    def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any, execution: Any) -> None:
        outlast(super().handle_job_success, job, queue, started_job_registry, execution)

    def handle_job_failure(self, job: Any, queue: Any, *args: Any, **kwargs: Any) -> None:
        outlast(super().handle_job_failure, job, queue, *args, **kwargs)

    def teardown(self) -> None:
        """RQ's teardown (the worker's death in its registry), given up while Redis is away: the worker is
        stopping, and its registry entry expires by itself."""
        try:
            super().teardown()  # type: ignore[no-untyped-call]
        except Exception as exc:
            if not is_transient(exc):
                raise
            log.warning("worker %s: Redis unavailable at shutdown, not recording its end: %s", self.name, exc)
