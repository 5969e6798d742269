"""What a scheduler pass does with one schedule (K1), decided without Redis: which fires are due, and what
becomes of each (started, skipped-overlap, missed, caught-up, buffered), by the overlap and catch-up rules.

A fire at time F with jitter J is due at F + J. Found within ``GRAPHQ_SCHEDULER_GRACE_S`` of that, it is on
time and starts a run; found later, it was missed (the scheduler was down or behind) and the catch-up policy
decides: ``skip`` records it missed, ``latest`` starts the newest of the late fires (the others missed),
``all`` starts every one. Fires older than the schedule's catch-up window are missed whatever the policy
(recorded as one entry). The overlap policy applies to every fire that would start a run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from graphq.scheduler.schedules import Schedule, ScheduleState

__all__ = ["Decision", "iso", "jitter_ms", "manual", "plan"]

FIRES_PER_PASS = 1000
"""Fires of one schedule handled in one pass at most (a long-missed span of a frequent schedule is
recorded as one entry; the rest, if more, in the next pass)."""


def iso(ms: int) -> str:
    """An epoch time in ms as ISO-8601 UTC, ``2026-09-10T01:25:00Z`` (milliseconds when not 0)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    spec = "milliseconds" if ms % 1000 else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


def jitter_ms(schedule: Schedule, fire_ms: int) -> int:
    """The fixed offset of the fire at ``fire_ms``: in ``[0, jitter_s)``, the same on every replica (a hash of
    the schedule's name and the fire time)."""
    span = int(schedule.jitter_s * 1000)
    if span <= 0:
        return 0
    digest = hashlib.sha256(f"{schedule.name}@{fire_ms}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % span


@dataclass
class Decision:
    """One claim to make: ``kind`` is ``next`` (the fire after the cursor; the cursor moves to
    ``fire_ms``), ``buffered`` (the fire kept waiting), or ``manual`` (``schedules trigger``).

    Attributes:
        outcome: what the history records (see :data:`graphq.scheduler.schedules.OUTCOMES`).
        run: whether the fire starts a run.
        buffer: whether the fire is kept waiting (``buffer_one``).
        due_ms: when the fire was due (its time plus its jitter), ms.
        note: a note for the history entry.
        first_ms: a missed span's first fire, the time its history entry shows (else ``fire_ms``).
    """

    kind: str
    fire_ms: int
    outcome: str
    due_ms: int
    run: bool = False
    buffer: bool = False
    note: str = ""
    run_id: str | None = field(default=None)
    first_ms: int | None = None


@dataclass
class _Overlap:
    """The overlap state through one pass: is a run of the schedule active, which fire waits."""

    schedule: Schedule
    active: bool
    buffered: int | None

    def decide(self, kind: str, fire_ms: int, due_ms: int, outcome: str) -> Decision:
        """A decision for a fire that would start a run (``outcome`` started or caught-up)."""
        policy = self.schedule.overlap
        if self.active and policy == "skip":
            return Decision(kind, fire_ms, "skipped-overlap", due_ms)
        if self.active and policy == "buffer_one":
            if self.buffered is not None:
                return Decision(kind, fire_ms, "skipped-overlap", due_ms)
            self.buffered = fire_ms
            return Decision(kind, fire_ms, "buffered", due_ms, buffer=True)
        self.active = True
        return Decision(kind, fire_ms, outcome, due_ms, run=True, run_id=self.schedule.run_id(fire_ms))


def manual(schedule: Schedule, active: bool, buffered_ms: int | None, now_ms: int, run_id: str) -> Decision:
    """The decision of ``schedules trigger`` at ``now_ms``, paused or not: the overlap policy applied as to
    any fire (``active``: the schedule's latest run has not ended; ``buffered_ms``: a fire kept waiting):
    a run ``run_id`` started, skipped-overlap, or buffered; noted ``triggered``."""
    decision = _Overlap(schedule, active, buffered_ms).decide("manual", now_ms, now_ms, "started")
    decision.note = "triggered"
    decision.run_id = run_id if decision.run else None
    return decision


def _missed_span(schedule: Schedule, cursor_ms: int, window_ms: int, until_ms: int) -> Decision | None:
    """One ``missed`` decision for the fires after the cursor and older than the catch-up window (the cursor
    moves to the window's start), or None when there are none."""
    first = int(
        schedule.cron_expr.next_after(datetime.fromtimestamp(cursor_ms / 1000, UTC)).timestamp() * 1000
    )
    if first > window_ms or first > until_ms:
        return None
    note = f"every fire from {iso(first)} until {iso(window_ms)} (older than the catch-up window)"
    return Decision("next", window_ms, "missed", first, note=note, first_ms=first)


def _due(schedule: Schedule, after_ms: int, until_ms: int, now_ms: int) -> list[tuple[int, int]]:
    """``(fire, due)`` ms of the fires in ``(after, until]`` that are due by ``now_ms``, oldest first
    (stops at the first one not due yet: a later fire waits for it)."""
    moment = datetime.fromtimestamp
    fires = schedule.cron_expr.between(
        moment(after_ms / 1000, UTC), moment(until_ms / 1000, UTC), FIRES_PER_PASS
    )
    due = []
    for fire in fires:
        fire_ms = int(fire.timestamp() * 1000)
        at = fire_ms + jitter_ms(schedule, fire_ms)
        if at > now_ms:
            break
        due.append((fire_ms, at))
    return due


def plan(
    schedule: Schedule, state: ScheduleState, now_ms: int, grace_ms: int, active: bool
) -> list[Decision]:
    """The claims one pass makes for ``schedule`` at ``now_ms`` (ms since the epoch, the scheduler's clock),
    in order. ``active``: the schedule's latest run has not ended."""
    if schedule.paused:
        return []
    overlap = _Overlap(schedule, active, state.buffered_ms)
    decisions: list[Decision] = []
    if state.buffered_ms is not None and not active and schedule.overlap == "buffer_one":
        fire = state.buffered_ms
        overlap.buffered = None
        decisions.append(overlap.decide("buffered", fire, fire + jitter_ms(schedule, fire), "started"))
    until = now_ms if schedule.end is None else min(now_ms, int(schedule.end.timestamp() * 1000))
    window = now_ms - int(schedule.catchup_window_s * 1000)
    cursor = state.cursor_ms
    if cursor < window:
        span = _missed_span(schedule, cursor, window, until)
        decisions += [span] if span is not None else []
        cursor = window
    if cursor >= until:
        return decisions
    due = _due(schedule, cursor, until, now_ms)
    late = [fire for fire, at in due if now_ms - at > grace_ms]
    for fire, at in due:
        if now_ms - at <= grace_ms:
            decisions.append(overlap.decide("next", fire, at, "started"))
        elif schedule.catchup == "all" or (schedule.catchup == "latest" and fire == late[-1]):
            decisions.append(overlap.decide("next", fire, at, "caught-up"))
        else:
            decisions.append(Decision("next", fire, "missed", at))
    return decisions
