"""A step job's writes besides its commit, each fenced by the step's lease (I1, I7): the run's status, a
finished task's pending writes (I2), the step's events, and the small hashes of a run's start (head,
answers, request records). A write the lease no longer covers changes nothing; it is logged and counted
(:mod:`graphq.worker.step.fence`). Each is retried in place through a Redis outage (:func:`outlast`).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from graphcore import keys
from graphcore.backend.connection import outlast
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.checkpoints.layout import encode_writes
from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import LeaseLostError
from graphcore.types import TaskWrites
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.fence import REFUSED, refused
from graphq.worker.step.lease import Lease

__all__ = ["append_event", "append_events", "fenced_hset", "put_writes", "set_status"]


def set_status(ctx: WorkerContext, run: RunRecord, lease: Lease, status: RunStatus, **options: Any) -> bool:
    """:meth:`RunStore.set_status` fenced by the step's lease (I1, I7), retried through a Redis outage.

    Raises:
        LeaseLostError: the lease is no longer this worker's; logged and counted
        (:mod:`graphq.worker.step.fence`).
    """
    try:
        return bool(outlast(ctx.runs.set_status, run, status, fence=(lease.key, lease.token), **options))
    except LeaseLostError:
        raise refused("status", run.id, run.step, f"status {status.value}") from None


def put_writes(ctx: WorkerContext, run: RunRecord, cp: Checkpoint, lease: Lease, tw: TaskWrites) -> None:
    """Persist a finished task's writes (I2), marking the run as having pending writes."""
    pending = (keys.pending_writes(run.thread_id, "", cp.id), {tw.task_id: encode_writes(tw)})
    fenced_hset(ctx, run, lease, "pending", pending, (keys.run(run.thread_id, run.id), {"partial": "1"}))


_told: weakref.WeakSet[Lease] = weakref.WeakSet()
"""Leases whose step was told (logged) that its events are refused: once a step, not once an event."""


def append_event(ctx: WorkerContext, run: RunRecord, lease: Lease, mode: str, step: int, data: Any) -> None:
    """Append one event of the step (custom chunk, retry, progress) to the run's stream: :func:`append_events`
    of one."""
    append_events(ctx, run, lease, [(mode, step, data)])


def append_events(
    ctx: WorkerContext, run: RunRecord, lease: Lease, events: Sequence[tuple[str, int, Any]]
) -> None:
    """Append ``events`` (``(mode, step, data)`` each) of the step to the run's stream in one script call
    (one round trip), only while this worker holds the lease (I1; retried through a Redis outage). A refused
    call is counted (in the run hash and :data:`graphq.worker.step.fence.REFUSED`); the node goes on (its
    writes and commit will be refused too)."""
    args: list[Any] = [lease.token]
    for mode, step, data in events:
        fields = encode_event(mode, step, data)
        args += [fields["mode"], fields["step"], fields["data"]]
    script_keys = [lease.key, keys.run(run.thread_id, run.id), keys.run_events(run.thread_id, run.id)]
    if outlast(script(ctx.kv, "fenced_xadd"), keys=script_keys, args=args):
        return
    if lease in _told:
        REFUSED.add("events")
        return
    _told.add(lease)
    what = f"a {events[0][0]} event" if len(events) == 1 else f"{len(events)} {events[0][0]} events"
    refused("events", run.id, run.step, f"{what} (and any later one of this step)")


_WHAT = {
    "pending": "a task's pending writes",
    "head": "the run's head",
    "answers": "the branch run's answers",
    "requests": "the run's request records",
}


def fenced_hset(
    ctx: WorkerContext, run: RunRecord, lease: Lease, kind: str, *writes: tuple[str, dict[str, Any]]
) -> None:
    """HSET each ``(hash key, fields)`` of ``writes`` in one script, only while this worker holds the step's
    lease (I1); retried through a Redis outage.

    Raises:
        LeaseLostError: the lease is no longer this worker's; nothing was written (logged and counted).
    """
    args: list[Any] = [lease.token, kind]
    for _, fields in writes:
        args.append(len(fields))
        args += [x for pair in fields.items() for x in pair]
    thread_keys = keys.thread_keys(run.thread_id)
    script_keys = [lease.key, keys.run(run.thread_id, run.id), thread_keys, *(key for key, _ in writes)]
    if not outlast(script(ctx.kv, "fenced_hset"), keys=script_keys, args=args):
        raise refused(kind, run.id, run.step, _WHAT[kind])
