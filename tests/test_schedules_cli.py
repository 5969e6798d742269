"""``graphq schedules ...`` and ``graphq scheduler`` (K1): the commands, bad input (exit 2, one line), and
a pass longer than the pass lock's TTL with two real scheduler processes."""

from __future__ import annotations

import json
import re
import signal
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.backend.runs import RunFilter
from graphcore.engine.registry import Registry
from graphq.scheduler.api import Schedules
from tests.cli_helpers import error_line, invoke, ok
from tests.workers import Procs, wait_for, worker_env

MODULE = "tests.workflows.basic"
REGISTRY = Registry.load([MODULE])


def test_add_list_show_next_history(redis_url: str) -> None:
    added = ok(
        invoke(
            MODULE,
            redis_url,
            "schedules",
            "add",
            "jkt",
            "--workflow",
            "counter",
            "--cron",
            "25 8-16 * * *",
            "--tz",
            "Asia/Jakarta",
            "--input",
            '{"limit": 1}',
        )
    )
    assert added.stdout.startswith("added schedule jkt; first fire ")
    nxt = ok(
        invoke(
            MODULE,
            redis_url,
            "schedules",
            "next",
            "jkt",
            "-n",
            "2",
            "--after",
            "2026-09-10T07:00",
            "-o",
            "json",
        )
    )
    assert json.loads(nxt.stdout) == [
        {
            "local": "2026-09-10T08:25:00+07:00",
            "utc": "2026-09-10T01:25:00Z",
            "zone": "Asia/Jakarta",
            "due": "2026-09-10T01:25:00Z",
        },
        {
            "local": "2026-09-10T09:25:00+07:00",
            "utc": "2026-09-10T02:25:00Z",
            "zone": "Asia/Jakarta",
            "due": "2026-09-10T02:25:00Z",
        },
    ]
    table = ok(
        invoke(MODULE, redis_url, "schedules", "next", "jkt", "-n", "1", "--after", "2026-09-10T07:00")
    ).stdout
    assert "2026-09-10T08:25:00+07:00" in table and "2026-09-10T01:25:00Z" in table
    listed = json.loads(ok(invoke(MODULE, redis_url, "schedules", "list", "-o", "json")).stdout)
    assert [(s["name"], s["cron"], s["tz"], s["overlap"], s["catchup"], s["input"]) for s in listed] == [
        ("jkt", "25 8-16 * * *", "Asia/Jakarta", "skip", "latest", {"limit": 1})
    ]
    shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "jkt", "-o", "json")).stdout)
    assert shown["state"]["last_run"] is None and shown["next_fire"].endswith(":25:00Z")
    assert ok(invoke(MODULE, redis_url, "schedules", "pause", "jkt")).stdout == "schedule jkt: paused\n"
    assert json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "jkt", "-o", "json")).stdout)[
        "paused"
    ]
    assert ok(invoke(MODULE, redis_url, "schedules", "resume", "jkt")).stdout == "schedule jkt: resumed\n"
    run_id = ok(invoke(MODULE, redis_url, "schedules", "trigger", "jkt")).stdout.strip()
    assert run_id.startswith("jkt-") and run_id.endswith("-manual")
    fires = json.loads(ok(invoke(MODULE, redis_url, "schedules", "history", "jkt", "-o", "json")).stdout)
    assert [(f["outcome"], f["run_id"], f["note"]) for f in fires] == [("started", run_id, "triggered")]
    runs = json.loads(ok(invoke(MODULE, redis_url, "runs", "list", "--schedule", "jkt", "-o", "json")).stdout)
    assert [r["id"] for r in runs] == [run_id]
    other = ok(invoke(MODULE, redis_url, "runs", "list", "--schedule", "other"), 2)
    assert other.stderr == "error: no schedule named 'other' (graphq schedules list shows them)\n"
    assert ok(invoke(MODULE, redis_url, "schedules", "remove", "jkt")).stdout == "schedule jkt: removed\n"
    assert json.loads(ok(invoke(MODULE, redis_url, "schedules", "list", "-o", "json")).stdout) == []
    ok(invoke(MODULE, redis_url, "schedules", "add", "jkt", "--workflow", "counter", "--cron", "@daily"))
    listed = ok(invoke(MODULE, redis_url, "runs", "list", "--schedule", "jkt", "-o", "json")).stdout
    assert json.loads(listed) == []  # the removed jkt's run is not the new one's
    kept = ok(invoke(MODULE, redis_url, "runs", "list", "--workflow", "counter", "-o", "json")).stdout
    assert [(r["id"], r["schedule"]) for r in json.loads(kept)] == [(run_id, "jkt")]
    ok(invoke(MODULE, redis_url, "schedules", "remove", "jkt"))


