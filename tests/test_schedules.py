"""Schedules on a real Redis with a simulated clock (K1): days of fires without sleeping, exactly one run
per (schedule, fire time) with racing schedulers, overlap and catch-up policies, jitter, start/end,
pause/resume, trigger, history; the pass lock's tokens when a pass outlasts
the lock's TTL (in process)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunFilter, RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, DisabledError, UnknownWorkflowError
from graphcore.settings import Settings
from graphq.scheduler.api import Schedules
from graphq.scheduler.claim import batches, commit
from graphq.scheduler.loop import Scheduler
from graphq.scheduler.schedules import ScheduleNotFoundError, TriggerSkippedError

REGISTRY = Registry.load(["tests.workflows.basic"])


def ts(text: str) -> float:
    """Epoch seconds of an ISO time without offset, read as UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


class Clock:
    """A simulated clock (epoch seconds)."""

    def __init__(self, start: str) -> None:
        self.now = ts(start)

    def __call__(self) -> float:
        return self.now

    def at(self, text: str) -> None:
        self.now = ts(text)


def scheduler(client: Client, clock: Any, name: str = "a", **settings: Any) -> Scheduler:
    return Scheduler(client, Settings(**settings), clock=clock, name=name)


def outcomes(schedules: Schedules, name: str) -> list[tuple[str, str, str | None]]:
    """(fire time, outcome, run id) of the schedule's history, oldest first."""
    return [(f.fire_time, f.outcome, f.run_id) for f in reversed(schedules.history(name))]


def complete(client: Client, run_id: str) -> None:
    """End a run as if a worker completed it (runs here have no workers)."""
    assert client.runs.set_status(client.runs.get(run_id), RunStatus.COMPLETED)


@pytest.fixture
def clock() -> Clock:
    return Clock("2026-03-07T00:00:00")


@pytest.fixture
def schedules(client: Client, clock: Clock) -> Schedules:
    return Schedules(client, clock)


def test_days_of_fires_across_spring_forward(client: Client, clock: Clock, schedules: Schedules) -> None:
    """Three simulated days ticked every 5 minutes: the hourly schedule fires 72 times, the 02:30 New York
    one at 07:30Z, 07:00Z (02:30 does not exist on 2026-03-08: the end of the gap) and 06:30Z; every run is
    created once, with its schedule and fire time in its metadata and record."""
    schedules.add("hourly", workflow="counter", cron="0 * * * *", overlap="allow", input={"limit": 1})
    schedules.add("ny", workflow="counter", cron="30 2 * * *", tz="America/New_York", overlap="allow")
    sched = scheduler(client, clock, scheduler_grace_s=600)
    while clock.now < ts("2026-03-10T00:00:00"):
        clock.now += 300
        sched.tick()
    ny = outcomes(schedules, "ny")
    assert ny == [
        ("2026-03-07T07:30:00Z", "started", "ny-20260307T073000Z"),
        ("2026-03-08T07:00:00Z", "started", "ny-20260308T070000Z"),
        ("2026-03-09T06:30:00Z", "started", "ny-20260309T063000Z"),
    ]
    hourly = outcomes(schedules, "hourly")
    assert len(hourly) == 72 and {o for _, o, _ in hourly} == {"started"}
    assert hourly[0][2] == "hourly-20260307T010000Z" and hourly[-1][2] == "hourly-20260310T000000Z"
    run = client.get_run("ny-20260308T070000Z")
    assert run.config["metadata"] == {"schedule": "ny", "fire_time": "2026-03-08T07:00:00Z"}
    assert (run.schedule, run.fire_time, run.thread_id) == ("ny", "2026-03-08T07:00:00Z", run.id)
    assert [r.id for r in client.list_runs(10, RunFilter(schedule="ny"))] == [r for _, _, r in reversed(ny)]
    assert len(client.list_runs(100, RunFilter(schedule="hourly"))) == 72


def test_racing_schedulers_with_skewed_clocks_create_one_run_per_fire(client: Client) -> None:
    """Two schedulers making passes at once (no pass lock: both plan and claim), the second's clock 20 s
    ahead, over 10 ticks of a minute on 30 every-minute schedules: one outcome and one run per fire."""
    base = Clock("2026-05-01T00:00:00")
    adder = Schedules(client, base)
    for i in range(30):
        adder.add(f"s{i}", workflow="counter", cron="* * * * *", overlap="allow")
    a = scheduler(client, base, "a")
    b = scheduler(client, lambda: base.now + 20, "b")
    for _ in range(10):
        base.now += 60
        passes = [threading.Thread(target=s.run_pass) for s in (a, b)]
        for t in passes:
            t.start()
        for t in passes:
            t.join()
    runs = client.list_runs(1000, RunFilter(schedule="s7"))
    fires = [f.fire_time for f in adder.history("s7")]
    assert len(fires) == len(set(fires)) == len(runs)
    total = sum(len(adder.history(f"s{i}")) for i in range(30))
    assert total == len(client.list_runs(1000)) and total >= 300
    assert Counter(r.id for r in client.list_runs(1000)).most_common(1)[0][1] == 1


