"""Fire times of a cron expression in an IANA time zone, DST-correct (K1).

Expressions are croniter's 5 fields (minute hour day-of-month month day-of-week) or one of the aliases
``@hourly @daily @midnight @weekly @monthly @yearly @annually``. The fields are matched against the *local
wall time* of the zone (zoneinfo): every fire is at the wall time asked for, whatever the UTC offset is that
day. Two wall times need a rule:

- a local time that does not exist (spring forward, e.g. 02:30 on 2026-03-08 in America/New_York) fires
  once, at the first instant after the gap (03:00 EDT = 07:00Z); several such times, and a real time at that
  instant, make one fire;
- a local time that happens twice (fall back, e.g. 01:30 on 2026-11-01 in America/New_York) fires once, at
  its first occurrence (01:30 EDT = 05:30Z); the repeated hour does not fire again.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from graphcore.errors import ConfigError

__all__ = ["ALIASES", "FIELDS", "Cron", "in_gap", "local_instant", "parse_zone"]

ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
"""The aliases accepted, with the 5-field expression each stands for."""


@cache
def parse_zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (e.g. ``Europe/Paris``; ``UTC``).

    Raises:
        ConfigError: no such zone in the system's or tzdata's database.
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"time zone {name!r} is unknown: use an IANA name such as Europe/Paris or UTC"
        ) from None


FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
)
"""The 5 fields in order: name, lowest and highest value (day-of-week 0 and 7 are Sunday)."""

_VALUE = re.compile(r"(?<![/#\w])\d+")  # a number in a field, not a step (after /) nor an nth (after #)
_RANGE = re.compile(r"(\d+|[a-z]{3})-(\d+|[a-z]{3})(?:/\d+)?", re.IGNORECASE)  # a list item a-b or a-b/step


def _field_problem(expr: str, fields: list[str]) -> str | None:
    """What is wrong with the first field croniter refuses on its own (``* * * * *`` with that field in
    place): ``minute field: 60 is out of range 0-59``, or ``hour field: 'x' is invalid``; None when every
    field passes alone."""
    for index, ((name, low, high), text) in enumerate(zip(FIELDS, fields, strict=True)):
        alone = " ".join(text if i == index else "*" for i in range(5))
        if croniter.is_valid(alone):
            continue
        for value in (int(v) for v in _VALUE.findall(text)):
            if not low <= value <= high:
                return f"cron expression {expr!r}: {name} field: {value} is out of range {low}-{high}"
        return f"cron expression {expr!r}: {name} field: {text!r} is invalid"
    return None


def _range_bounds(index: int, match: re.Match[str]) -> tuple[int, int]:
    """The numbers of a range's two ends in field ``index`` (month and day-of-week names as croniter's)."""
    start, end = (int(w) if w.isdigit() else croniter.ALPHACONV[index][w.lower()] for w in match.groups())
    return start, end


def _single_values(fields: list[str]) -> list[str]:
    """``fields`` with each range of one value (``5-5``, ``5-5/2``, ``DEC-DEC``) written as that value:
    croniter reads such a range as the whole field (``5-5 * * * *`` fires every minute), standard cron as
    the one value."""
    out = []
    for index, text in enumerate(fields):
        items = []
        for item in text.split(","):
            match = _RANGE.fullmatch(item)
            one = match is not None and len(set(_range_bounds(index, match))) == 1
            items.append(match[1] if one and match is not None else item)
        out.append(",".join(items))
    return out


def _reversed_range(expr: str, fields: list[str]) -> str | None:
    """The first range (a list item ``a-b`` or ``a-b/step``) whose start is after its end, which croniter
    reads as wrapping around (``5-1`` as 5-59 and 0-1): ``minute field: range '5-1' is reversed: 5 is after
    1``; None when there is none. Month and day-of-week names count as their numbers (``FRI`` 5); ``SUN``
    ending a range counts as 7 (``SAT-SUN`` is 6-7)."""
    for index, ((name, _, _), text) in enumerate(zip(FIELDS, fields, strict=True)):
        for item in text.split(","):
            if (match := _RANGE.fullmatch(item)) is None:
                continue
            start, end = _range_bounds(index, match)
            if start > end and not (index == 4 and match[2].lower() == "sun"):
                reversal = f"range {item!r} is reversed: {match[1]} is after {match[2]}"
                return f"cron expression {expr!r}: {name} field: {reversal}"
    return None


def _expand(expr: str) -> str:
    """The 5-field form of ``expr``.

    Raises:
        ConfigError: not 5 fields (nor an alias); a field croniter refuses (the message names the field and
            the value out of range, e.g. ``minute field: 60 is out of range 0-59``); a reversed range
            (``5-1``, ``FRI-MON``); an expression that never matches a date (``0 0 31 2 *``).
    """
    text = " ".join(expr.split())
    fields = ALIASES.get(text.lower(), text)
    parts = fields.split()
    usage = (
        f"cron expression {expr!r} is invalid: use 5 fields (minute hour day-of-month month "
        f"day-of-week, e.g. '25 8-16 * * *') or one of {', '.join(ALIASES)}"
    )
    if len(parts) != 5:
        raise ConfigError(usage)
    if not croniter.is_valid(fields):
        raise ConfigError(_field_problem(expr, parts) or usage)
    if reversed_range := _reversed_range(expr, parts):
        raise ConfigError(reversed_range)
    fields = " ".join(_single_values(parts))
    try:
        copy.copy(_template(fields)).get_next(datetime)
    except CroniterBadDateError:  # e.g. '0 0 31 2 *', '0 0 31 4,6,9,11 *': no such day in those months
        raise ConfigError(
            f"cron expression {expr!r} never matches a date (no month it names has that day)"
        ) from None
    return fields


def local_instant(naive: datetime, zone: ZoneInfo) -> datetime:
    """The instant (UTC) of the wall time ``naive`` in ``zone``: its first occurrence when repeated, the first
    instant after the gap when it does not exist."""
    first = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == naive:
        return first  # exists (fold=0 is the first of two occurrences)
    # In a gap: fold=1 reads it with the offset after the change (an instant before the gap), fold=0 with
    # the one before (after the gap); the change lies between. Bisect to the second.
    low, high = naive.replace(tzinfo=zone, fold=1).astimezone(UTC), first
    while high - low > timedelta(seconds=1):
        mid = low + (high - low) / 2
        if mid.astimezone(zone).replace(tzinfo=None) < naive:
            low = mid
        else:
            high = mid
    return high.replace(microsecond=0)


def in_gap(naive: datetime, zone: ZoneInfo) -> bool:
    """Whether the wall time ``naive`` does not exist in ``zone`` (skipped by spring forward)."""
    return naive.replace(tzinfo=zone).astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive


@dataclass(frozen=True)
class Cron:
    """A cron expression in a zone. Build with :meth:`parse`.

    Attributes:
        expr: the expression as given (an alias stays an alias).
        fields: its 5 fields.
        zone: the IANA zone name.
    """

    expr: str
    fields: str
    zone: str

    @classmethod
    def parse(cls, expr: str, zone: str = "UTC") -> Cron:
        """Validate ``expr`` and ``zone`` (each pair once per process: a scheduler pass parses every
        schedule's).

        Raises:
            ConfigError: a bad expression or an unknown zone (the message names it).
        """
        return _parse(expr, zone)

    def after(self, instant: datetime) -> Iterator[datetime]:
        """The fire times strictly after ``instant`` (aware), ascending, as aware UTC datetimes; endless."""
        zone = parse_zone(self.zone)
        start = instant.astimezone(zone).replace(tzinfo=None)
        it = copy.copy(_template(self.fields))  # the fields expanded once; each iteration its own position
        it.set_current(start, force=True)
        last = instant.astimezone(UTC)
        while True:
            fire = local_instant(it.get_next(datetime), zone)
            if fire > last:  # skips gap times folded onto one instant and fold-0 times behind ``instant``
                last = fire
                yield fire

    def next_after(self, instant: datetime) -> datetime:
        """The first fire time strictly after ``instant`` (aware), UTC."""
        return next(self.after(instant))

    def shortest_gap_s(self, after: datetime, count: int = 1000, horizon_days: int = 366) -> float:
        """The shortest time between two consecutive fires, seconds, among the fires after ``after`` (aware):
        at most ``count`` of them, and those within ``horizon_days`` (at least two fires are looked at). A
        zone's DST changes count (a daily 02:30 in New York is 23 h apart across spring forward)."""
        end = after + timedelta(days=horizon_days)
        shortest, previous = float("inf"), None
        for n, fire in enumerate(self.after(after)):
            if previous is not None:
                shortest = min(shortest, (fire - previous).total_seconds())
            if n + 1 >= count or (fire > end and n >= 1):
                break
            previous = fire
        return shortest

    def between(self, after: datetime, until: datetime, limit: int) -> list[datetime]:
        """Fire times in ``(after, until]``, ascending, at most ``limit`` of them (the earliest). Memoized
        (the latest 256 answers): in a pass, the schedules that share an expression, a zone and a cursor
        share the computation."""
        return list(_between(self, after, until, limit))


@cache
def _parse(expr: str, zone: str) -> Cron:
    parse_zone(zone)
    return Cron(expr, _expand(expr), zone)


@lru_cache(maxsize=256)
def _between(cron: Cron, after: datetime, until: datetime, limit: int) -> tuple[datetime, ...]:
    found: list[datetime] = []
    for fire in cron.after(after):
        if fire > until or len(found) >= limit:
            break
        found.append(fire)
    return tuple(found)


@cache
def _template(fields: str) -> Any:
    """A croniter of ``fields`` (expanded once), copied for each iteration."""
    return croniter(fields, datetime(2000, 1, 1))
