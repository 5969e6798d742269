"""Schedules (K1): the definition (:class:`Schedule`), its progress (:class:`ScheduleState`), its fire
history (:class:`Fire`), and :class:`ScheduleStore`, which keeps them in Redis as JSON (keys in
:mod:`graphcore.keys`).

Schedules change at run time: every scheduler pass reads them all again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from redis.exceptions import WatchError

from graphcore import keys
from graphcore.errors import ConfigError, PermanentError
from graphq.scheduler.cron import Cron, in_gap, local_instant, parse_zone

__all__ = [
    "CATCHUP",
    "MAX_DURATION_S",
    "OUTCOMES",
    "OVERLAP",
    "Fire",
    "Schedule",
    "ScheduleNotFoundError",
    "ScheduleState",
    "ScheduleStore",
    "TriggerSkippedError",
    "parse_duration",
    "parse_time",
    "problem_text",
]

OVERLAP = ("skip", "allow", "buffer_one")
"""Overlap policies: while the schedule's previous run is still active, ``skip`` records the fire as
skipped-overlap, ``allow`` starts it anyway, ``buffer_one`` keeps it waiting (one at most; more are skipped)
and starts it when the previous run ends."""

CATCHUP = ("skip", "latest", "all")
"""Catch-up policies for fires missed (found later than ``GRAPHQ_SCHEDULER_GRACE_S``) within the catch-up
window: ``skip`` records them missed, ``latest`` starts the newest (the others missed), ``all`` starts
each."""

OUTCOMES = ("started", "skipped-overlap", "missed", "caught-up", "buffered")
"""What became of a fire, as its history entry says."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_ZERO = re.compile(r"0+(?:\.0*)?")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
MAX_DURATION_S = 3650 * 86_400
"""Longest duration an option takes (3650d, ten years): a longer one (a 400-digit number is infinite as a
float) was stored as null and made its schedule unreadable, not even removable."""


class ScheduleNotFoundError(PermanentError):
    """No schedule has the given name."""


class TriggerSkippedError(PermanentError):
    """``schedules trigger`` started no run: the schedule's latest run is still active and its overlap policy
    is ``skip`` (or ``buffer_one`` with a fire already waiting); recorded skipped-overlap in its history."""


def parse_duration(text: str, what: str = "duration", refuse_zero: str | None = None) -> float:
    """Seconds of a duration such as ``90s``, ``5m``, ``2h``, ``1d`` or ``1h30m``; ``0`` (no unit needed)
    or ``0s`` is 0 (none).

    Args:
        refuse_zero: given, a zero is refused, and the message ends with it (why, what to use instead).

    Raises:
        ConfigError: not ``0`` nor a sequence of ``<number><s|m|h|d>``; a zero with ``refuse_zero``; above
            :data:`MAX_DURATION_S`; names ``what``.
    """
    value = text.strip().lower()
    parts = _DURATION.findall(value)
    zero_ok = "" if refuse_zero else "; 0 (no unit needed) for none"
    if not _ZERO.fullmatch(value) and (not value or "".join(n + u for n, u in parts) != value):
        raise ConfigError(
            f"{what} {text!r} is invalid: use a number and a unit s, m, h or d (e.g. 90s, 5m, 2h){zero_ok}"
        )
    seconds = float(sum(float(n) * _UNIT_S[u] for n, u in parts))
    if seconds > MAX_DURATION_S:
        raise ConfigError(f"{what} {text!r} is invalid: use at most 3650d (ten years)")
    if seconds == 0 and refuse_zero:
        raise ConfigError(
            f"{what} {text!r} is invalid: use a duration above 0 (e.g. 90s, 5m, 2h): {refuse_zero}"
        )
    return seconds


