"""One active run per thread (I3): the thread's active run, and the runs waiting behind it.

A thread is busy while its active run is Queued, Running or AwaitingInput. A new run on a busy thread is
refused (multitask policy ``reject``) or waits in line (``enqueue``, the default); when the active run ends,
:func:`hand_over` makes the next waiting run active and enqueues its first step.

The hand-over runs right after the run's terminal transition, not inside it: a process that dies in
between leaves the thread's next run waiting until the reaper hands the thread over (it looks at threads
busy for longer than ``GRAPHQ_LEASE_TTL_S``, :func:`mark_busy`). The same MULTI gives the ended run's slot
back and asks one for the next run (:mod:`graphcore.backend.admission`, R8).
"""

from __future__ import annotations

import time
from typing import Any, Literal, Protocol

from redis.exceptions import WatchError

from graphcore import keys
from graphcore.backend.admission import AdmissionQueue, stage_admit, stage_release
from graphcore.backend.runs import RunRecord, RunStore
from graphcore.errors import PermanentError

__all__ = ["MULTITASK_POLICIES", "Multitask", "StepQueue", "ThreadBusyError", "hand_over", "mark_busy"]

Multitask = Literal["reject", "enqueue"]
MULTITASK_POLICIES: tuple[Multitask, ...] = ("reject", "enqueue")


class StepQueue(AdmissionQueue, Protocol):
    """Puts step jobs on the queue (the worker package provides the RQ one): :meth:`stage`, inside the
    caller's MULTI pipeline, for a step job queued again by hand (the reaper's re-enqueue of a lost job),
    and what the scripts that write a step job need (:class:`~graphcore.backend.admission.AdmissionQueue`:
    admission's first step job of a run, a commit's next step job)."""

    def stage(self, pipe: Any, run: RunRecord) -> None:
        """Queue the job of ``run``'s step number ``run.step`` on ``pipe``."""


class ThreadBusyError(PermanentError):
    """A run was refused because its thread has an active run and the multitask policy is ``reject``."""


def hand_over(kv: Any, runs: RunStore, queue: StepQueue, thread_id: str, run_id: str) -> str | None:
    """After ``run_id`` ended: give its slot back, make the thread's next waiting run active and ask a slot
    for it (its first step job is enqueued when admitted, R8), in one MULTI.

    Waiting runs that ended meanwhile (cancelled in line) are skipped. A no-op when ``run_id`` is not the
    thread's active run.

    Returns:
        The id of the run now active, or None when the thread is idle.
    """
    active_key, waiting_key = keys.thread_active(thread_id), keys.thread_waiting(thread_id)
    while True:
        with kv.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(active_key, waiting_key)
                if pipe.get(active_key) != run_id.encode():
                    return None
                nxt = _next_waiting(pipe, runs, thread_id, waiting_key)
                pipe.multi()
                stage_release(pipe, kv, queue, thread_id, run_id)
                if nxt is None:
                    pipe.delete(active_key)
                    pipe.zrem(keys.busy_threads(), thread_id)
                else:
                    pipe.lpop(waiting_key)
                    pipe.set(active_key, nxt.id, keepttl=True)  # the thread's expiry stays (K3)
                    mark_busy(pipe, thread_id)
                    stage_admit(pipe, kv, queue, nxt)
                pipe.execute()
                return None if nxt is None else nxt.id
            except WatchError:
                continue


def mark_busy(pipe: Any, thread_id: str) -> None:
    """Note on ``pipe`` that ``thread_id`` has an active run now (the reaper finds one whose run ended
    without a hand-over, see :func:`graphcore.keys.busy_threads`)."""
    pipe.zadd(keys.busy_threads(), {thread_id: int(time.time() * 1000)})


def _next_waiting(pipe: Any, runs: RunStore, thread_id: str, waiting_key: str) -> RunRecord | None:
    """The first waiting run that has not ended; ended ones are dropped from the line (immediate mode)."""
    while (raw := pipe.lindex(waiting_key, 0)) is not None:
        record = runs.get(raw.decode(), thread_id)
        if not record.terminal:
            return record
        pipe.lpop(waiting_key)
    return None
