"""Writes refused by the lease fence (I1, I7): what a worker that lost its step's lease tried to write.

Every write of a step job — pending writes, the commit, the status it sets (running, awaiting input,
failed, canceled, completed), the run's head at step 0, the answers seeded for a branch run, request
records, the events it appends (a node's custom chunks, retries, progress), the checkpoints and pending
writes of the subgraphs its nodes run — goes through a Lua script that checks the lease token first. A
worker paused past its lease (a SIGSTOP, a long GC pause, a partition) therefore changes nothing when it
wakes: each refused write is logged here, counted in :data:`REFUSED` (this process; the metrics exporter
reads it) and, by the script itself, in the run hash (fields ``refused:<kind>``: ``graphq`` and tests can
read it across processes). Refused events are logged once a step, counted each.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from graphcore.errors import LeaseLostError
from graphq.worker import metrics

__all__ = ["KINDS", "REFUSED", "RefusedWriteError", "RefusedWrites", "refused"]

log = logging.getLogger("graphq.fence")

KINDS = ("pending", "commit", "status", "head", "answers", "requests", "events", "subgraph")
"""The kinds of fenced writes, as counted (``refused:<kind>`` in the run hash)."""


class RefusedWrites:
    """A thread-safe count of refused writes by kind, for this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, kind: str) -> None:
        """Count one refused write of ``kind`` (also in ``graphq_fenced_writes_rejected_total``)."""
        with self._lock:
            self._counts[kind] += 1
        metrics.fenced_write_refused(kind)

    def counts(self) -> dict[str, int]:
        """Refused writes so far, by kind (kinds never refused are left out)."""
        with self._lock:
            return dict(self._counts)

    def total(self) -> int:
        """Refused writes so far, all kinds."""
        with self._lock:
            return sum(self._counts.values())


REFUSED = RefusedWrites()
"""This process's refused writes."""


class RefusedWriteError(LeaseLostError):
    """A write the fence refused; it was logged and counted already (by :func:`refused`)."""


def refused(kind: str, run_id: str, step: int, what: str) -> RefusedWriteError:
    """Log and count a write the fence refused; returns the error to raise (or to note).

    Args:
        kind: one of :data:`KINDS`.
        what: the write, in words (``"the writes of task 3f2a..."``, ``"status failed"``).
    """
    REFUSED.add(kind)
    log.warning(
        "run %s step %s: %s refused: this worker no longer holds the step's lease (it lapsed while the "
        "worker was paused or cut off; another worker may have taken the step over)",
        run_id,
        step,
        what,
    )
    return RefusedWriteError(f"{what} of run {run_id} step {step} refused: the lease is no longer held")
