"""P7 scheduler: 1,000 schedules firing every minute, 2 scheduler replicas racing on one Redis, simulated
clocks (K1).

Two :class:`graphq.scheduler.loop.Scheduler` instances, each with its own connection, tick at once (threads)
at every simulated minute, the second's clock 0.5 s ahead of the first's; the pass lock decides which makes
the pass (``GRAPHQ_SCHEDULER_LOCK_TTL_S`` = 1 s real, so that the holder changes when one stalls). Every
fire creates its run (the client's run creation: run record, indexes, admission, the RQ job); no worker
executes them. Checked after: runs per (schedule, fire time) = 1, by the fire history and by the runs.

Fire lag: from a fire's due time on the simulated clock (the driver's, not B's skewed one) to its run
being created (the EXEC of its batch of 200): the real time of the pass up to then. The replicas tick as a
fire falls due, as ``Scheduler.run`` does for fires at whole seconds (it ticks just after each whole
interval: :func:`graphq.scheduler.loop.to_next_tick`). ``P7 ratio = p99 lag / 1 s``, target 1.

The day is shortened: a simulated day of every-minute fires for 1,000 schedules is 1,440,000 runs (about
2 KB of Redis each with their RQ jobs: some 3 GB, and tens of minutes of claims on this 2-core machine), so
P7 covers ``MINUTES`` simulated minutes in a row from midnight (``MINUTES`` x 1,000 runs, measured sizes in
the printed line). Each pass claims the 1,000 fires of its minute.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any, TypedDict

from bench.common import Row, private_redis, summary
from graphcore import END, START, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.backend.connection import connect
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.scheduler.api import Schedules
from graphq.scheduler.loop import Scheduler
from graphq.scheduler.schedules import ScheduleStore
from graphq.worker.queue import RQStepQueue

SCHEDULES = 1000
MINUTES = 30
SKEW_S = 0.5
TARGET = 1.0
DAY = datetime(2026, 6, 1, tzinfo=UTC).timestamp()


class Beat(TypedDict, total=False):
    n: int


def beat(state: Beat) -> dict[str, Any]:
    return {"n": state.get("n", 0) + 1}


def _graph() -> Any:
    g = StateGraph(Beat)
    g.add_node("beat", beat)
    g.add_edge(START, "beat")
    g.add_edge("beat", END)
    return g.compile(name="p7-beat")


class SimClock:
    """The simulated clock the driver moves (epoch seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _client(url: str, registry: Registry, settings: Settings) -> Client:
    kv = connect(url)
    return Client(kv, registry, RQStepQueue(kv, settings))


def _tick(results: list[Any], i: int, replica: Scheduler) -> None:
    results[i] = replica.tick()


def _race(
    url: str, registry: Registry, settings: Settings, clock: SimClock, minutes: int
) -> tuple[list[float], int]:
    """Tick both replicas at every simulated minute; the on-time lags (s) and the passes made."""
    a = Scheduler(_client(url, registry, settings), settings, clock, name="p7-a")
    b = Scheduler(_client(url, registry, settings), settings, lambda: clock.now + SKEW_S, name="p7-b")
    lags: list[float] = []
    passes = 0
    for minute in range(minutes):
        clock.now = DAY + (minute + 1) * 60  # the minute's fires are due now
        results: list[Any] = [None, None]
        threads = [threading.Thread(target=_tick, args=(results, i, r)) for i, r in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for result, skew in zip(results, (0.0, SKEW_S), strict=True):
            if result is not None:  # lags on the true simulated clock: B's reads SKEW_S ahead
                passes += 1
                lags += [c.lag_s - skew for c in result.claimed if c.decision.outcome == "started"]
    return lags, passes


def _check(kv: Any, schedules: int, minutes: int) -> int:
    """Runs per (schedule, fire time) must be 1, for every fire of every schedule: by the runs' records and
    by the fire histories; returns the runs. Raises AssertionError otherwise."""
    ids = [r.decode() for r in kv.zrange("graphq:runs", 0, -1)]
    pipe = kv.pipeline(transaction=False)
    for run_id in ids:
        pipe.hmget(keys.run(run_id, run_id), ["schedule", "fire_time"])  # each run on its own thread
    pairs = Counter(tuple(v.decode() for v in reply) for reply in pipe.execute())
    assert len(pairs) == schedules * minutes and max(pairs.values()) == 1, (len(pairs), pairs.most_common(1))
    store = ScheduleStore(kv)
    for schedule in store.all():
        fires = [f.fire_time for f in store.history(schedule.name) if f.outcome == "started"]
        assert len(fires) == len(set(fires)) == minutes, (schedule.name, len(fires))
    return len(ids)


def measure(schedules: int = SCHEDULES, minutes: int = MINUTES) -> tuple[list[float], int, int, float, int]:
    """Race two replicas over ``minutes`` simulated minutes of ``schedules`` every-minute schedules; checks
    one run per (schedule, fire time). Returns the lags (s), passes, runs, seconds taken, Redis bytes used."""
    registry = Registry({"p7-beat": _graph()})
    with private_redis() as (kv, url):
        settings = Settings(redis_url=url, scheduler_lock_ttl_s=1.0)
        clock = SimClock(DAY)
        adder = Schedules(_client(url, registry, settings), clock)
        for i in range(schedules):
            adder.add(f"p7-{i:04d}", workflow="p7-beat", cron="* * * * *", overlap="allow", catchup="skip")
        began = time.perf_counter()
        lags, passes = _race(url, registry, settings, clock, minutes)
        elapsed = time.perf_counter() - began
        runs = _check(kv, schedules, minutes)
        return lags, passes, runs, elapsed, kv.info("memory")["used_memory"]


def run() -> list[Row]:
    """Run P7; print its summary line; return its rows."""
    lags, passes, runs, elapsed, memory = measure()
    p99 = statistics.quantiles(lags, n=100)[98] if len(lags) >= 100 else max(lags, default=0.0)
    p50 = statistics.median(lags) if lags else 0.0
    summary("P7", p99 / 1.0, TARGET)
    print(
        f"   {SCHEDULES} schedules x {MINUTES} simulated minutes, 2 replicas: {runs} runs "
        f"(= fires started, 1 per fire), {passes} passes, fire lag p50 {p50:.3f} s p99 {p99:.3f} s, "
        f"{elapsed:.1f} s, Redis {memory / 2**20:.0f} MiB",
        flush=True,
    )
    return [
        Row("P7", "scheduler fire lag p99 (1,000 schedules, 2 replicas)", f"{p99:.3f} s", "1 s", p99, TARGET),
        Row("P7", "fire lag p50", f"{p50:.3f} s", "1 s", p50, TARGET, gate=False),
    ]


if __name__ == "__main__":
    run()