BAD = [
    (["--cron", "61 * * * *"], "cron expression '61 * * * *': minute field: 61 is out of range 0-59"),
    (["--cron", "0 24 * * *"], "cron expression '0 24 * * *': hour field: 24 is out of range 0-23"),
    (["--cron", "* * * *"], "cron expression '* * * *' is invalid"),
    (["--tz", "Mars/Base"], "time zone 'Mars/Base' is unknown"),
    (["--workflow", "nope"], "unknown workflow 'nope'"),
    (["--jitter", "5x"], "--jitter '5x' is invalid: use a number and a unit s, m, h or d"),
    (["--catchup-window", "forever"], "--catchup-window 'forever' is invalid"),
    (["--start", "tomorrow"], "--start 'tomorrow' is invalid: use ISO-8601"),
    (
        ["--start", "2030-01-02", "--end", "2030-01-01"],
        "error: schedule s1: --end (2030-01-01T00:00:00+00:00) must be after --start "
        "(2030-01-02T00:00:00+00:00)",
    ),
    (
        ["--jitter", "30"],
        "error: --jitter '30' is invalid: use a number and a unit s, m, h or d (e.g. 90s, 5m, 2h); 0 (no "
        "unit needed) for none",
    ),
    (
        ["--catchup-window", "0"],
        "error: --catchup-window '0' is invalid: use a duration above 0 (e.g. 90s, 5m, 2h): every fire found "
        "late would be missed; --catchup skip runs no missed fire",
    ),
    (["--catchup-window", "0s"], "error: --catchup-window '0s' is invalid: use a duration above 0"),
    (["--overlap", "sometimes"], "Invalid value for '--overlap'"),
    (["--thread", "t1", "--new-thread"], "--thread and --new-thread exclude each other"),
    (["--tenant", "a b"], "error: --tenant: tenant 'a b' is invalid"),
    (["--thread", "a b"], "error: --thread: thread id 'a b' is invalid"),
    (["--input", '{"n": "x"}'], "error: --input: input.n: Input should be a valid integer (got 'x')"),
    (["--input", "{bad"], "--input"),
    (["--end", "2020-01-01T00:00Z"], "schedule s1: --end 2020-01-01T00:00:00+00:00 is in the past (now "),
    (
        ["--cron", "0 0 1 1 *", "--start", "2030-06-01", "--end", "2030-12-01"],
        "schedule s1: no fire of '0 0 1 1 *' in UTC between --start 2030-06-01T00:00:00+00:00 and --end "
        "2030-12-01T00:00:00+00:00: it would never fire",
    ),
    (
        ["--jitter", "1m"],
        "schedule s1: --jitter 60 s is not below the shortest time between its fires, 60 s ('* * * * *' in "
        "UTC): a fire could start after the next one",
    ),
]


@pytest.mark.parametrize(("extra", "message"), BAD)
def test_bad_input_exits_2_with_one_line(redis_url: str, extra: list[str], message: str) -> None:
    base = {"--workflow": "counter", "--cron": "* * * * *"}
    args = [a for k, v in base.items() if k not in extra for a in (k, v)] + extra
    result = ok(invoke(MODULE, redis_url, "schedules", "add", "s1", *args), 2)
    assert message in error_line(result)