def parse_time(
    text: str, zone: str | Callable[[], str] = "UTC", what: str = "time", after: bool = False
) -> datetime:
    """An ISO-8601 time (``2026-09-10T07:00``, ``2026-09-10 07:00+07:00``, ``...Z``) as an aware datetime; one
    without an offset is read in ``zone`` by the rules of fires: a wall time that does not exist (spring
    forward, 02:15 on 2026-03-08 in New York) is the first instant after the gap (03:00 EDT, 07:00Z), a
    repeated one (fall back) its first occurrence.

    Args:
        zone: the zone's name, or a function that returns it (called only for a time without an offset).
        after: read for ``--after`` (fires strictly later are listed): a time in a gap is 1 ms before the
            instant after the gap, so the fires at that instant (the gap's, such as 02:30) are listed.

    Raises:
        ConfigError: not ISO-8601 (names ``what``), or an unknown zone.
    """
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(
            f"{what} {text!r} is invalid: use ISO-8601, e.g. 2026-09-10T07:00 or ...+07:00"
        ) from None
    if parsed.tzinfo is not None:
        return parsed
    local = parse_zone(zone if isinstance(zone, str) else zone())
    instant = local_instant(parsed, local)  # UTC: arithmetic on a zoned datetime is on its wall time
    if after and in_gap(parsed, local):
        instant -= timedelta(milliseconds=1)
    return instant.astimezone(local)


def problem_text(exc: Exception) -> str:
    """One line of why a stored schedule cannot be read or planned (the first lines of ``exc``)."""
    return "; ".join(str(exc).splitlines()[:3])


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class Schedule(BaseModel):
    """One schedule: start ``workflow`` with ``input`` at every fire time of ``cron`` in zone ``tz``.

    Attributes:
        name: 1-100 letters, digits, ``_``, ``-``, starting with a letter or digit (it goes into run ids,
            and so into RQ's job ids, which allow no other characters).
        thread: the thread every run goes to (they queue on it, I3); None: each fire on a new thread.
        catchup_window_s: fires older than this (seconds) when found are missed whatever the policy.
        jitter_s: each fire starts up to this many seconds after its time (a fixed offset per fire, the same
            on every replica); keep it below the interval between fires.
        start, end: no fire before ``start`` or after ``end`` (aware datetimes; None: no bound).
        paused: a paused schedule does not fire; fires while paused are not caught up on resume.
        created_at: when it was added (UTC); its first fire is the first after this (or after ``start``).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    workflow: str
    cron: str
    tz: str = "UTC"
    input: Any = None
    tenant: str = "default"
    thread: str | None = None
    overlap: Literal["skip", "allow", "buffer_one"] = "skip"
    catchup: Literal["skip", "latest", "all"] = "latest"
    catchup_window_s: float = Field(default=3600.0, gt=0, allow_inf_nan=False)
    jitter_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    start: datetime | None = None
    end: datetime | None = None
    paused: bool = False
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError("use 1-100 letters, digits, '_' or '-', starting with a letter or digit")
        return value

    @model_validator(mode="after")
    def _check(self) -> Schedule:
        Cron.parse(self.cron, self.tz)
        keys.validate_id("tenant", self.tenant)
        if self.thread is not None:
            keys.validate_id("thread id", self.thread)
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ConfigError(
                f"schedule {self.name}: --end ({self.end.isoformat()}) must be after --start "
                f"({self.start.isoformat()})"
            )
        return self

    @classmethod
    def build(cls, **fields: Any) -> Schedule:
        """Validate ``fields`` into a schedule.

        Raises:
            ConfigError: a bad name, expression, zone, policy, id, or start/end (one line naming it).
        """
        try:
            return cls(**fields)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "schedule"
            message = str(err["msg"]).removeprefix("Value error, ")
            raise ConfigError(f"schedule {where}: {message} (got {err.get('input')!r})") from None

    @property
    def cron_expr(self) -> Cron:
        """The parsed expression in the schedule's zone."""
        return Cron.parse(self.cron, self.tz)

    def first_cursor_ms(self) -> int:
        """The cursor of a new (or resumed) schedule: fires after it count. ``created_at``, or just before
        ``start`` when that is later."""
        cursor = _ms(self.created_at)
        return max(cursor, _ms(self.start) - 1) if self.start is not None else cursor

    def run_id(self, fire_ms: int) -> str:
        """The id of the run of the fire at ``fire_ms``: derived from (schedule, fire time), so that a fire
        has one run id whichever replica claims it: ``NAME-20260910T012500Z`` (``..._500Z`` with 500 ms)."""
        moment = datetime.fromtimestamp(fire_ms / 1000, UTC)
        millis = f"_{fire_ms % 1000:03d}" if fire_ms % 1000 else ""
        return f"{self.name}-{moment:%Y%m%dT%H%M%S}{millis}Z"