def test_a_pass_that_outlived_its_claims_writes_nothing(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """A plans, stalls; B makes its pass; A's claims are then refused (the state changed since A read it):
    each fire once (a pass longer than the lock's TTL, in process)."""
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="allow")
    a, b = (
        scheduler(client, clock, "a", scheduler_grace_s=600),
        scheduler(client, clock, "b", scheduler_grace_s=600),
    )
    clock.at("2026-03-07T00:03:10")
    stale = a._plan(int(clock() * 1000))
    assert [d.outcome for _, _, ds in stale for d in ds] == ["started"] * 3
    assert len(b.run_pass().claimed) == 3
    assert commit(client, batches(stale, 200)[0], int(clock() * 1000), 0.0, clock) == []
    assert [r for _, _, r in outcomes(schedules, "m")] == [f"m-20260307T00{i:02d}00Z" for i in (1, 2, 3)]
    assert len(client.list_runs(100)) == 3


def test_overlap_skip(client: Client, clock: Clock, schedules: Schedules) -> None:
    schedules.add("m", workflow="counter", cron="* * * * *")  # skip is the default
    sched = scheduler(client, clock)
    for minute in (1, 2, 3):
        clock.at(f"2026-03-07T00:0{minute}:00")
        sched.tick()
    complete(client, "m-20260307T000100Z")
    clock.at("2026-03-07T00:04:00")
    sched.tick()
    assert outcomes(schedules, "m") == [
        ("2026-03-07T00:01:00Z", "started", "m-20260307T000100Z"),
        ("2026-03-07T00:02:00Z", "skipped-overlap", None),
        ("2026-03-07T00:03:00Z", "skipped-overlap", None),
        ("2026-03-07T00:04:00Z", "started", "m-20260307T000400Z"),
    ]


def test_overlap_allow(client: Client, clock: Clock, schedules: Schedules) -> None:
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="allow")
    sched = scheduler(client, clock)
    for minute in (1, 2, 3):
        clock.at(f"2026-03-07T00:0{minute}:00")
        sched.tick()
    assert [o for _, o, _ in outcomes(schedules, "m")] == ["started"] * 3
    assert len(client.list_runs(10, RunFilter(status=RunStatus.QUEUED))) == 3


def test_overlap_buffer_one(client: Client, clock: Clock, schedules: Schedules) -> None:
    """One fire waits while the run is active (a second is skipped); it starts once the run ended."""
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="buffer_one")
    sched = scheduler(client, clock)
    for minute in (1, 2, 3):
        clock.at(f"2026-03-07T00:0{minute}:00")
        sched.tick()
    assert schedules.state("m").buffered_ms == int(ts("2026-03-07T00:02:00") * 1000)
    complete(client, "m-20260307T000100Z")
    clock.at("2026-03-07T00:03:30")
    sched.tick()
    assert outcomes(schedules, "m") == [
        ("2026-03-07T00:01:00Z", "started", "m-20260307T000100Z"),
        ("2026-03-07T00:02:00Z", "buffered", None),
        ("2026-03-07T00:03:00Z", "skipped-overlap", None),
        ("2026-03-07T00:02:00Z", "started", "m-20260307T000200Z"),
    ]
    assert schedules.state("m").buffered_ms is None


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("skip", ["missed"] * 9 + ["started"]),
        ("latest", ["missed"] * 8 + ["caught-up", "started"]),
        ("all", ["caught-up"] * 9 + ["started"]),
    ],
)
def test_catchup_after_downtime(
    client: Client, clock: Clock, schedules: Schedules, policy: str, expected: list[str]
) -> None:
    """Down for 10 minutes of an every-minute schedule, back at 00:10:30 (grace 60 s): the 00:10 fire is on
    time, 00:01-00:09 were missed and the policy decides."""
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="allow", catchup=policy)
    clock.at("2026-03-07T00:10:30")
    scheduler(client, clock).tick()
    found = outcomes(schedules, "m")
    assert [o for _, o, _ in found] == expected
    assert [t for t, _, _ in found] == [f"2026-03-07T00:{m:02d}:00Z" for m in range(1, 11)]
    assert len(client.list_runs(100)) == expected.count("caught-up") + 1


