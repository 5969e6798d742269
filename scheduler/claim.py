"""Claiming fires (K1): each (schedule, fire time) gives exactly one outcome and at most one run, whatever
the number of scheduler replicas, their clocks and how their passes overlap.

The claims of a batch of schedules and the runs they start go in one transaction: the client's own run
creation (:meth:`graphcore.backend.client.Client.enqueue_guarded`, the path every run takes) with the
schedules' state keys WATCHed, checked unchanged since the pass read them, and ``claim_fire.lua`` staged
for each fire (a compare-and-set of the schedule's cursor, the history entry, the run's schedule fields).
EXEC applies the claims and the runs together, or nothing when another replica claimed first; the run id
is derived from (schedule, fire time) (:meth:`graphq.scheduler.schedules.Schedule.run_id`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.client import Client, Guard, RunRequest
from graphcore.backend.lua import stage
from graphcore.settings import get_settings
from graphq.scheduler.plan import Decision, iso
from graphq.scheduler.schedules import Fire, Schedule, entry_json

__all__ = ["Batch", "Claimed", "batches", "commit", "run_request"]


def run_request(schedule: Schedule, fire_ms: int, run_id: str) -> RunRequest:
    """The run of a fire: the schedule's workflow, input, tenant and thread (a new thread when it has none),
    its metadata naming the schedule and the fire time."""
    metadata = {"schedule": schedule.name, "fire_time": iso(fire_ms)}
    return RunRequest(
        schedule.workflow,
        schedule.input,
        thread_id=schedule.thread,
        tenant=schedule.tenant,
        config={"metadata": metadata},
        run_id=run_id,
    )


@dataclass
class Batch:
    """The decisions of some schedules, each with the raw state they were planned from."""

    items: list[tuple[Schedule, bytes | None, list[Decision]]]


@dataclass(frozen=True)
class Claimed:
    """One fire claimed: its schedule, decision and lag (seconds from its due time to the claim, on the
    scheduler's clock plus the real time the pass took until then)."""

    schedule: str
    decision: Decision
    lag_s: float


def _args(schedule: Schedule, decision: Decision, at: str, lag_s: float, thread: str, cap: int) -> list[Any]:
    """ARGV of ``claim_fire.lua`` for ``decision``."""
    entry = Fire(
        fire_time=iso(decision.fire_ms if decision.first_ms is None else decision.first_ms),
        outcome=decision.outcome,
        run_id=decision.run_id if decision.run else None,
        at=at,
        lag_s=round(lag_s, 3),
        note=decision.note,
    )
    return [
        decision.kind,
        decision.fire_ms,
        schedule.first_cursor_ms(),
        decision.run_id if decision.run else "",
        thread,
        "1" if decision.buffer else "0",
        cap,
        schedule.name,
        iso(decision.fire_ms),
        entry_json(entry),
    ]


def commit(
    client: Client,
    batch: Batch,
    now_ms: int,
    started: float,
    clock: Callable[[], float],
    cap: int | None = None,
    absent: Sequence[str] = (),
) -> list[Claimed]:
    """Claim the batch's fires and create their runs in one transaction.

    Args:
        now_ms: the scheduler's clock when the pass planned (ms since the epoch).
        started: ``time.perf_counter()`` when the pass began (the lag adds the real time since).
        clock: the scheduler's clock (epoch seconds), for the entries' ``at``.
        cap: history entries kept per schedule (default ``GRAPHQ_SCHEDULE_HISTORY_LENGTH``).
        absent: keys that must not exist (WATCHed with the states; a manual trigger's run).

    Returns:
        The fires claimed; empty when a schedule's state changed since the pass read it (another replica
        claimed) or a key of ``absent`` exists: nothing was written, the next pass plans again.

    Raises:
        DisabledError: the kill switch is off; nothing written.
    """
    state_keys = [keys.schedule_state(s.name) for s, _, _ in batch.items]
    planned = [raw for _, raw, _ in batch.items]
    requests: list[RunRequest] = []
    for schedule, _, decisions in batch.items:
        requests += [run_request(schedule, d.fire_ms, d.run_id or "") for d in decisions if d.run]
    claimed: list[Claimed] = []
    kept = cap if cap is not None else get_settings().schedule_history_length

    def check(pipe: Any) -> bool:
        return list(pipe.mget(state_keys)) == planned and not (absent and pipe.exists(*absent))

    def staged(pipe: Any) -> None:
        claimed.clear()
        lag_base = time.perf_counter() - started
        at = iso(int(clock() * 1000))
        for schedule, _, decisions in batch.items:
            for decision in decisions:
                lag = (now_ms - decision.due_ms) / 1000 + lag_base
                thread = schedule.thread or decision.run_id or ""
                claim_keys = [keys.schedule_state(schedule.name), keys.schedule_fires(schedule.name)]
                if decision.run:
                    claim_keys.append(keys.run(thread, decision.run_id or ""))
                stage(pipe, "claim_fire", claim_keys, _args(schedule, decision, at, lag, thread, kept))
                claimed.append(Claimed(schedule.name, decision, lag))

    done = client.enqueue_guarded(requests, Guard([*state_keys, *absent], check, staged))
    if done is None:
        return []
    after = time.perf_counter() - started  # the runs exist from here: the lag of each fire is measured to it
    return [Claimed(c.schedule, c.decision, (now_ms - c.decision.due_ms) / 1000 + after) for c in claimed]


def batches(items: Sequence[tuple[Schedule, bytes | None, list[Decision]]], size: int) -> list[Batch]:
    """``items`` (schedules with decisions) cut into batches of about ``size`` decisions (a schedule's
    decisions stay in one batch)."""
    found: list[Batch] = []
    current, count = Batch([]), 0
    for item in items:
        if not item[2]:
            continue
        current.items.append(item)
        count += len(item[2])
        if count >= size:
            found.append(current)
            current, count = Batch([]), 0
    if current.items:
        found.append(current)
    return found
