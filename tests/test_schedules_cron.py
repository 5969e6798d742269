"""Fire times (K1): cron in the schedule's zone, DST-correct; aliases; bad expressions and zones."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from graphcore.errors import ConfigError
from graphq.scheduler.cron import Cron
from graphq.scheduler.schedules import parse_duration, parse_time

NY = ZoneInfo("America/New_York")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires(expr: str, zone: str, after: str, until: str) -> list[str]:
    found = Cron.parse(expr, zone).between(utc(after), utc(until), 100)
    return [f.strftime("%Y-%m-%dT%H:%MZ") for f in found]


def test_jakarta_business_hours() -> None:
    """``25 8-16 * * *`` in Asia/Jakarta, clock at 2026-09-10 07:00 Jakarta → 2026-09-10T01:25Z."""
    now = datetime(2026, 9, 10, 7, 0, tzinfo=ZoneInfo("Asia/Jakarta"))
    assert Cron.parse("25 8-16 * * *", "Asia/Jakarta").next_after(now) == utc("2026-09-10T01:25")


def test_new_york_midnight_across_spring_forward() -> None:
    """``0 0 * * *`` in America/New_York is 05:00Z before 2026-03-08 and 04:00Z after: always local
    midnight."""
    assert fires("0 0 * * *", "America/New_York", "2026-03-06T00:00", "2026-03-10T12:00") == [
        "2026-03-06T05:00Z",
        "2026-03-07T05:00Z",
        "2026-03-08T05:00Z",
        "2026-03-09T04:00Z",
        "2026-03-10T04:00Z",
    ]


def test_spring_forward_missing_time_fires_once_at_the_end_of_the_gap() -> None:
    """02:30 does not exist on 2026-03-08 in New York: it fires once, at 03:00 EDT (07:00Z), the first
    instant after the gap; the days around it at 02:30 local."""
    assert fires("30 2 * * *", "America/New_York", "2026-03-07T00:00", "2026-03-09T12:00") == [
        "2026-03-07T07:30Z",
        "2026-03-08T07:00Z",
        "2026-03-09T06:30Z",
    ]


def test_spring_forward_gap_times_and_the_real_time_after_it_make_one_fire() -> None:
    """Every 15 minutes: 02:00-02:45 do not exist; they and 03:00 EDT fire once, at 07:00Z."""
    assert fires("*/15 * * * *", "America/New_York", "2026-03-08T06:30", "2026-03-08T07:30") == [
        "2026-03-08T06:45Z",  # 01:45 EST
        "2026-03-08T07:00Z",  # 03:00 EDT (02:00, 02:15, 02:30, 02:45 and 03:00)
        "2026-03-08T07:15Z",
        "2026-03-08T07:30Z",
    ]


def test_fall_back_repeated_time_fires_once_at_its_first_occurrence() -> None:
    """01:30 happens twice on 2026-11-01 in New York: it fires once, at 01:30 EDT (05:30Z), not again at
    01:30 EST (06:30Z)."""
    assert fires("30 1 * * *", "America/New_York", "2026-10-31T00:00", "2026-11-02T12:00") == [
        "2026-10-31T05:30Z",
        "2026-11-01T05:30Z",
        "2026-11-02T06:30Z",
    ]


def test_fall_back_hourly_skips_the_repeated_hour() -> None:
    """Hourly on the fall-back day: 01:00 EDT (05:00Z) fires, the repeated 01:00 EST (06:00Z) does not,
    02:00 EST (07:00Z) does."""
    assert fires("0 * * * *", "America/New_York", "2026-11-01T04:30", "2026-11-01T08:00") == [
        "2026-11-01T05:00Z",
        "2026-11-01T07:00Z",
        "2026-11-01T08:00Z",
    ]


def test_after_the_second_occurrence_the_next_fire_is_after_it() -> None:
    """From inside the repeated hour (01:40 EST = 06:40Z), ``*/15`` next fires at 02:00 EST (07:00Z): its
    wall times 01:45 were fired in the first occurrence."""
    assert Cron.parse("*/15 * * * *", "America/New_York").next_after(utc("2026-11-01T06:40")) == utc(
        "2026-11-01T07:00"
    )


@pytest.mark.parametrize(
    ("alias", "after", "expected"),
    [
        ("@hourly", "2026-05-01T10:10", "2026-05-01T11:00"),
        ("@daily", "2026-05-01T10:10", "2026-05-02T00:00"),
        ("@weekly", "2026-05-01T10:10", "2026-05-03T00:00"),  # Sunday
        ("@monthly", "2026-05-01T10:10", "2026-06-01T00:00"),
        ("@yearly", "2026-05-01T10:10", "2027-01-01T00:00"),
    ],
)
def test_aliases(alias: str, after: str, expected: str) -> None:
    assert Cron.parse(alias).next_after(utc(after)) == utc(expected)


@pytest.mark.parametrize("expr", ["* * * *", "* * * * * *", "every minute", "@often", ""])
def test_bad_expressions_are_refused(expr: str) -> None:
    with pytest.raises(ConfigError, match=r"cron expression .* is invalid: use 5 fields"):
        Cron.parse(expr)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("60 * * * *", "minute field: 60 is out of range 0-59"),
        ("0 24 * * *", "hour field: 24 is out of range 0-23"),
        ("0 0 32 * *", "day-of-month field: 32 is out of range 1-31"),
        ("0 0 0 * *", "day-of-month field: 0 is out of range 1-31"),
        ("0 0 * 13 *", "month field: 13 is out of range 1-12"),
        ("0 0 * * 8", "day-of-week field: 8 is out of range 0-7"),
        ("5-70 * * * *", "minute field: 70 is out of range 0-59"),
        ("*/0 * * * *", "minute field: '*/0' is invalid"),
        ("0 x * * *", "hour field: 'x' is invalid"),
        ("5-1 * * * *", "minute field: range '5-1' is reversed: 5 is after 1"),
        ("1,5-1 * * * *", "minute field: range '5-1' is reversed: 5 is after 1"),
        ("5-1/2 * * * *", "minute field: range '5-1/2' is reversed: 5 is after 1"),
        ("0 23-1 * * *", "hour field: range '23-1' is reversed: 23 is after 1"),
        ("0 0 31-1 * *", "day-of-month field: range '31-1' is reversed: 31 is after 1"),
        ("0 0 * 12-1 *", "month field: range '12-1' is reversed: 12 is after 1"),
        ("0 0 * DEC-JAN *", "month field: range 'DEC-JAN' is reversed: DEC is after JAN"),
        ("0 0 * * FRI-MON", "day-of-week field: range 'FRI-MON' is reversed: FRI is after MON"),
        ("0 0 * * 1-5,6-0", "day-of-week field: range '6-0' is reversed: 6 is after 0"),
    ],
)
def test_a_bad_field_is_named_with_its_value(expr: str, message: str) -> None:
    """5 fields, one croniter refuses (or reads as wrapping around: a reversed range): the message names the
    field and the value (not "use 5 fields")."""
    with pytest.raises(ConfigError) as refused:
        Cron.parse(expr)
    assert str(refused.value) == f"cron expression {expr!r}: {message}"


@pytest.mark.parametrize("expr", ["0 9 * * sat-sun", "0 9 * * 6-7", "0 9 * * SAT,SUN"])
def test_a_day_of_week_range_may_end_on_sunday_by_name(expr: str) -> None:
    """SUN ending a range is 7 (not 0): SAT-SUN is the weekend, as 6-7. 2026-01-03 is a Saturday."""
    assert fires(expr, "UTC", "2026-01-01T00:00", "2026-01-12T00:00") == [
        "2026-01-03T09:00Z",
        "2026-01-04T09:00Z",
        "2026-01-10T09:00Z",
        "2026-01-11T09:00Z",
    ]


@pytest.mark.parametrize(
    ("expr", "until", "expected"),
    [
        ("5-5 * * * *", "2026-01-01T02:59", ["2026-01-01T00:05Z", "2026-01-01T01:05Z", "2026-01-01T02:05Z"]),
        (
            "5-5/2 * * * *",
            "2026-01-01T02:59",
            ["2026-01-01T00:05Z", "2026-01-01T01:05Z", "2026-01-01T02:05Z"],
        ),
        ("0,30-30 1-1 * * *", "2026-01-02T00:00", ["2026-01-01T01:00Z", "2026-01-01T01:30Z"]),
        ("0 0 2-2 jan-jan *", "2027-01-01T00:00", ["2026-01-02T00:00Z"]),
    ],
)
def test_a_range_of_one_value_is_that_value(expr: str, until: str, expected: list[str]) -> None:
    """croniter reads N-N as the whole field (``5-5 * * * *`` fired every minute); standard cron as N."""
    assert fires(expr, "UTC", "2026-01-01T00:00", until) == expected


def test_unknown_zone_is_refused() -> None:
    with pytest.raises(ConfigError, match="time zone 'Mars/Olympus' is unknown"):
        Cron.parse("* * * * *", "Mars/Olympus")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("5m", 300), ("2h", 7200), ("1d", 86400), ("1h30m", 5400)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "5 minutes", "m5", "-5m", "1w"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError, match="is invalid: use a number and a unit s, m, h or d"):
        parse_duration(text, "--jitter")


@pytest.mark.parametrize("text", ["0", "0s", "0.0", "0m"])
def test_zero_with_or_without_a_unit_is_none_unless_refused(text: str) -> None:
    assert parse_duration(text, "--jitter") == 0.0
    with pytest.raises(ConfigError) as refused:
        parse_duration(text, "--catchup-window", "why")
    assert str(refused.value) == (
        f"--catchup-window {text!r} is invalid: use a duration above 0 (e.g. 90s, 5m, 2h): why"
    )


def test_a_time_in_the_gap_is_the_instant_after_it_and_after_lists_that_instant() -> None:
    """02:15 on 2026-03-08 does not exist in New York: read as 03:00 EDT (07:00Z), like a fire (it was read
    as 02:15 EST, 07:15Z); for --after 1 ms before, so the gap's fires, at 07:00Z, are listed."""
    ny = "America/New_York"
    assert parse_time("2026-03-08T02:15", ny) == utc("2026-03-08T07:00")
    assert parse_time("2026-03-08T02:15", ny, after=True) == utc("2026-03-08T06:59:59.999")
    assert parse_time("2026-03-08T01:59", ny, after=True) == utc("2026-03-08T06:59")
    assert parse_time("2026-11-01T01:30", ny).astimezone(UTC) == utc(
        "2026-11-01T05:30"
    )  # repeated: the first
    hourly = Cron.parse("0 * * * *", ny).between(utc("2026-03-08T04:59"), utc("2026-03-09T03:59"), 100)
    assert len(hourly) == 23 and hourly[1:4] == [
        utc("2026-03-08T06:00"),
        utc("2026-03-08T07:00"),
        utc("2026-03-08T08:00"),
    ]


def test_times_without_offset_are_read_in_the_zone() -> None:
    assert parse_time("2026-09-10T07:00", "Asia/Jakarta") == utc("2026-09-10T00:00")
    assert parse_time("2026-09-10T07:00Z", "Asia/Jakarta") == utc("2026-09-10T07:00")
