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
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from redis.exceptions import WatchError

from graphcore import keys
from graphcore.backend.admission import AdmissionQueue, stage_admit, stage_release
from graphcore.backend.runs import TERMINAL, RunRecord, RunStore
from graphcore.errors import PermanentError

__all__ = [
    "MULTITASK_POLICIES",
    "Multitask",
    "StepQueue",
    "ThreadBusyError",
    "hand_over",
    "hand_over_many",
    "mark_busy",
]

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
    for it (its first step job is enqueued when admitted, R8), in one MULTI (:func:`hand_over_many` of one).

    Waiting runs that ended meanwhile (cancelled in line) are skipped. A no-op when ``run_id`` is not the
    thread's active run.

    Returns:
        The id of the run now active, or None when the thread is idle.
    """
    return hand_over_many(kv, runs, queue, [(thread_id, run_id)]).get(thread_id)


def hand_over_many(
    kv: Any, runs: RunStore, queue: StepQueue, ended: Sequence[tuple[str, str]]
) -> dict[str, str | None]:
    """:func:`hand_over` for each ``(thread, run)`` of ``ended`` (runs that ended), all in one WATCH
    transaction, in a fixed number of round trips however many they are (a bulk cancel's page).

    Returns:
        For each thread whose active run was one of ``ended``: the id of its run now active (None: idle).
    """
    watched = [k for thread, _ in ended for k in (keys.thread_active(thread), keys.thread_waiting(thread))]
    while ended:
        with kv.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(*watched)
                active = pipe.mget([keys.thread_active(thread) for thread, _ in ended])
                # the ended runs active on their threads (one a thread): their threads are handed over
                mine = dict((t, r) for (t, r), a in zip(ended, active, strict=True) if a == r.encode())
                lines = _waiting_lines(kv, runs, list(mine))
                pipe.multi()
                for thread, run_id in mine.items():
                    dropped, nxt = lines[thread]
                    stage_release(pipe, kv, queue, thread, run_id)
                    if nxt is None:
                        pipe.delete(keys.thread_active(thread))
                        pipe.zrem(keys.busy_threads(), thread)
                    else:
                        pipe.set(keys.thread_active(thread), nxt.id, keepttl=True)  # its expiry stays (K3)
                        mark_busy(pipe, thread)
                        stage_admit(pipe, kv, queue, nxt)
                    if dropped:
                        pipe.ltrim(keys.thread_waiting(thread), dropped, -1)
                pipe.execute()
                return {t: getattr(lines[t][1], "id", None) for t in mine}
            except WatchError:
                continue
    return {}


def _waiting_lines(
    kv: Any, runs: RunStore, threads: Sequence[str]
) -> dict[str, tuple[int, RunRecord | None]]:
    """For each thread, how many runs leave the head of its waiting line (those that ended meanwhile, and
    the first that has not, which becomes active) and that first run (None: none is left). Three round
    trips: the lines, their runs' statuses, the records of the first ones."""
    pipe = kv.pipeline(transaction=False)
    for thread in threads:
        pipe.lrange(keys.thread_waiting(thread), 0, -1)
    lines = {t: [r.decode() for r in line] for t, line in zip(threads, pipe.execute(), strict=True)}
    pipe = kv.pipeline(transaction=False)
    for thread, line in lines.items():
        for run_id in line:
            pipe.hget(keys.run(thread, run_id), "status")
    statuses = iter(pipe.execute())
    first: dict[str, tuple[int, str | None]] = {}
    for thread, line in lines.items():
        live = [s is not None and s.decode() not in TERMINAL for s in (next(statuses) for _ in line)]
        at = live.index(True) if True in live else None
        first[thread] = (len(line), None) if at is None else (at + 1, line[at])
    records = {r.id: r for r in runs.fetch([(i, t) for t, (_, i) in first.items() if i is not None])}
    return {t: (n, None if i is None else records.get(i)) for t, (n, i) in first.items()}


def mark_busy(pipe: Any, thread_id: str) -> None:
    """Note on ``pipe`` that ``thread_id`` has an active run now (the reaper finds one whose run ended
    without a hand-over, see :func:`graphcore.keys.busy_threads`)."""
    pipe.zadd(keys.busy_threads(), {thread_id: int(time.time() * 1000)})