def test_zero_durations_and_the_next_table_of_a_jittered_utc_schedule(redis_url: str) -> None:
    """--jitter 0 and 0s are none; a UTC schedule's next table has one fire column, and with --jitter the
    due times (as show's next_due)."""
    for name, zero in (("z1", "0"), ("z2", "0s")):
        add = ("schedules", "add", name, "--workflow", "counter", "--cron", "@daily", "--jitter", zero)
        ok(invoke(MODULE, redis_url, *add))
        shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", name, "-o", "json")).stdout)
        assert shown["jitter_s"] == 0.0
    ok(
        invoke(
            MODULE,
            redis_url,
            "schedules",
            "add",
            "j",
            "--workflow",
            "counter",
            "--cron",
            "@hourly",
            "--jitter",
            "30m",
        )
    )
    after = ("--after", "2030-01-01T00:00")
    found = json.loads(
        ok(invoke(MODULE, redis_url, "schedules", "next", "j", "-n", "2", *after, "-o", "json")).stdout
    )
    assert [f["utc"] for f in found] == ["2030-01-01T01:00:00Z", "2030-01-01T02:00:00Z"]
    assert all(f["utc"][:14] == f["due"][:14] and f["due"] != f["utc"] for f in found)
    table = ok(invoke(MODULE, redis_url, "schedules", "next", "j", "-n", "2", *after)).stdout
    assert table.count("fire (UTC)") == 1 and "due (UTC, jitter added)" in table
    assert [re.findall(r"2030-\S+Z", line) for line in table.splitlines() if "2030-" in line] == [
        [found[0]["utc"], found[0]["due"]],
        [found[1]["utc"], found[1]["due"]],
    ]
    plain = ok(invoke(MODULE, redis_url, "schedules", "next", "z1", "-n", "1", *after)).stdout
    assert plain.count("fire (UTC)") == 1 and "due" not in plain


def test_next_after_and_start_in_the_dst_gap(redis_url: str) -> None:
    """--after and --start 02:15 on the day New York springs forward (no such wall time) read as the instant
    after the gap, 03:00 EDT: that day's 02:30 fire (at 03:00 EDT, 07:00Z) is listed (it was left out)."""
    add = (
        "schedules",
        "add",
        "ny",
        "--workflow",
        "counter",
        "--cron",
        "30 2 * * *",
        "--tz",
        "America/New_York",
    )
    ok(invoke(MODULE, redis_url, *add, "--start", "2027-03-14T02:15"))
    for extra in ((), ("--after", "2027-03-14T02:15")):
        found = ok(
            invoke(MODULE, redis_url, "schedules", "next", "ny", "-n", "2", *extra, "-o", "json")
        ).stdout
        assert [(f["local"], f["utc"]) for f in json.loads(found)] == [
            ("2027-03-14T03:00:00-04:00", "2027-03-14T07:00:00Z"),
            ("2027-03-15T02:30:00-04:00", "2027-03-15T06:30:00Z"),
        ]
    shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "ny", "-o", "json")).stdout)
    assert shown["start"] == "2027-03-14T03:00:00-04:00"


