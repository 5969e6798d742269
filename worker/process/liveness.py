"""A worker process's heartbeat (R18): its record in the worker registry, renewed while the process lives.

One daemon thread per worker process writes the record (:mod:`graphcore.backend.workers`) every
``GRAPHQ_HEARTBEAT_INTERVAL_S`` with a time-to-live of ``GRAPHQ_LEASE_TTL_S``, including the step the
process holds at that moment (from its leases). A killed process stops writing; its record expires.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from rq import Worker

from graphcore import keys
from graphcore.backend.connection import FailureStreak, outlast
from graphcore.backend.lua import script
from graphcore.backend.runs import now_iso
from graphcore.backend.workers import drop_worker, heartbeat
from graphcore.settings import Settings
from graphq.worker.step import lease

__all__ = ["Heartbeat", "new_worker_id", "renew_worker", "start_liveness"]

log = logging.getLogger("graphq.worker")


def new_worker_id() -> str:
    """A unique worker id: host, pid and a random suffix (also the RQ worker's name)."""
    host = socket.gethostname().replace(":", "-").replace(" ", "-") or "host"
    return f"{host}.{os.getpid()}.{uuid.uuid4().hex[:6]}"


class Heartbeat:
    """The heartbeat thread of one worker process; :meth:`start` writes the first beat before returning."""

    def __init__(
        self, kv: Any, worker_id: str, queues: Sequence[str], ttl_s: float, interval_s: float
    ) -> None:
        self.kv = kv
        self.id = worker_id
        self.ttl_s = ttl_s
        self.interval_s = interval_s
        self.stopped = threading.Event()
        self.static = {
            "host": socket.gethostname(),
            "pid": str(os.getpid()),
            "queues": ",".join(queues),
            "started_at": now_iso(),
        }
        self.thread = threading.Thread(target=self._loop, name="graphq-worker-heartbeat", daemon=True)
        self.beats = FailureStreak(log, f"worker {worker_id} heartbeat")
        """The failed beats (Redis away or full): logged once a streak, not once a beat."""

    def fields(self) -> dict[str, str]:
        """The record as of now: the static fields and the step held (empty when idle): ``step`` the run's
        own count (the job's), ``thread_step`` the thread's (known once the step's checkpoint is read)."""
        leases = sorted(lease.held(), key=lambda held: not held.of_step)  # a step's before a batch's
        current = leases[0] if leases else None
        return self.static | {
            "run_id": current.run_id if current else "",
            "thread_id": current.thread_id if current else "",
            "step": "" if current is None or current.step is None else str(current.step),
            "thread_step": "" if current is None or current.step_number is None else str(current.step_number),
        }

    def beat(self) -> None:
        """One heartbeat (one round trip)."""
        heartbeat(self.kv, self.id, self.ttl_s, self.fields())

    def start(self) -> Heartbeat:
        """Write the first beat (waiting out Redis away or refusing writes, :func:`outlast`), then start
        the thread; returns self."""
        outlast(self.beat)
        self.thread.start()
        return self

    def _loop(self) -> None:
        while not self.stopped.wait(self.interval_s):
            try:
                self.beat()
            except Exception as exc:  # Redis away: the record may lapse; the next beat writes it again
                self.beats.failed(exc)
            else:
                self.beats.worked()

    def stop(self) -> None:
        """Stop beating and remove the record (a clean exit)."""
        self.stopped.set()
        try:
            drop_worker(self.kv, self.id)
        except Exception as exc:
            log.warning("worker %s: could not remove its record: %s", self.id, exc)


def renew_worker(kv: Any, worker_id: str, ttl_s: float) -> bool:
    """Renew worker ``worker_id``'s record for ``ttl_s`` seconds on its behalf (``renew_worker.lua``, one
    round trip), and keep RQ's hash of it from expiring before then: its supervising process does this, as
    a node holding the GIL stops the worker's own heartbeat thread. A record that is gone stays gone.

    Returns:
        Whether the record was there (and renewed).

    Raises:
        redis.exceptions.RedisError: Redis failed (not retried: the next renewal tries again).
    """
    names = [keys.worker(worker_id), keys.workers(), Worker.redis_worker_namespace_prefix + worker_id]
    return bool(script(kv, "renew_worker")(keys=names, args=[worker_id, max(1, int(ttl_s * 1000))]))


REAPER_HERE = True
"""Whether a worker process runs the housekeeping loops (the reaper, the request-expiry scan, ...:
:mod:`graphq.worker.housekeeping.loops`): False in the children of ``graphq worker``, whose supervising parent
runs them (a child that dies holding the reaper lock would stall reaping for the lock's time-to-live, just
when its own run needs the reaper)."""


def start_liveness(kv: Any, settings: Settings, worker_id: str, queues: Sequence[str]) -> Callable[[], None]:
    """Start this worker process's heartbeat and (see :data:`REAPER_HERE`) its housekeeping loops (R18,
    R13); returns the function that stops them (a clean exit removes the worker's record and gives the
    loops' locks back)."""
    from graphq.worker.housekeeping.loops import start_housekeeping

    beat = Heartbeat(kv, worker_id, queues, settings.lease_ttl_s, settings.heartbeat_interval_s).start()
    stop = threading.Event()
    loops = start_housekeeping(kv, settings, stop) if REAPER_HERE else []

    def stop_all() -> None:
        stop.set()
        for thread in loops:
            thread.join(timeout=5)
        beat.stop()

    return stop_all