def test_catchup_window_bounds_what_is_caught_up(client: Client, clock: Clock, schedules: Schedules) -> None:
    """With a 5 minute window, fires older than 00:05:30 are one missed entry; 00:06-00:09 caught up."""
    schedules.add(
        "m", workflow="counter", cron="* * * * *", overlap="allow", catchup="all", catchup_window_s=300
    )
    clock.at("2026-03-07T00:10:30")
    scheduler(client, clock).tick()
    found = schedules.history("m")[::-1]
    assert (found[0].outcome, found[0].fire_time) == ("missed", "2026-03-07T00:01:00Z")
    assert (
        found[0].note
        == "every fire from 2026-03-07T00:01:00Z until 2026-03-07T00:05:30Z (older than the catch-up window)"
    )
    assert [(f.fire_time[11:16], f.outcome) for f in found[1:]] == [
        ("00:06", "caught-up"),
        ("00:07", "caught-up"),
        ("00:08", "caught-up"),
        ("00:09", "caught-up"),
        ("00:10", "started"),
    ]


def test_jitter_delays_each_fire_by_its_fixed_offset(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    from graphq.scheduler.plan import jitter_ms

    schedule = schedules.add("j", workflow="counter", cron="* * * * *", jitter_s=30)
    fire_ms = int(ts("2026-03-07T00:01:00") * 1000)
    offset = jitter_ms(schedule, fire_ms)
    assert 0 <= offset < 30_000 and offset == jitter_ms(schedule, fire_ms)
    sched = scheduler(client, clock)
    clock.now = (fire_ms + offset) / 1000 - 0.001
    sched.tick()
    assert schedules.history("j") == []
    clock.now = (fire_ms + offset) / 1000
    sched.tick()
    assert outcomes(schedules, "j") == [("2026-03-07T00:01:00Z", "started", "j-20260307T000100Z")]


def test_start_end_pause_resume(client: Client, clock: Clock, schedules: Schedules) -> None:
    """No fire before start or after end; none while paused, and none caught up on resume."""
    start = datetime.fromisoformat("2026-03-07T00:03:00+00:00")
    end = datetime.fromisoformat("2026-03-07T00:08:00+00:00")
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="allow", start=start, end=end)
    assert [f.strftime("%H:%M") for f in schedules.next("m", 10)] == [
        "00:03",
        "00:04",
        "00:05",
        "00:06",
        "00:07",
        "00:08",
    ]
    sched = scheduler(client, clock)
    clock.at("2026-03-07T00:04:00")
    sched.tick()
    schedules.pause("m")
    clock.at("2026-03-07T00:06:00")
    sched.tick()
    schedules.resume("m")
    for minute in (7, 8, 9):
        clock.at(f"2026-03-07T00:0{minute}:00")
        sched.tick()
    assert [t[11:16] for t, _, _ in outcomes(schedules, "m")] == ["00:03", "00:04", "00:07", "00:08"]


def test_trigger_next_history_remove(client: Client, clock: Clock, schedules: Schedules) -> None:
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="allow")
    clock.at("2026-03-07T00:00:20.5")
    run_id = schedules.trigger("m")
    assert run_id == "m-20260307T000020_500Z-manual"
    assert client.get_run(run_id).schedule == "m"
    assert [(f.outcome, f.note) for f in schedules.history("m")] == [("started", "triggered")]
    sched = scheduler(client, clock, schedule_history_length=3)
    for minute in range(1, 6):
        clock.at(f"2026-03-07T00:0{minute}:00")
        sched.tick()
    assert [f.fire_time[14:16] for f in schedules.history("m")] == ["05", "04", "03"]  # capped at 3
    after = datetime.fromisoformat("2026-03-07T00:05:00+00:00")
    assert [f.strftime("%M") for f in schedules.next("m", 2, after)] == ["06", "07"]
    schedules.remove("m")
    with pytest.raises(ScheduleNotFoundError, match="no schedule named 'm'"):
        schedules.history("m")
    assert len(client.list_runs(100, RunFilter(schedule="m"))) == 6  # its runs stay