def test_trigger_of_a_paused_skip_schedule_with_an_active_run_exits_2(redis_url: str) -> None:
    """No worker: the first triggered run stays queued (active); the second trigger is skipped-overlap."""
    ok(invoke(MODULE, redis_url, "schedules", "add", "tg", "--workflow", "counter", "--cron", "@yearly"))
    ok(invoke(MODULE, redis_url, "schedules", "pause", "tg"))
    first = ok(invoke(MODULE, redis_url, "schedules", "trigger", "tg")).stdout.strip()
    assert first.startswith("tg-") and first.endswith("-manual")
    again = ok(invoke(MODULE, redis_url, "schedules", "trigger", "tg"), 2)
    assert again.stderr == (
        f"error: schedule tg: trigger skipped: its run {first} is still active (--overlap skip; recorded "
        "skipped-overlap)\n"
    )
    ok(invoke(MODULE, redis_url, "schedules", "update", "tg", "--overlap", "buffer_one"))
    buffered = ok(invoke(MODULE, redis_url, "schedules", "trigger", "tg")).stdout
    assert buffered == (
        f"schedule tg: trigger buffered: its run {first} is still active (--overlap buffer_one); it starts "
        "when that run ends; the schedule is paused: after resume\n"
    )


def test_unknown_schedule_and_bad_name_exit_2(redis_url: str) -> None:
    for command in ("show", "pause", "resume", "remove", "trigger", "next", "history"):
        result = ok(invoke(MODULE, redis_url, "schedules", command, "ghost"), 2)
        assert error_line(result) == "error: no schedule named 'ghost' (graphq schedules list shows them)"
    bad = ok(
        invoke(MODULE, redis_url, "schedules", "add", "a.b", "--workflow", "counter", "--cron", "@daily"), 2
    )
    assert "schedule name: use 1-100 letters, digits, '_' or '-'" in error_line(bad)
    ok(invoke(MODULE, redis_url, "schedules", "add", "twice", "--workflow", "counter", "--cron", "@daily"))
    again = ok(
        invoke(MODULE, redis_url, "schedules", "add", "twice", "--workflow", "counter", "--cron", "@daily"), 2
    )
    assert error_line(again) == "error: schedule 'twice' exists already (graphq schedules update changes it)"
    late = ok(invoke(MODULE, redis_url, "schedules", "next", "twice", "--after", "noon"), 2)
    assert "--after 'noon' is invalid: use ISO-8601" in error_line(late)


SIM = datetime(2026, 5, 1, tzinfo=UTC).timestamp()
SCHEDULES = 20


def _holder(kv: redis.Redis) -> bytes | None:
    value = kv.get(keys.scheduler_lock())
    return value if isinstance(value, bytes) else None


def _tokens(kv: redis.Redis) -> dict[str, bytes]:
    """scheduler id → its lock token, from the heartbeats."""
    found = {}
    for key in kv.scan_iter(match=keys.scheduler("*")):
        if key == keys.scheduler_lock().encode():
            continue
        beat = json.loads(kv.get(key) or b"{}")
        if beat:
            found[beat["id"]] = beat["token"].encode()
    return found