class ScheduleState(BaseModel):
    """A schedule's progress: ``cursor_ms``, the newest fire time handled (later fires are still to come);
    the latest run and its thread; a ``buffer_one`` fire kept waiting (ms)."""

    cursor_ms: int
    last_run: str | None = None
    last_thread: str | None = None
    buffered_ms: int | None = None

    @classmethod
    def load(cls, raw: bytes | str | None, schedule: Schedule) -> ScheduleState:
        """The state as stored (``raw``), or a new schedule's."""
        if raw is None:
            return cls(cursor_ms=schedule.first_cursor_ms())
        return cls.model_validate_json(raw)


class Fire(BaseModel):
    """One entry of a schedule's fire history.

    Attributes:
        fire_time: the fire's time, ISO-8601 UTC (its nominal time: jitter not added).
        outcome: one of :data:`OUTCOMES`.
        run_id: the run started (started, caught-up), else None.
        at: when a scheduler handled it (its clock), ISO-8601 UTC.
        lag_s: seconds from the fire's due time (jitter added) to ``at``.
        note: for a missed span, which fires it covers; ``triggered`` for ``schedules trigger``.
    """

    fire_time: str
    outcome: str
    run_id: str | None = None
    at: str
    lag_s: float | None = None
    note: str = ""


class ScheduleStore:
    """Reads and writes schedules, their state and history (``kv``: redis-py, bytes replies)."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv

    def add(self, schedule: Schedule) -> None:
        """Store a new schedule and its state (its first fire is the first after ``created_at``/``start``).

        Raises:
            ConfigError: a schedule of that name exists.
        """
        state = ScheduleState(cursor_ms=schedule.first_cursor_ms())
        with self.kv.pipeline(transaction=True) as pipe:
            pipe.hsetnx(keys.schedules(), schedule.name, schedule.model_dump_json())
            pipe.set(keys.schedule_state(schedule.name), state.model_dump_json(), nx=True)
            added, _ = pipe.execute()
        if not added:
            raise ConfigError(
                f"schedule {schedule.name!r} exists already (graphq schedules update changes it)"
            )

    def get(self, name: str) -> Schedule:
        """The schedule ``name``.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        raw = self.kv.hget(keys.schedules(), name)
        if raw is None:
            raise ScheduleNotFoundError(f"no schedule named {name!r} (graphq schedules list shows them)")
        return Schedule.model_validate_json(raw)

    def all(self, unreadable: Callable[[str, Exception], None] | None = None) -> list[Schedule]:
        """Every schedule, by name.

        Args:
            unreadable: called with the name and the error of a stored schedule this process cannot read
                (a zone its tzdata lacks, a field of a newer graphq), which is left out; None: raised.

        Raises:
            ValidationError, ConfigError: a stored schedule is unreadable and ``unreadable`` is None.
        """
        found = []
        for name, raw in self.kv.hgetall(keys.schedules()).items():
            try:
                found.append(Schedule.model_validate_json(raw))
            except (ValidationError, PermanentError) as exc:
                if unreadable is None:
                    raise
                unreadable(name.decode(), exc)
        return sorted(found, key=lambda s: s.name)

    def stored(self, name: str) -> dict[str, Any]:
        """The fields of ``name`` as stored (JSON), unchecked: what ``schedules list/show`` show of a schedule
        this process cannot read.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        raw = self.kv.hget(keys.schedules(), name)
        if raw is None:
            raise ScheduleNotFoundError(f"no schedule named {name!r} (graphq schedules list shows them)")
        found: dict[str, Any] = json.loads(raw)
        return found

    def created_at(self, name: str) -> datetime:
        """When ``name`` was added (aware; the earliest time for one stored without it): ``runs list
        --schedule`` lists its runs from then on, not those of a schedule of that name removed before.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        created = self.stored(name).get("created_at")
        return datetime.fromisoformat(created) if created else datetime.min.replace(tzinfo=UTC)

    def note_problem(self, name: str, note: str, at: str, cap: int) -> bool:
        """Record in ``name``'s history that it was not planned (outcome missed, ``note``, at ``at``), unless
        its newest entry says so already. Returns whether an entry was written."""
        latest = self.kv.lindex(keys.schedule_fires(name), 0)
        if latest is not None and Fire.model_validate_json(latest).note == note:
            return False
        entry = Fire(fire_time=at, outcome="missed", at=at, note=note)
        with self.kv.pipeline(transaction=True) as pipe:
            pipe.lpush(keys.schedule_fires(name), entry_json(entry))
            pipe.ltrim(keys.schedule_fires(name), 0, cap - 1)
            pipe.execute()
        return True

    def state(self, schedule: Schedule) -> ScheduleState:
        """The schedule's progress."""
        return ScheduleState.load(self.kv.get(keys.schedule_state(schedule.name)), schedule)

    def states(self, schedules: list[Schedule]) -> list[bytes | None]:
        """The stored states of ``schedules`` as raw JSON (None: none stored), one round trip."""
        if not schedules:
            return []
        return list(self.kv.mget([keys.schedule_state(s.name) for s in schedules]))

    def set_paused(self, name: str, paused: bool, now_ms: int) -> Schedule:
        """Pause or resume ``name``. Resuming moves its cursor to ``now_ms``: fires while paused are neither
        run nor caught up.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        while True:
            try:
                with self.kv.pipeline(transaction=True) as pipe:
                    pipe.watch(keys.schedules(), keys.schedule_state(name))
                    schedule = self.get(name).model_copy(update={"paused": paused})
                    state = ScheduleState.load(pipe.get(keys.schedule_state(name)), schedule)
                    pipe.multi()
                    pipe.hset(keys.schedules(), name, schedule.model_dump_json())
                    if not paused:
                        state = state.model_copy(update={"cursor_ms": max(state.cursor_ms, now_ms)})
                        pipe.set(keys.schedule_state(name), state.model_dump_json())
                    pipe.execute()
                    return schedule
            except WatchError:
                continue

    def update(self, schedule: Schedule, now_ms: int) -> None:
        """Replace the definition of ``schedule.name`` in place, keeping its state (cursor, latest run,
        buffered fire) and history. When the timetable changes (cron, zone or start) the cursor moves to
        ``now_ms`` (:func:`_moved_cursor`): the new timetable fires from now on, not before its start, none of
        its earlier fires caught up.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        name = schedule.name
        while True:
            try:
                with self.kv.pipeline(transaction=True) as pipe:
                    pipe.watch(keys.schedules(), keys.schedule_state(name))
                    before = self.stored(name)
                    raw_state = pipe.get(keys.schedule_state(name))
                    pipe.multi()
                    pipe.hset(keys.schedules(), name, schedule.model_dump_json())
                    timetable = ("cron", "tz", "start")
                    moved = any(before.get(k) != schedule.model_dump(mode="json")[k] for k in timetable)
                    if moved or raw_state is None:
                        state = ScheduleState.load(raw_state, schedule)
                        cursor = _moved_cursor(state.cursor_ms, before, schedule, now_ms)
                        state = state.model_copy(update={"cursor_ms": cursor})
                        pipe.set(keys.schedule_state(name), state.model_dump_json())
                    pipe.execute()
                    return
            except WatchError:
                continue

    def remove(self, name: str) -> None:
        """Delete the schedule, its state and its history (its runs stay).

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        self.get(name)
        with self.kv.pipeline(transaction=True) as pipe:
            pipe.hdel(keys.schedules(), name)
            pipe.delete(keys.schedule_state(name), keys.schedule_fires(name))
            pipe.execute()

    def history(self, name: str, limit: int | None = None) -> list[Fire]:
        """The schedule's fires, newest first (at most ``GRAPHQ_SCHEDULE_HISTORY_LENGTH`` are kept); also of a
        schedule this process cannot read.

        Raises:
            ScheduleNotFoundError: no such schedule.
        """
        self.stored(name)
        stop = -1 if limit is None else limit - 1
        return [Fire.model_validate_json(raw) for raw in self.kv.lrange(keys.schedule_fires(name), 0, stop)]


def _moved_cursor(cursor_ms: int, before: dict[str, Any], schedule: Schedule, now_ms: int) -> int:
    """The cursor of ``schedule`` whose timetable changed from ``before`` (its stored fields) at ``now_ms``:
    now, or just before its start when that is later; never back before a fire handled (``cursor_ms``),
    but a cursor still at the old start's bound (1 ms before a start to come: no fire handled) does not
    hold back an earlier new start."""
    old_start = before.get("start")
    if old_start and cursor_ms == _ms(datetime.fromisoformat(old_start)) - 1 and cursor_ms > now_ms:
        cursor_ms = now_ms
    return max(cursor_ms, now_ms, schedule.first_cursor_ms())


def entry_json(fire: Fire) -> str:
    """The stored form of a history entry."""
    return json.dumps(fire.model_dump(), separators=(",", ":"))