def test_trigger_runs_while_paused_with_the_overlap_policy(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """trigger fires a paused schedule (as Temporal's does) and applies its overlap policy: two triggers
    0.5 s apart on a paused skip schedule started two runs; the second is now skipped-overlap. buffer_one
    keeps one waiting (started when the run ends, as a buffered fire); allow starts both."""
    schedules.add("s", workflow="counter", cron="0 0 1 1 *", overlap="skip")
    schedules.pause("s")
    clock.at("2026-03-07T00:00:20")
    first = schedules.trigger("s")
    assert first == "s-20260307T000020Z-manual"
    clock.at("2026-03-07T00:00:20.5")
    with pytest.raises(TriggerSkippedError) as skipped:
        schedules.trigger("s")
    assert str(skipped.value) == (
        f"schedule s: trigger skipped: its run {first} is still active (--overlap skip; recorded "
        "skipped-overlap)"
    )
    assert [(f.outcome, f.run_id, f.note) for f in schedules.history("s")] == [
        ("skipped-overlap", None, "triggered"),
        ("started", first, "triggered"),
    ]
    assert [r.id for r in client.list_runs(10, RunFilter(schedule="s"))] == [first]
    complete(client, first)
    assert schedules.trigger("s") == "s-20260307T000020_500Z-manual"

    schedules.add("b", workflow="counter", cron="0 0 1 1 *", overlap="buffer_one")
    running = schedules.trigger("b")
    clock.at("2026-03-07T00:00:21")
    assert schedules.trigger("b") is None
    assert schedules.state("b").buffered_ms == int(ts("2026-03-07T00:00:21") * 1000)
    with pytest.raises(
        TriggerSkippedError, match="its run b-20260307T000020_500Z-manual is still active \\(a fire"
    ):
        schedules.trigger("b")
    complete(client, running)
    clock.at("2026-03-07T00:00:22")
    scheduler(client, clock).tick()
    assert outcomes(schedules, "b")[1:] == [
        ("2026-03-07T00:00:21Z", "buffered", None),
        ("2026-03-07T00:00:21Z", "skipped-overlap", None),
        ("2026-03-07T00:00:21Z", "started", "b-20260307T000021Z"),
    ]

    schedules.add("a", workflow="counter", cron="0 0 1 1 *", overlap="allow")
    assert schedules.trigger("a") != schedules.trigger("a")  # -manual and -manual-2, both queued


def test_two_triggers_in_one_millisecond_start_two_runs(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """The clock does not move between two triggers: the second run gets its own id instead of writing over
    the first run's record (and queueing behind itself on its thread)."""
    schedules.add("m", workflow="counter", cron="0 0 1 1 *")
    clock.at("2026-03-07T00:00:20")
    first = schedules.trigger("m")
    complete(client, first)
    second = schedules.trigger("m")
    assert (first, second) == ("m-20260307T000020Z-manual", "m-20260307T000020Z-manual-2")
    assert client.get_run(first).status == RunStatus.COMPLETED
    assert client.get_run(second).status == RunStatus.QUEUED
    assert sorted(r.id for r in client.list_runs(100, RunFilter(schedule="m"))) == [first, second]
    assert [f.run_id for f in schedules.history("m")] == [second, first]


def test_add_refuses_bad_schedules(schedules: Schedules) -> None:
    with pytest.raises(UnknownWorkflowError):
        schedules.add("x", workflow="nope", cron="* * * * *")
    with pytest.raises(ConfigError, match="minute field: 61 is out of range 0-59"):
        schedules.add("x", workflow="counter", cron="61 * * * *")
    with pytest.raises(ConfigError, match="time zone 'Nowhere/City' is unknown"):
        schedules.add("x", workflow="counter", cron="* * * * *", tz="Nowhere/City")
    with pytest.raises(ConfigError, match="schedule name: use 1-100 letters"):
        schedules.add("a b", workflow="counter", cron="* * * * *")
    schedules.add("x", workflow="counter", cron="* * * * *")
    with pytest.raises(ConfigError, match="schedule 'x' exists already"):
        schedules.add("x", workflow="counter", cron="* * * * *")


@pytest.mark.parametrize("field", ["catchup_window_s", "jitter_s"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_add_refuses_a_duration_that_is_not_finite(schedules: Schedules, field: str, value: float) -> None:
    """An infinite window was stored as null: the schedule could not be read, fired, nor removed."""
    with pytest.raises(ConfigError) as info:
        schedules.add("x", workflow="counter", cron="* * * * *", **{field: value})
    assert str(info.value) == f"schedule {field}: Input should be a finite number (got {value})"
    assert schedules.list() == []


def test_pass_lock_is_renewed_and_released_only_with_its_own_token(
    client: Client, clock: Clock, redis_client: redis.Redis
) -> None:
    """A pass longer than the lock's TTL: A holds the lock; B waits; once A's lock lapsed B takes it, and A
    can then neither renew nor release it (compare-and-expire, compare-and-delete with the owner's token)."""
    a = scheduler(client, clock, "a", scheduler_lock_ttl_s=0.2)
    b = scheduler(client, clock, "b", scheduler_lock_ttl_s=5)
    assert a.tick() is not None and b.tick() is None
    redis_client.pexpire(keys.scheduler_lock(), 1)  # A's pass outlived its TTL
    threading.Event().wait(0.01)
    assert b.tick() is not None
    assert a.lock.hold() is False and a.lock.release() is False
    assert redis_client.get(keys.scheduler_lock()) == b.lock.token.encode()
    assert b.lock.release() is True and redis_client.get(keys.scheduler_lock()) is None


def test_heartbeat(client: Client, clock: Clock, redis_client: redis.Redis) -> None:
    sched = scheduler(client, clock, "hb-1", scheduler_interval_s=1)
    sched.tick()
    assert 9_000 < redis_client.pttl(keys.scheduler("hb-1")) <= 10_000
    stop = threading.Event()
    stop.set()
    sched.run(stop)  # stops at once: lock released, heartbeat gone
    assert redis_client.exists(keys.scheduler("hb-1"), keys.scheduler_lock()) == 0


def test_p7_at_small_scale_one_run_per_fire() -> None:
    """P7's race (bench/p7_scheduler.py) at 50 schedules x 4 simulated minutes: 200 runs, one per
    (schedule, fire time) (its own private Redis; the check is inside ``measure``)."""
    from bench.p7_scheduler import measure

    lags, passes, runs, _, _ = measure(50, 4)
    assert (runs, passes, len(lags)) == (200, 4, 200)


def test_a_fire_the_client_refuses_is_recorded_missed_with_why(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """A schedule whose workflow this scheduler does not have (added by a process that had it): its fires
    are recorded missed with the reason, under their fire time (not the time plus their jitter); the other
    schedules' fires in the same batch start."""
    from graphq.scheduler.schedules import Schedule, ScheduleStore

    created = datetime.fromtimestamp(clock(), UTC)
    gone = Schedule.build(name="gone", workflow="retired", cron="* * * * *", jitter_s=30, created_at=created)
    ScheduleStore(client.kv).add(gone)
    schedules.add("fine", workflow="counter", cron="* * * * *")
    clock.at("2026-03-07T00:01:40")
    scheduler(client, clock).tick()
    assert outcomes(schedules, "fine") == [("2026-03-07T00:01:00Z", "started", "fine-20260307T000100Z")]
    [missed] = schedules.history("gone")
    assert (missed.fire_time, missed.outcome, missed.run_id) == ("2026-03-07T00:01:00Z", "missed", None)
    assert missed.note.startswith("not started: unknown workflow 'retired'")


def test_a_stored_schedule_this_scheduler_cannot_read_stops_only_itself(
    client: Client, clock: Clock, schedules: Schedules, caplog: pytest.LogCaptureFixture
) -> None:
    """A schedule stored by a newer graphq (a field this one does not know) or in a zone this host's tzdata
    lacks: the pass logs it and fires the others; ``schedules list`` still refuses to hide it."""
    schedules.add("fine", workflow="counter", cron="* * * * *")
    good = json.loads(client.kv.hget(keys.schedules(), "fine") or b"")
    client.kv.hset(keys.schedules(), "newer", json.dumps(good | {"name": "newer", "priority": 3}))
    client.kv.hset(keys.schedules(), "zoned", json.dumps(good | {"name": "zoned", "tz": "Mars/Olympus"}))
    clock.at("2026-03-07T00:01:00")
    scheduler(client, clock).tick()
    assert outcomes(schedules, "fine") == [("2026-03-07T00:01:00Z", "started", "fine-20260307T000100Z")]
    unread = sorted(r.getMessage().split(":")[0] for r in caplog.records if "cannot be read" in r.message)
    assert unread == ["schedule newer", "schedule zoned"]
    client.kv.hdel(keys.schedules(), "newer")
    with pytest.raises(ConfigError, match="time zone 'Mars/Olympus' is unknown"):
        schedules.list()


def test_ticks_fall_just_after_whole_intervals() -> None:
    """A fire at a whole second is found as it falls due, not up to an interval later: the loop sleeps to
    the next whole multiple of the interval (real time), 2 ms past it."""
    from graphq.scheduler.loop import TICK_MARGIN_S, to_next_tick

    assert TICK_MARGIN_S == 0.002
    assert to_next_tick(1.0, 1_000.25) == pytest.approx(0.752, abs=1e-9)
    assert to_next_tick(0.5, 1_000.999) == pytest.approx(0.003, abs=1e-9)
    assert to_next_tick(1.0, 1_000.0) == pytest.approx(1.002, abs=1e-9)


def test_with_the_kill_switch_off_a_pass_writes_nothing_and_tries_once(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """``graphq disable``: the pass raises DisabledError (the loop logs it) after one transaction attempt, not
    one per schedule; nothing is written, and the fire starts at the first pass once on again."""
    from graphcore.backend import switch

    for name in ("a", "b", "c"):
        schedules.add(name, workflow="counter", cron="* * * * *")
    states = [client.kv.get(keys.schedule_state(n)) for n in ("a", "b", "c")]
    switch.disable(client.kv, "test")
    clock.at("2026-03-07T00:01:00")
    sched = scheduler(client, clock)
    client.kv.config_resetstat()
    with pytest.raises(DisabledError):
        sched.tick()
    assert client.kv.info("commandstats")["cmdstat_watch"]["calls"] == 1
    assert [client.kv.get(keys.schedule_state(n)) for n in ("a", "b", "c")] == states
    assert schedules.history("a") == []
    switch.enable(client.kv)
    clock.at("2026-03-07T00:01:30")
    sched.tick()
    assert outcomes(schedules, "a") == [("2026-03-07T00:01:00Z", "started", "a-20260307T000100Z")]


def test_fall_back_fires_once_with_the_scheduler(client: Client) -> None:
    """``30 1 * * *`` in New York ticked every 5 minutes over 2026-10-31..11-02: 01:30 happens twice on
    2026-11-01 and fires once, at its first occurrence (05:30Z)."""
    clock = Clock("2026-10-31T00:00:00")
    schedules = Schedules(client, clock)
    schedules.add("fb", workflow="counter", cron="30 1 * * *", tz="America/New_York", overlap="allow")
    sched = scheduler(client, clock, scheduler_grace_s=600)
    while clock.now < ts("2026-11-03T00:00:00"):
        clock.now += 300
        sched.tick()
    assert [t for t, _, _ in outcomes(schedules, "fb")] == [
        "2026-10-31T05:30:00Z",
        "2026-11-01T05:30:00Z",
        "2026-11-02T06:30:00Z",
    ]


def test_a_schedule_that_cannot_be_planned_is_logged_once_and_recorded_missed(
    client: Client, clock: Clock, schedules: Schedules, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored schedule whose expression never matches (``0 0 31 2 *``, stored by an older graphq) or
    whose zone this host lacks: each pass skips it (the good one fires), it is logged once and recorded
    missed once with why; ``list`` with ``problems`` names them instead of raising."""
    schedules.add("fine", workflow="counter", cron="* * * * *", overlap="allow")
    good = json.loads(client.kv.hget(keys.schedules(), "fine") or b"")
    client.kv.hset(keys.schedules(), "feb31", json.dumps(good | {"name": "feb31", "cron": "0 0 31 2 *"}))
    client.kv.hset(keys.schedules(), "fake", json.dumps(good | {"name": "fake", "tz": "Fake/Zone"}))
    sched = scheduler(client, clock)
    for at in ("2026-03-07T00:01:00", "2026-03-07T00:02:00"):
        clock.at(at)
        sched.tick()
    assert outcomes(schedules, "fine") == [
        ("2026-03-07T00:01:00Z", "started", "fine-20260307T000100Z"),
        ("2026-03-07T00:02:00Z", "started", "fine-20260307T000200Z"),
    ]
    logged = Counter(r.getMessage().split(":")[0] for r in caplog.records if "not fired" in r.message)
    assert logged == {"schedule feb31": 1, "schedule fake": 1}
    feb31 = "cron expression '0 0 31 2 *' never matches a date (no month it names has that day)"
    fires = [json.loads(raw) for raw in client.kv.lrange(keys.schedule_fires("feb31"), 0, -1)]
    assert [(f["outcome"], f["note"], f["fire_time"]) for f in fires] == [
        ("missed", f"not planned: {feb31}", "2026-03-07T00:01:00Z")
    ]
    assert len(client.kv.lrange(keys.schedule_fires("fake"), 0, -1)) == 1
    problems: dict[str, str] = {}
    assert [s.name for s in schedules.list(problems)] == ["fine"]
    assert problems["feb31"] == feb31
    assert problems["fake"].startswith("time zone 'Fake/Zone' is unknown")


def test_update_keeps_the_cursor_the_latest_run_and_the_history(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """``update`` changes the definition in place: a run still active is seen by the new ``--overlap skip``
    (remove + add forgot it and started a second run at once), the history and the cursor are kept; a new
    cron moves the cursor to now (no catch-up of the new timetable's earlier fires)."""
    schedules.add("slow", workflow="counter", cron="* * * * *", overlap="allow")
    clock.at("2026-03-07T00:01:00")
    sched = scheduler(client, clock)
    sched.tick()
    updated = schedules.update("slow", overlap="skip", input={"limit": 2})
    assert (updated.overlap, updated.input, updated.cron) == ("skip", {"limit": 2}, "* * * * *")
    assert schedules.get("slow") == updated
    assert schedules.state("slow").last_run == "slow-20260307T000100Z"
    clock.at("2026-03-07T00:02:00")
    sched.tick()
    sched.tick()
    assert outcomes(schedules, "slow") == [
        ("2026-03-07T00:01:00Z", "started", "slow-20260307T000100Z"),
        ("2026-03-07T00:02:00Z", "skipped-overlap", None),
    ]
    clock.at("2026-03-07T00:02:30")
    schedules.update("slow", cron="*/2 * * * *", overlap="allow")  # 00:02 is a fire of it: handled already
    assert schedules.state("slow").cursor_ms == int(ts("2026-03-07T00:02:30") * 1000)
    clock.at("2026-03-07T00:04:00")
    sched.tick()
    assert outcomes(schedules, "slow")[-1] == ("2026-03-07T00:04:00Z", "started", "slow-20260307T000400Z")
    assert len(schedules.history("slow")) == 3
    with pytest.raises(ScheduleNotFoundError):
        schedules.update("nope", overlap="skip")
    with pytest.raises(ConfigError, match="hour field: 24"):
        schedules.update("slow", cron="0 24 * * *")
    assert schedules.get("slow").cron == "*/2 * * * *"


def test_update_to_a_later_start_fires_nothing_before_it(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """``update --start`` (or a new ``--cron`` with a later start kept) moves the cursor to now, not before
    the start: the new timetable's fires between now and the start do not fire (as after ``add --start``);
    an earlier start to come is not held back by the old one (no fire was handled)."""
    schedules.add("later", workflow="counter", cron="* * * * *")
    clock.at("2026-03-07T00:00:30")
    start = datetime(2026, 3, 7, 0, 10, tzinfo=UTC)
    schedules.update("later", start=start)
    assert schedules.state("later").cursor_ms == int(start.timestamp() * 1000) - 1
    sched = scheduler(client, clock)
    clock.at("2026-03-07T00:01:00")
    sched.tick()
    clock.at("2026-03-07T00:05:00")
    schedules.update("later", cron="*/2 * * * *")  # the start kept: still no fire before it
    sched.tick()
    assert outcomes(schedules, "later") == []
    clock.at("2026-03-07T00:10:00")
    sched.tick()
    assert outcomes(schedules, "later") == [("2026-03-07T00:10:00Z", "started", "later-20260307T001000Z")]
    schedules.add("sooner", workflow="counter", cron="* * * * *", start=datetime(2026, 3, 7, 1, tzinfo=UTC))
    schedules.update("sooner", start=datetime(2026, 3, 7, 0, 20, tzinfo=UTC))  # an earlier start: from it
    clock.at("2026-03-07T00:20:00")
    sched.tick()
    assert outcomes(schedules, "sooner") == [("2026-03-07T00:20:00Z", "started", "sooner-20260307T002000Z")]


def test_settings_and_options_that_contradict_each_other_are_refused(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """A grace below the pass interval (on-time fires counted missed), an end in the past, a jitter at or
    above the shortest time between the fires (daily 02:30 in New York: 23.5 h across spring forward)."""
    with pytest.raises(ConfigError) as grace:
        scheduler(client, clock, scheduler_grace_s=0.5, scheduler_interval_s=1)
    assert str(grace.value).startswith(
        "GRAPHQ_SCHEDULER_GRACE_S (0.5) is below GRAPHQ_SCHEDULER_INTERVAL_S (1)"
    )
    with pytest.raises(ConfigError) as ended:
        schedules.add("e", workflow="counter", cron="* * * * *", end=datetime(2026, 3, 6, tzinfo=UTC))
    assert str(ended.value) == (
        "schedule e: --end 2026-03-06T00:00:00+00:00 is in the past (now 2026-03-07T00:00:00+00:00): it "
        "would never fire"
    )
    with pytest.raises(ConfigError) as yearly:  # now 2026-03-07: no 1 January before the end
        schedules.add("e", workflow="counter", cron="0 0 1 1 *", end=datetime(2026, 3, 12, tzinfo=UTC))
    assert str(yearly.value) == (
        "schedule e: no fire of '0 0 1 1 *' in UTC between now 2026-03-07T00:00:00+00:00 and --end "
        "2026-03-12T00:00:00+00:00: it would never fire"
    )
    with pytest.raises(ConfigError) as spanned:
        schedules.add(
            "e",
            workflow="counter",
            cron="0 0 1 1 *",
            start=datetime(2027, 6, 1, tzinfo=UTC),
            end=datetime(2027, 12, 1, tzinfo=UTC),
        )
    assert str(spanned.value) == (
        "schedule e: no fire of '0 0 1 1 *' in UTC between --start 2027-06-01T00:00:00+00:00 and --end "
        "2027-12-01T00:00:00+00:00: it would never fire"
    )
    schedules.add("e", workflow="counter", cron="0 0 1 1 *", end=datetime(2027, 1, 1, tzinfo=UTC))
    with pytest.raises(ConfigError, match=r"^schedule e: no fire of '0 0 1 2 \*' in UTC between now"):
        schedules.update("e", cron="0 0 1 2 *", end=datetime(2027, 1, 1, 12, tzinfo=UTC))
    with pytest.raises(ConfigError, match=r"^schedule e: no fire of '0 0 1 1 \*' in UTC between --start"):
        schedules.update("e", start=datetime(2026, 6, 1, tzinfo=UTC), end=datetime(2026, 12, 31, tzinfo=UTC))
    assert schedules.get("e").start is None
    schedules.remove("e")
    with pytest.raises(ConfigError) as jittered:
        schedules.add("j", workflow="counter", cron="30 2 * * *", tz="America/New_York", jitter_s=84_600)
    assert str(jittered.value) == (
        "schedule j: --jitter 84600 s is not below the shortest time between its fires, 84600 s "
        "('30 2 * * *' in America/New_York): a fire could start after the next one"
    )
    schedules.add("j", workflow="counter", cron="30 2 * * *", tz="America/New_York", jitter_s=84_599)
    with pytest.raises(
        ConfigError, match="--jitter 120 s is not below the shortest time between its fires, 60 s"
    ):
        schedules.update("j", cron="* * * * *", jitter_s=120)
    assert schedules.get("j").cron == "30 2 * * *"
    assert [s.name for s in schedules.list()] == ["j"]


def test_the_kill_switch_is_logged_once_when_found_off_and_once_when_on_again(
    client: Client, clock: Clock, schedules: Schedules, caplog: pytest.LogCaptureFixture
) -> None:
    """``graphq disable``: the loop's tick logs one warning for any number of passes (it logged one every
    pass, every second, on every replica), and one line when a pass finds graphq on again."""
    import logging

    from graphcore.backend import switch

    caplog.set_level(logging.INFO, logger="graphq.scheduler")
    schedules.add("a", workflow="counter", cron="* * * * *", overlap="allow")
    switch.disable(client.kv, "test")
    sched = scheduler(client, clock)
    for at in ("00:01:00", "00:01:30", "00:02:00", "00:03:00"):
        clock.at(f"2026-03-07T{at}")
        sched.guarded_tick()
    said = [r.getMessage() for r in caplog.records if r.name == "graphq.scheduler"]
    assert len(said) == 1 and said[0].startswith("scheduler: new runs are refused: graphq is disabled")
    switch.enable(client.kv)
    clock.at("2026-03-07T00:03:20")
    sched.guarded_tick()
    sched.guarded_tick()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("scheduler:")]
    assert said[1:] == [
        "scheduler: graphq is enabled again; fires start (missed ones by their catch-up policy)"
    ]
    clock.at("2026-03-07T00:04:00")
    sched.guarded_tick()
    assert outcomes(schedules, "a")[-1] == ("2026-03-07T00:04:00Z", "started", "a-20260307T000400Z")


def test_a_jittered_fire_still_to_come_is_the_next_and_its_lag_leaves_the_jitter_out(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """With 50 s of jitter, between the 00:02 fire's time and its due time (plus its offset) ``next_due``
    gives that fire, not 00:03 (show skipped it); its history lag is counted from the due time."""
    from graphq.scheduler.plan import jitter_ms

    schedule = schedules.add("j", workflow="counter", cron="* * * * *", jitter_s=50, overlap="allow")
    fire_ms = int(ts("2026-03-07T00:02:00") * 1000)
    offset = jitter_ms(schedule, fire_ms)
    assert offset > 2_000  # fixed by the name and the time
    clock.at("2026-03-07T00:01:55")
    sched = scheduler(client, clock)
    sched.tick()  # the 00:01 fire (due before 00:01:50)
    clock.now = (fire_ms + offset / 2) / 1000
    due = datetime.fromtimestamp((fire_ms + offset) / 1000, UTC)
    assert schedules.next_due("j") == (datetime.fromtimestamp(fire_ms / 1000, UTC), due)
    clock.now = (fire_ms + offset) / 1000 + 0.25
    sched.tick()
    [latest, _] = schedules.history("j")
    assert (latest.fire_time, latest.outcome) == ("2026-03-07T00:02:00Z", "started")
    # 0.25 s plus the pass's real time; from the fire time it would be above offset + 0.25 s (about 10 s)
    assert latest.lag_s is not None and 0.25 <= latest.lag_s < offset / 1000
    assert schedules.next_due("j") == (
        datetime(2026, 3, 7, 0, 3, tzinfo=UTC),
        datetime.fromtimestamp((fire_ms + 60_000 + jitter_ms(schedule, fire_ms + 60_000)) / 1000, UTC),
    )


def test_catchup_latest_starts_one_run_for_the_missed_fires_and_the_next_on_time(
    client: Client, clock: Clock, schedules: Schedules
) -> None:
    """The example of the docs and ``schedules add --help``: grace 10 s, no scheduler from 14:32:30 to
    14:35:50: 14:33 and 14:34 missed, 14:35 caught-up at 14:35:50, 14:36 started on time."""
    from graphq.cli.schedules import add

    assert "14:35 starts at 14:35:50 (caught-up) and 14:36\n      on time, back to back" in (add.help or "")
    clock.at("2026-03-07T14:32:00")
    schedules.add("m", workflow="counter", cron="* * * * *", overlap="allow", catchup="latest")
    sched = scheduler(client, clock, scheduler_grace_s=10)
    clock.at("2026-03-07T14:32:30")
    sched.tick()
    for at in ("14:35:50", "14:36:00"):
        clock.at(f"2026-03-07T{at}")
        sched.tick()
    assert outcomes(schedules, "m") == [
        ("2026-03-07T14:33:00Z", "missed", None),
        ("2026-03-07T14:34:00Z", "missed", None),
        ("2026-03-07T14:35:00Z", "caught-up", "m-20260307T143500Z"),
        ("2026-03-07T14:36:00Z", "started", "m-20260307T143600Z"),
    ]