@pytest.mark.chaos  # make test: test_schedules.py's racing schedulers and the pass lock's own token
def test_b18_two_scheduler_processes_a_pass_longer_than_the_lock(
    procs: Procs,
    client: Client,
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pass longer than the lock's TTL: two ``graphq scheduler`` processes on one simulated clock (60 times
    real time, B 20 s ahead), lock TTL 1 s; A's third pass stalls 6 s between renewing the lock and claiming.
    B takes the lapsed lock and claims; A's stale claims are refused, A never renews or releases B's lock;
    over the ticks every (schedule, fire time) has exactly one history entry and one run."""
    adder = Schedules(client, lambda: SIM)
    for i in range(SCHEDULES):
        adder.add(f"b18-{i}", workflow="counter", cron="* * * * *", overlap="allow")
    anchor = time.time()
    common = {
        "GRAPHQ_SCHEDULER_INTERVAL_S": "0.5",
        "GRAPHQ_SCHEDULER_LOCK_TTL_S": "1",
        "GRAPHQ_SCHEDULER_GRACE_S": "600",
        "GRAPHQ_REAPER_INTERVAL_S": "5",
    }
    # The probe below reads this test's schedulers' status files only (not those of another graphq
    # scheduler on this host, whose heartbeats are in another Redis).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = worker_env(redis_url, MODULE, None, TMPDIR=str(tmp_path), **common)
    a = procs.start(
        "scheduler",
        env=env,
        GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM},{anchor},60",
        GRAPHQ_SCHEDULER_TEST_PASS_DELAY="3:6",
    )
    wait_for(
        lambda: len(_tokens(redis_client)) == 1 and _holder(redis_client), what="scheduler A holding the lock"
    )
    token_a = _holder(redis_client)
    b = procs.start("scheduler", env=env, GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM},{anchor},60,20")
    wait_for(
        lambda: _holder(redis_client) not in (None, token_a), timeout_s=10, what="B taking the lapsed lock"
    )
    token_b = _holder(redis_client)
    assert token_b in _tokens(redis_client).values()
    for probe in (["--scheduler"], ["--scheduler", "--ready"]):  # part D's probe reads both heartbeats
        ok(invoke(MODULE, redis_url, "health", *probe))
    holders = set()
    deadline = time.monotonic() + 8  # A's stall ends meanwhile; then ten ticks and more of both
    while time.monotonic() < deadline:
        holders.add(_holder(redis_client))
        time.sleep(0.05)
    assert holders == {token_b}  # A woke and never took the lock back
    a.send_signal(signal.SIGTERM)
    assert a.wait(timeout=10) == 0
    assert _holder(redis_client) == token_b  # A's release left B's lock alone
    b.send_signal(signal.SIGTERM)
    assert b.wait(timeout=10) == 0
    assert _holder(redis_client) is None
    assert "were claimed by another replica meanwhile" in procs.logged(a)
    total = 0
    for i in range(SCHEDULES):
        name = f"b18-{i}"
        fires = [f.fire_time for f in adder.history(name)]
        runs = client.list_runs(1000, RunFilter(schedule=name))
        assert Counter(fires).most_common(1)[0][1] == 1
        assert sorted(fires) == sorted(r.fire_time or "" for r in runs)
        minutes = sorted(int(datetime.fromisoformat(f).timestamp() - SIM) // 60 for f in fires)
        assert minutes == list(range(1, len(minutes) + 1))  # every minute once, none skipped
        total += len(fires)
    assert total >= SCHEDULES * 10
    assert total == len(client.list_runs(100_000))


def http_status(port: int, path: str) -> int | None:
    """The HTTP status of ``GET path`` on the local ``port``; None while nothing listens there."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None  # not listening yet


