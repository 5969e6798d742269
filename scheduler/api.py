"""The Python face of schedules (K1): :class:`Schedules`, what ``graphq schedules ...`` calls.

from graphq.scheduler import Schedules
schedules = Schedules(client)            # a graphcore Client with a step queue
schedules.add("nightly", workflow="etl", cron="0 2 * * *", tz="Europe/Paris")
schedules.next("nightly", 5)             # the next 5 fire times (UTC)
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from graphcore import keys
from graphcore.backend.client import Client, RunRequest, check_request
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, PermanentError, RunNotFoundError
from graphq.scheduler.claim import Batch, commit, run_request
from graphq.scheduler.loop import live_schedulers, not_loaded
from graphq.scheduler.plan import Decision, jitter_ms, manual
from graphq.scheduler.schedules import (
    Fire,
    Schedule,
    ScheduleNotFoundError,
    ScheduleState,
    ScheduleStore,
    TriggerSkippedError,
    problem_text,
)

__all__ = ["Schedules", "check_schedule", "due_time", "utc_text"]


class Schedules:
    """Add, update, list, pause, resume, remove, trigger schedules; their next fire times and fire history.

    Args:
        client: the client that creates the runs (it validates workflows and inputs with its registry).
        clock: now, epoch seconds (tests pass a simulated one).
    """

    def __init__(self, client: Client, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.store = ScheduleStore(client.kv)
        self.clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def add(self, name: str, *, workflow: str, cron: str, **options: Any) -> Schedule:
        """Add a schedule; ``options`` are :class:`~graphq.scheduler.schedules.Schedule` fields (``tz``,
        ``input``,
        ``tenant``, ``thread``, ``overlap``, ``catchup``, ``catchup_window_s``, ``jitter_s``, ``start``,
        ``end``). Its first fire is the first after now (or after ``start``).

        Raises:
            ConfigError: a bad name, expression, zone, policy, id or start/end; an end in the past or no
                fire between now (or ``start``) and ``end``; a jitter at or above the shortest time between
                the fires; the name exists.
            UnknownWorkflowError: this client's registry has no such workflow.
            InvalidUpdateError, InputTypeError, SerializationError, InputTooLargeError: the input is one
                the workflow refuses.
        """
        now = self._now()
        schedule = Schedule.build(name=name, workflow=workflow, cron=cron, created_at=now, **options)
        check_schedule(self.client.registry, schedule, now)
        self.store.add(schedule)
        return schedule

    def update(self, name: str, **changes: Any) -> Schedule:
        """Change ``name`` in place: ``changes`` are :meth:`add`'s options (and ``workflow``, ``cron``); the
        others keep their values, and so do its state (cursor, latest run: the overlap policy still sees an
        active run; a buffered fire) and its history. A new ``cron``, ``tz`` or ``start`` moves the cursor to
        now (the new timetable's fires from now on, none caught up). Also fixes a stored schedule this
        process cannot read (e.g. ``update(name, cron=...)`` of one that never matches).

        Raises:
            ScheduleNotFoundError: no such schedule.
            ConfigError, UnknownWorkflowError, ...: as :meth:`add` (nothing changed).
        """
        fields = self.store.stored(name) | changes | {"name": name}
        schedule = Schedule.build(**fields)
        changed = bool({"cron", "tz", "start", "end"} & changes.keys())
        check_schedule(self.client.registry, schedule, self._now(), check_end=changed)
        self.store.update(schedule, int(self.clock() * 1000))
        return schedule

    def list(self, problems: dict[str, str] | None = None) -> list[Schedule]:
        """Every schedule, by name.

        Args:
            problems: given, receives the name and why (one line) of each stored schedule this process
                cannot read (a zone its tzdata lacks, an expression that never matches), left out of the
                list; None: such a schedule raises.

        Raises:
            ConfigError, ValidationError: a stored schedule cannot be read (``problems`` None).
        """
        if problems is None:
            return self.store.all()
        return self.store.all(lambda name, exc: problems.update({name: problem_text(exc)}))

    def stored(self, name: str) -> dict[str, Any]:
        """``name``'s fields as stored, unchecked (for a schedule that cannot be read here).

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        return self.store.stored(name)

    def get(self, name: str) -> Schedule:
        """The schedule ``name``.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        return self.store.get(name)

    def state(self, name: str) -> ScheduleState:
        """The schedule's progress (latest fire handled, latest run, a fire kept waiting)."""
        return self.store.state(self.store.get(name))

    def latest_run(self, name: str) -> str | None:
        """The id of ``name``'s latest run, its chain followed: the reaper's continuation of a run whose
        worker was lost (R14) rather than the failed run the fire started; None before its first run."""
        state = self.state(name)
        if state.last_run is None:
            return None
        try:
            return self.client.chain(state.last_run)[-1].id
        except RunNotFoundError:
            return state.last_run  # gone (retention)

    def pause(self, name: str) -> Schedule:
        """Stop ``name`` firing until :meth:`resume`."""
        return self.store.set_paused(name, True, int(self.clock() * 1000))

    def resume(self, name: str) -> Schedule:
        """Let ``name`` fire again from now on (fires while paused are not caught up)."""
        return self.store.set_paused(name, False, int(self.clock() * 1000))

    def remove(self, name: str) -> None:
        """Delete ``name``, its state and history (its runs stay)."""
        self.store.remove(name)

    def history(self, name: str, limit: int | None = None) -> builtins.list[Fire]:
        """``name``'s fires, newest first: time, outcome, run id, lag."""
        return self.store.history(name, limit)

    def next(self, name: str, count: int = 5, after: datetime | None = None) -> builtins.list[datetime]:
        """The next ``count`` fire times (UTC) after ``after`` (default now), within the schedule's
        start/end (fewer when its end comes first; jitter not added)."""
        schedule = self.store.get(name)
        moment = after or self._now()
        if schedule.start is not None and schedule.start > moment:
            moment = schedule.start.astimezone(UTC) - timedelta(
                milliseconds=1
            )  # a fire at the start itself counts
        found: builtins.list[datetime] = []
        for fire in schedule.cron_expr.after(moment):
            if len(found) >= count or (schedule.end is not None and fire > schedule.end):
                break
            found.append(fire)
        return found

    def next_due(self, name: str) -> tuple[datetime, datetime] | None:
        """The next fire still to come and when it is due (its time plus its jitter), UTC: the first fire
        after the newest one handled (the cursor) that is not due before now. With ``--jitter`` it can be a
        fire whose time has passed: the 14:39 fire of a schedule with 50 s of jitter, due at 14:39:47, is
        still the next at 14:39:20. None when paused or none is left before its end."""
        schedule = self.store.get(name)
        if schedule.paused:
            return None
        now = self._now()
        cursor = datetime.fromtimestamp(self.store.state(schedule).cursor_ms / 1000, UTC)
        moment = max(cursor, now - timedelta(seconds=schedule.jitter_s))
        for fire in self.next(name, 3, after=moment):  # jitter below the gap: the 2nd is due after now
            due = due_time(schedule, fire)
            if due >= now:
                return fire, due
        return None

    def summary(self, schedule: Schedule, live: builtins.list[dict[str, Any]]) -> dict[str, Any]:
        """``schedule``'s fields, ``state``, ``latest_run``, ``next_fire`` and ``next_due`` (ISO UTC, None
        when paused or none is left), and ``problem`` (else None): it cannot be planned here, or a live
        scheduler (``live``: :func:`~graphq.scheduler.loop.live_schedulers`) cannot load its workflow. The
        JSON of ``graphq schedules list`` / ``show``."""
        state = self.state(schedule.name)
        try:
            upcoming = self.next_due(schedule.name)
        except (ValueError, PermanentError) as exc:  # croniter's errors are ValueErrors
            return self.unreadable(schedule.name, problem_text(exc))
        return schedule.model_dump(mode="json") | {
            "state": state.model_dump(),
            "latest_run": self.latest_run(schedule.name),
            "next_fire": utc_text(upcoming[0]) if upcoming else None,
            "next_due": utc_text(upcoming[1]) if upcoming else None,
            "problem": not_loaded(schedule, live),
        }

    def unreadable(self, name: str, why: str) -> dict[str, Any]:
        """A schedule this process cannot read or plan: its fields as stored, and why in ``problem`` (the
        scheduler skips it); ``state``, ``latest_run``, ``next_fire``, ``next_due`` None."""
        return self.stored(name) | {
            "state": None,
            "latest_run": None,
            "next_fire": None,
            "next_due": None,
            "problem": why,
        }

    def summaries(self) -> builtins.list[dict[str, Any]]:
        """:meth:`summary` of every schedule, by name, those that cannot be read here included."""
        problems: dict[str, str] = {}
        live = live_schedulers(self.client.kv)
        found = [self.summary(s, live) for s in self.list(problems)]
        found += [self.unreadable(n, why) for n, why in problems.items()]
        return sorted(found, key=lambda s: str(s["name"]))

    def shown(self, name: str) -> dict[str, Any]:
        """:meth:`summary` of ``name``, also when it cannot be read here.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        try:
            schedule = self.get(name)
        except ScheduleNotFoundError:
            raise
        except (ValueError, PermanentError) as exc:
            return self.unreadable(name, problem_text(exc))
        return self.summary(schedule, live_schedulers(self.client.kv))

    def buffered_text(self, name: str) -> str:
        """What ``schedules trigger`` says when :meth:`trigger` buffered the fire (returned None)."""
        latest = self.latest_run(name)
        paused = "; the schedule is paused: after resume" if self.get(name).paused else ""
        return (
            f"schedule {name}: trigger buffered: its run {latest} is still active (--overlap buffer_one); it "
            f"starts when that run ends{paused}"
        )

    def trigger(self, name: str) -> str | None:
        """Fire ``name`` now, outside its timetable, paused or not, with its overlap policy applied as to any
        fire (as Temporal's trigger): while its latest run (chain followed) is active, ``skip`` starts
        nothing and ``buffer_one`` keeps the fire waiting (it starts when that run ends, as a buffered fire:
        not while the schedule is paused); ``allow`` starts it anyway. Recorded in its history (note
        ``triggered``).

        Returns:
            The run id (``NAME-<now>-manual``; ``...-manual-2``, ``-3``... for more triggers in the same
            millisecond), or None when the fire was buffered.

        Raises:
            ScheduleNotFoundError: no such schedule.
            TriggerSkippedError: skipped-overlap (the message names the active run and the policy).
        """
        schedule = self.store.get(name)
        now_ms = int(self.clock() * 1000)
        base, n = f"{schedule.run_id(now_ms)}-manual", 1
        while True:
            run_id = base if n == 1 else f"{base}-{n}"
            run_key = keys.run(schedule.thread or run_id, run_id)
            if self.client.kv.exists(run_key):  # triggered in this millisecond already
                n += 1
                continue
            raw = self.store.states([schedule])[0]  # again when a scheduler claimed a fire meanwhile
            state = ScheduleState.load(raw, schedule)
            active = self._active_run(schedule)
            decision = manual(schedule, active is not None, state.buffered_ms, now_ms, run_id)
            batch = Batch([(schedule, raw, [decision])])
            absent = [run_key] if decision.run else []
            if commit(self.client, batch, now_ms, time.perf_counter(), self.clock, absent=absent):
                return _triggered(schedule, decision, active)

    def _active_run(self, schedule: Schedule) -> str | None:
        """The id of ``schedule``'s latest run (chain followed) when it has not ended and the overlap policy
        looks at it (not ``allow``); else None."""
        latest = None if schedule.overlap == "allow" else self.latest_run(schedule.name)
        if latest is None:
            return None
        try:
            return None if self.client.get_run(latest).terminal else latest
        except RunNotFoundError:
            return None  # gone (retention)


def _triggered(schedule: Schedule, decision: Decision, active: str | None) -> str | None:
    """The run id of a trigger's ``decision``, None when buffered.

    Raises:
        TriggerSkippedError: the decision is skipped-overlap.
    """
    if decision.run:
        return decision.run_id
    if decision.buffer:
        return None
    why = "a fire is buffered already" if schedule.overlap == "buffer_one" else "--overlap skip"
    raise TriggerSkippedError(
        f"schedule {schedule.name}: trigger skipped: its run {active} is still active ({why}; recorded "
        "skipped-overlap)"
    )


def check_schedule(registry: Registry, schedule: Schedule, now: datetime, check_end: bool = True) -> None:
    """What a schedule's fields alone do not say, checked without Redis: it fires before its end
    (``check_end``), its jitter is below the shortest time between its fires, and ``registry`` takes its
    workflow and input (as a run of a fire: :func:`~graphcore.backend.client.check_request`).

    Raises:
        ConfigError: ``end`` in the past, or no fire between ``now`` (or ``start``) and ``end``; ``jitter_s``
            at or above the shortest gap (naming both).
        UnknownWorkflowError, InvalidUpdateError, InputTypeError, SerializationError, InputTooLargeError:
            see :meth:`Schedules.add`.
    """
    if check_end:
        _check_fires(schedule, now)
    if schedule.jitter_s > 0:
        gap = schedule.cron_expr.shortest_gap_s(now)
        if schedule.jitter_s >= gap:
            raise ConfigError(
                f"schedule {schedule.name}: --jitter {schedule.jitter_s:g} s is not below the shortest "
                f"time between its fires, {gap:g} s ({schedule.cron!r} in {schedule.tz}): a fire could "
                "start after the next one"
            )
    check_request(registry, _probe(schedule))


def utc_text(moment: datetime) -> str:
    """``moment`` in UTC, ISO-8601 with ``Z`` (``2026-03-01T02:00:00Z``)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def due_time(schedule: Schedule, fire: datetime) -> datetime:
    """When ``schedule``'s fire at ``fire`` (aware) is due: its time plus its jitter offset (the same on every
    replica; none without ``jitter_s``), UTC."""
    return fire + timedelta(milliseconds=jitter_ms(schedule, int(fire.timestamp() * 1000)))


def _check_fires(schedule: Schedule, now: datetime) -> None:
    """Refuse a schedule that would never fire: its ``end`` is past, or no fire of its expression lies
    between now (or its ``start``, when later) and ``end``.

    Raises:
        ConfigError: one line naming the end (and the expression, zone and span).
    """
    if schedule.end is None:
        return
    if schedule.end <= now:
        raise ConfigError(
            f"schedule {schedule.name}: --end {schedule.end.isoformat()} is in the past (now "
            f"{now.isoformat(timespec='seconds')}): it would never fire"
        )
    since = (
        max(now, schedule.start.astimezone(UTC) - timedelta(milliseconds=1))
        if schedule.start is not None
        else now
    )
    if schedule.cron_expr.next_after(since) > schedule.end:
        begin = f"now {now.isoformat(timespec='seconds')}"
        if schedule.start is not None and schedule.start > now:
            begin = f"--start {schedule.start.isoformat()}"
        raise ConfigError(
            f"schedule {schedule.name}: no fire of {schedule.cron!r} in {schedule.tz} between {begin} "
            f"and --end {schedule.end.isoformat()}: it would never fire"
        )


def _probe(schedule: Schedule) -> RunRequest:
    """The run request a fire of ``schedule`` would make (to validate its workflow and input up front)."""
    return run_request(schedule, int(schedule.created_at.timestamp() * 1000), schedule.run_id(0))
