"""The kill switch in the worker loop (R6): while it is off, a worker takes no step job.

RQ's worker already stops between jobs while ``rq:suspended`` exists (``check_for_suspension``: it beats
its heartbeat, sleeps a second and looks again). :class:`KillSwitch` makes that check graphq's: a worker is
suspended while the graphq switch key (:mod:`graphcore.backend.switch`) or RQ's key exists, or while its
process has ``GRAPHQ_ENABLED=false``; it keeps its RQ heartbeat meanwhile (and its graphq heartbeat, a
thread of its own) and goes on within a second of ``graphq enable``.

A worker that was waiting in RQ's blocking dequeue when the switch went off takes the next job that
arrives; it looks at the switch again before running it and, off, puts the job back at the head of its
queue (out of RQ's intermediate queue, in one transaction) and waits. So a step job that is queued stays
queued, and a step that was running finishes and commits; its next step's job waits in the queue. A job
taken at once (it was waiting in the queue: the dequeue returned within :data:`RECHECK_S` of the check
before it) costs no second look, so a busy worker pays no round trip per job for the switch.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rq import SimpleWorker
from rq.exceptions import StopRequested
from rq.worker.base import WorkerStatus

from graphcore import keys
from graphcore.backend.connection import outlast
from graphcore.settings import get_settings

__all__ = ["POLL_S", "RECHECK_S", "KillSwitch"]

log = logging.getLogger("graphq.worker")

POLL_S = 1.0
"""How often a suspended worker looks at the switch again, seconds (RQ's own interval)."""

RECHECK_S = 0.05
"""A job dequeued longer than this after the last look at the switch is looked at again, seconds."""


class KillSwitch(SimpleWorker):
    """The mixin (before the worker class in the MRO): graphq's kill switch as RQ's suspension."""

    _looked_at = 0.0
    """When :meth:`suspended` last read the switch (``time.monotonic()``)."""

    def suspended(self) -> bool:
        """Whether this worker must take no job now: one round trip that also beats RQ's heartbeat."""
        self._looked_at = time.monotonic()
        with self.connection.pipeline() as pipe:
            self.heartbeat(pipeline=pipe)
            pipe.exists(keys.switch(), keys.rq_suspended())
            off = int(pipe.execute()[-1]) > 0
        return off or not get_settings().enabled

    def check_for_suspension(self, burst: bool) -> None:
        """Wait while the switch is off (RQ's loop, on graphq's switch); in burst mode, stop instead."""
        before: Any = None
        while not self._stop_requested and outlast(self.suspended):
            if burst:
                log.info("worker %s: graphq is disabled, ending the burst", self.name)
                raise StopRequested
            if before is None:
                log.warning(
                    "worker %s: graphq is disabled (kill switch); waiting for `graphq enable`", self.name
                )
                before = self.get_state()
                outlast(self.set_state, WorkerStatus.SUSPENDED)
            time.sleep(POLL_S)
        if before is not None:
            log.warning("worker %s: graphq is enabled again; taking jobs", self.name)
            outlast(self.set_state, before)

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        """RQ's dequeue; a job taken while the switch is off goes back to the head of its queue and the
        worker waits for the switch (``timeout`` None: RQ's burst mode)."""
        while True:
            result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            if result is None or time.monotonic() - self._looked_at <= RECHECK_S:
                return result
            if not outlast(self.suspended):
                return result
            job, queue = result
            outlast(_put_back, self.connection, queue, job.id)
            log.warning("worker %s: graphq is disabled; job %s put back on %s", self.name, job.id, queue.name)
            self.check_for_suspension(timeout is None)
            if self._stop_requested:
                return None


def _put_back(kv: Any, queue: Any, job_id: str) -> None:
    """Return a dequeued job to the head of ``queue`` (and out of RQ's intermediate queue), atomically."""
    with kv.pipeline(transaction=True) as pipe:
        pipe.lrem(queue.intermediate_queue_key, 1, job_id)
        pipe.lpush(queue.key, job_id)
        pipe.execute()