def test_scheduler_metrics_port(procs: Procs, client: Client, redis_url: str) -> None:
    """``graphq scheduler --metrics-port``: its fires counted on /metrics (a frozen simulated clock 30 s
    after the first fire time: exactly one fire of each schedule), /healthz and /readyz answer 200."""
    adder = Schedules(client, lambda: SIM)
    for name in ("m1", "m2", "m3"):
        adder.add(name, workflow="counter", cron="* * * * *")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = worker_env(redis_url, MODULE, None, GRAPHQ_SCHEDULER_INTERVAL_S="0.2")
    proc = procs.start(
        "scheduler", "--metrics-port", str(port), env=env, GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM + 90},0,0"
    )
    wait_for(lambda: all(adder.history(n) for n in ("m1", "m2", "m3")), what="one fire of each schedule")

    def get(path: str) -> tuple[int, str]:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()

    def lines(prefix: str) -> list[str]:
        return [line for line in get("/metrics")[1].splitlines() if line.startswith(prefix)]

    def started() -> str:
        return "\n".join(lines("graphq_schedule_fires_total"))

    assert (
        wait_for(started, what="the fires on /metrics")
        == 'graphq_schedule_fires_total{outcome="started"} 3.0'
    )
    assert get("/healthz")[0] == 200 and get("/readyz")[0] == 200
    assert lines("graphq_schedule_fire_lag_seconds_count") == ["graphq_schedule_fire_lag_seconds_count 3.0"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert [f.outcome for n in ("m1", "m2", "m3") for f in adder.history(n)] == ["started"] * 3


def test_scheduler_healthz_fails_while_its_loop_is_stalled(
    procs: Procs, client: Client, redis_url: str
) -> None:
    """``/healthz`` of ``graphq scheduler --metrics-port`` answers 503 while its loop has not run for
    GRAPHQ_LEASE_TTL_S (1 s; the first pass with a fire stalls 3 s, GRAPHQ_SCHEDULER_TEST_PASS_DELAY), as
    ``graphq health --scheduler`` fails then, and 200 again once the pass is done (it answered 200 always)."""
    adder = Schedules(client, lambda: SIM)
    adder.add("h1", workflow="counter", cron="* * * * *")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = worker_env(redis_url, MODULE, None, GRAPHQ_LEASE_TTL_S="1", GRAPHQ_HEARTBEAT_INTERVAL_S="0.2")
    proc = procs.start(
        "scheduler",
        "--metrics-port",
        str(port),
        env=env,
        GRAPHQ_SCHEDULER_INTERVAL_S="0.2",
        GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM + 90},0,0",
        GRAPHQ_SCHEDULER_TEST_PASS_DELAY="1:3",
    )

    def healthz() -> int | None:
        return http_status(port, "/healthz")

    wait_for(lambda: healthz() == 503, timeout_s=5, what="/healthz 503 during the stalled pass")
    assert adder.history("h1") == []  # the pass is still stalled
    wait_for(lambda: adder.history("h1"), timeout_s=10, what="the stalled pass's fire")
    wait_for(lambda: healthz() == 200, timeout_s=5, what="/healthz 200 again")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_a_cron_that_never_matches_is_refused_and_a_stored_one_is_listed_with_its_problem(
    redis_url: str,
) -> None:
    """``0 0 31 2 *``: add exits 2 with one line and stores nothing. One stored anyway (an older graphq) and
    one in a zone this host lacks: list and show exit 0 and show each with its problem."""
    kv = redis.Redis.from_url(redis_url)
    for expr in ("0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"):
        refused = ok(
            invoke(MODULE, redis_url, "schedules", "add", "s", "--workflow", "counter", "--cron", expr), 2
        )
        assert error_line(refused) == (
            f"error: cron expression {expr!r} never matches a date (no month it names has that day)"
        )
    assert kv.hlen(keys.schedules()) == 0 and kv.exists(keys.schedule_state("s")) == 0
    ok(invoke(MODULE, redis_url, "schedules", "add", "fine", "--workflow", "counter", "--cron", "* * * * *"))
    good = json.loads(kv.hget(keys.schedules(), "fine") or b"")
    kv.hset(keys.schedules(), "feb31", json.dumps(good | {"name": "feb31", "cron": "0 0 31 2 *"}))
    kv.hset(keys.schedules(), "fake", json.dumps(good | {"name": "fake", "tz": "Fake/Zone"}))
    listed = json.loads(ok(invoke(MODULE, redis_url, "schedules", "list", "-o", "json")).stdout)
    assert [(s["name"], s["next_fire"] is not None, (s["problem"] or "")[:30]) for s in listed] == [
        ("fake", False, "time zone 'Fake/Zone' is unkno"),
        ("feb31", False, "cron expression '0 0 31 2 *' n"),
        ("fine", True, ""),
    ]
    table = ok(invoke(MODULE, redis_url, "schedules", "list")).stdout
    assert "problem" in table and "never matches" in table
    shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "feb31", "-o", "json")).stdout)
    assert (shown["cron"], shown["problem"]) == (
        "0 0 31 2 *",
        "cron expression '0 0 31 2 *' never matches a date (no month it names has that day)",
    )
    assert "Fake/Zone" in ok(invoke(MODULE, redis_url, "schedules", "show", "fake")).stdout
    assert ok(invoke(MODULE, redis_url, "schedules", "history", "feb31", "-o", "json")).stdout == "[]\n"


def test_the_scheduler_process_skips_a_schedule_it_cannot_plan(
    procs: Procs, client: Client, redis_url: str
) -> None:
    """A stored ``0 0 31 2 *`` schedule and one in ``Fake/Zone`` next to a good one: ``graphq scheduler``
    keeps running (it died at each start, or exited 2), fires the good one, logs each bad one once in 10
    passes, and exits 0 on SIGTERM."""
    adder = Schedules(client, lambda: SIM)
    adder.add("fine", workflow="counter", cron="* * * * *")
    good = json.loads(client.kv.hget(keys.schedules(), "fine") or b"")
    client.kv.hset(keys.schedules(), "feb31", json.dumps(good | {"name": "feb31", "cron": "0 0 31 2 *"}))
    client.kv.hset(keys.schedules(), "fake", json.dumps(good | {"name": "fake", "tz": "Fake/Zone"}))
    env = worker_env(redis_url, MODULE, None, GRAPHQ_SCHEDULER_INTERVAL_S="0.1")
    proc = procs.start("scheduler", env=env, GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM + 90},0,0")
    wait_for(lambda: adder.history("fine"), what="the good schedule's fire")
    time.sleep(1.0)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    logged = [line for line in procs.logged(proc).splitlines() if "not fired" in line]
    assert len(logged) == 2
    assert sum("Fake/Zone' is unknown" in line for line in logged) == 1
    assert sum("'0 0 31 2 *' never matches" in line for line in logged) == 1
    assert [f.outcome for f in adder.history("fine")] == ["started"]


def test_schedules_update(redis_url: str) -> None:
    """``schedules update NAME`` changes only the options given, keeps the state and history; it also
    fixes a stored schedule whose expression never matches; an unknown name or a bad option exits 2."""
    kv = redis.Redis.from_url(redis_url)
    ok(invoke(MODULE, redis_url, "schedules", "add", "s", "--workflow", "counter", "--cron", "0 * * * *"))
    state = kv.get(keys.schedule_state("s"))
    done = ok(
        invoke(MODULE, redis_url, "schedules", "update", "s", "--overlap", "buffer_one", "--jitter", "5s")
    )
    assert done.stdout.startswith("updated schedule s; next fire ")
    shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "s", "-o", "json")).stdout)
    assert (shown["cron"], shown["overlap"], shown["jitter_s"], shown["tz"]) == (
        "0 * * * *",
        "buffer_one",
        5.0,
        "UTC",
    )
    assert kv.get(keys.schedule_state("s")) == state
    good = json.loads(kv.hget(keys.schedules(), "s") or b"")
    kv.hset(keys.schedules(), "feb31", json.dumps(good | {"name": "feb31", "cron": "0 0 31 2 *"}))
    ok(invoke(MODULE, redis_url, "schedules", "update", "feb31", "--cron", "0 0 28 2 *"))
    assert (
        json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "feb31", "-o", "json")).stdout)[
            "problem"
        ]
        is None
    )
    missing = ok(invoke(MODULE, redis_url, "schedules", "update", "nope", "--overlap", "skip"), 2)
    assert error_line(missing) == "error: no schedule named 'nope' (graphq schedules list shows them)"
    bad = ok(invoke(MODULE, redis_url, "schedules", "update", "s", "--cron", "60 * * * *"), 2)
    assert error_line(bad) == "error: cron expression '60 * * * *': minute field: 60 is out of range 0-59"


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("5-1 * * * *", "minute field: range '5-1' is reversed: 5 is after 1"),
        ("0 0 * * FRI-MON", "day-of-week field: range 'FRI-MON' is reversed: FRI is after MON"),
    ],
)
def test_a_reversed_cron_range_is_refused_by_add_and_update(redis_url: str, expr: str, message: str) -> None:
    """Standard cron refuses ``5-1`` (croniter would read it as 5-59 and 0-1): exit 2, one line, nothing
    stored or changed."""
    line = f"error: cron expression {expr!r}: {message}\n"
    add = ok(invoke(MODULE, redis_url, "schedules", "add", "s", "--workflow", "counter", "--cron", expr), 2)
    assert add.stderr == line
    assert redis.Redis.from_url(redis_url).hlen(keys.schedules()) == 0
    ok(invoke(MODULE, redis_url, "schedules", "add", "s", "--workflow", "counter", "--cron", "@daily"))
    assert ok(invoke(MODULE, redis_url, "schedules", "update", "s", "--cron", expr), 2).stderr == line
    shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "s", "-o", "json")).stdout)
    assert shown["cron"] == "@daily"


def test_the_scheduler_refuses_a_grace_below_its_interval(procs: Procs, redis_url: str) -> None:
    """GRAPHQ_SCHEDULER_GRACE_S below GRAPHQ_SCHEDULER_INTERVAL_S (on-time fires would count missed):
    ``graphq scheduler`` exits 2 at startup with one line."""
    env = worker_env(redis_url, MODULE, None, GRAPHQ_SCHEDULER_INTERVAL_S="2", GRAPHQ_SCHEDULER_GRACE_S="1.5")
    proc = procs.start("scheduler", env=env)
    assert proc.wait(timeout=20) == 2
    assert procs.logged(proc).strip().splitlines()[-1] == (
        "error: GRAPHQ_SCHEDULER_GRACE_S (1.5) is below GRAPHQ_SCHEDULER_INTERVAL_S (2): fires found on time "
        "by the next pass would count missed; make the grace at least the interval"
    )


def test_scheduler_healthz_leaves_redis_to_readyz(procs: Procs) -> None:
    """Redis down: ``/healthz`` of ``graphq scheduler --metrics-port`` stays 200 (its loop goes on: an outage
    restarts no pod, as for workers) and ``/readyz`` answers 503 (it pinged Redis in /healthz before)."""
    server = EmbeddedRedis(appendonly=False).start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = worker_env(server.url, MODULE, None, GRAPHQ_LEASE_TTL_S="1", GRAPHQ_HEARTBEAT_INTERVAL_S="0.2")
    try:
        proc = procs.start(
            "scheduler", "--metrics-port", str(port), env=env, GRAPHQ_SCHEDULER_INTERVAL_S="0.2"
        )

        def code(path: str) -> int | None:
            return http_status(port, path)

        wait_for(lambda: code("/readyz") == 200, timeout_s=10, what="/readyz 200 with Redis up")
    finally:
        server.stop()
    wait_for(lambda: code("/readyz") == 503, timeout_s=5, what="/readyz 503 with Redis down")
    time.sleep(1.5)  # past GRAPHQ_LEASE_TTL_S: the loop goes on ticking
    assert code("/healthz") == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0


def test_show_gives_a_buffered_fire_in_utc_as_every_other_time(redis_url: str) -> None:
    """It showed ``2026-12-03 09:24:00+00:00`` where the other times read ``2026-12-03T09:24:00Z``."""
    add = [
        "schedules",
        "add",
        "b1",
        "--workflow",
        "counter",
        "--cron",
        "0 0 1 1 *",
        "--overlap",
        "buffer_one",
    ]
    ok(invoke(MODULE, redis_url, *add))
    ok(invoke(MODULE, redis_url, "schedules", "trigger", "b1"))  # its run stays queued: no worker
    ok(invoke(MODULE, redis_url, "schedules", "trigger", "b1"))  # kept waiting (buffer_one)
    shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "b1", "-o", "json")).stdout)
    buffered = shown["state"]["buffered_ms"]
    assert buffered is not None
    table = ok(invoke(MODULE, redis_url, "schedules", "show", "b1")).stdout.splitlines()
    [row] = [line for line in table if "buffered fire" in line]
    assert datetime.fromtimestamp(buffered / 1000, UTC).isoformat().replace("+00:00", "Z") in row
