"""P6 fairness across tenants under a global run limit (R8), with real ``graphq worker`` processes.

P6: 20 tenants with Zipf(s=2) run counts (1,253 for the first down to 3 for the last, 2,000 runs),
``GRAPHQ_MAX_CONCURRENT_RUNS=4``, ``graphq worker --concurrency 4``. As in Temporal's fairness tests, whose
metric this is, the runs are backlogged first: 4 gate runs hold the 4 slots while the 2,000 runs are
enqueued, in a shuffled order, so that every measured run waits; then the gates end and the workers work.
The order of admissions is read from the admission script's own log (``graphcore.backend.admission``'s debug
log: every admission, in order, as the script made it); unfairness = Σ over tenants of the position (from 0)
of the tenant's first admission / tenants². Perfect turns give 190 / 400 = 0.475; the one FIFO list of
before, which admits in enqueue order, is printed for comparison. Only the first admissions matter, so the
workers are stopped once every tenant has had one, instead of working all 2,000 runs: each of those
admissions was made by a real worker's release of a real slot, and nothing later can change the positions.

P6b: a heavy tenant enqueues 1,000 one-step runs (a 50 ms node), the workers work them with 4 slots; then,
five times, 0.3 s apart, a light tenant enqueues one run. Its wait is from its creation to its start (the
run record's ``created_at`` to ``started_at``: waiting for a slot, then for a worker to take its job); the
step's duration is the median, over the heavy runs that ended, of ``started_at`` to ``ended_at``. ``P6b
ratio`` is the median wait over the step's duration (target 2: about one slot turnover, not 1,000 runs).

P6c: a heavy tenant's one run is a wide super-step (``WIDE_TASKS`` tasks of 50 ms), split into batches that
the 4 worker processes run (``graphq.worker.step.split``); while it runs, five times, 0.3 s apart, a light
tenant enqueues a one-step run. A split step holds one admission slot and takes each process in turn: its
first helpers go to the front of the queue, later ones to the back, so a light run's step waits about one
batch. ``P6c ratio`` is the light runs' median wait over a batch's duration (the wide step's duration ×
processes / batches), target 2; without the turns, a light run would wait for the whole step.
"""

from __future__ import annotations

import random
import statistics
import time
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, TypedDict

import redis

from bench.common import Row, private_redis, summary, wait_for, worker_pool
from graphcore import END, START, Send, StateGraph
from graphcore.backend import admission
from graphcore.backend.client import Client, RunRequest
from graphcore.engine.registry import Registry
from graphcore.settings import Settings, get_settings
from graphq.worker.queue import RQStepQueue

TENANTS = 20
RUNS = 2000
SLOTS = 4
PROCESSES = 4
GATE_KEY = "graphq-bench:p6:go"
STEP_S = 0.05
HEAVY_RUNS = 1000
LIGHT_RUNS = 5
WIDE_TASKS = 2000
TARGET = 0.5
TARGET_B = 2.0
TARGET_C = 2.0


class Tick(TypedDict, total=False):
    sleep: float
    gate: bool


def tick(state: Tick) -> dict[str, Any]:
    """Sleep ``state["sleep"]``; a gate waits for the bench's go first."""
    if state.get("gate"):
        kv = redis.Redis.from_url(get_settings().redis_url or "")
        while not kv.exists(GATE_KEY):
            time.sleep(0.01)
        kv.close()
    time.sleep(state.get("sleep", 0.0))
    return {}


_g = StateGraph(Tick)
_g.add_node("tick", tick)
_g.add_edge(START, "tick")
_g.add_edge("tick", END)
p6_tick = _g.compile(name="bench-p6-tick")


class Wide(TypedDict, total=False):
    tasks: int


def _fan(state: Wide) -> list[Send]:
    return [Send("tick", {"sleep": STEP_S}) for _ in range(state["tasks"])]


_w = StateGraph(Wide)
_w.add_node("plan", lambda state: {})
_w.add_node("tick", tick)
_w.add_edge(START, "plan")
_w.add_conditional_edges("plan", _fan, ["tick"])
_w.add_edge("tick", END)
p6_wide = _w.compile(name="bench-p6-wide")
REGISTRY = Registry({p6_tick.name: p6_tick, p6_wide.name: p6_wide})


def zipf_counts(tenants: int = TENANTS, total: int = RUNS, s: float = 2.0) -> dict[str, int]:
    """Run counts per tenant ``t01``..: proportional to 1/k^s, summing to ``total``, at least 1 each."""
    weights = [1 / k**s for k in range(1, tenants + 1)]
    counts = [max(1, round(total * w / sum(weights))) for w in weights]
    counts[0] += total - sum(counts)
    return {f"t{k:02d}": n for k, n in enumerate(counts, 1)}


def unfairness(order: list[str], tenants: int) -> float:
    """Σ over tenants of the position (from 0) of its first appearance in ``order`` / tenants²."""
    first: dict[str, int] = {}
    for position, tenant in enumerate(order):
        first.setdefault(tenant, position)
    return sum(first.values()) / tenants**2


def workers(url: str) -> AbstractContextManager[None]:
    """``graphq worker --concurrency 4`` with ``GRAPHQ_MAX_CONCURRENT_RUNS=4``, listening when entered."""
    return worker_pool(url, "bench.p6_fairness", PROCESSES, GRAPHQ_MAX_CONCURRENT_RUNS=str(SLOTS))


def _client(kv: Any, url: str) -> Client:
    return Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url, max_concurrent_runs=SLOTS)))


def measure_unfairness(seed: int = 6) -> tuple[float, float]:
    """P6: the unfairness of the admissions, and that of one FIFO list over the same enqueue order."""
    counts = zipf_counts()
    order = [t for t, n in counts.items() for _ in range(n)]
    random.Random(seed).shuffle(order)
    with private_redis() as (kv, url), workers(url):
        client = _client(kv, url)
        admission.enable_debug(kv)
        client.enqueue_many([RunRequest(p6_tick.name, {"gate": True}, tenant="gate") for _ in range(SLOTS)])
        for start in range(0, len(order), 200):
            batch = order[start : start + 200]
            client.enqueue_many([RunRequest(p6_tick.name, {"sleep": 0.005}, tenant=t) for t in batch])
        kv.set(GATE_KEY, "1")

        def measured() -> list[str]:
            return [t for t, _ in admission.admissions(kv) if t != "gate"]

        wait_for(lambda: len(set(measured())) == TENANTS, 120, "P6: every tenant's first admission")
        return unfairness(measured(), TENANTS), unfairness(order, TENANTS)


def _seconds(start: str | None, end: str | None) -> float:
    if start is None or end is None:
        raise RuntimeError("P6b: a run has no start or end time")
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _light_waits(client: Client, name: str) -> list[float]:
    """Enqueue the light tenants' runs, 0.3 s apart; returns each one's wait for its start, seconds."""
    light = []
    for i in range(LIGHT_RUNS):
        light.append(client.enqueue(p6_tick.name, {"sleep": STEP_S}, tenant=f"light{i}"))
        time.sleep(0.3)
    wait_for(lambda: all(client.get_run(r).started_at for r in light), 60, f"{name}: the light runs to start")
    return [_seconds(r.created_at, r.started_at) for r in map(client.get_run, light)]


def measure_light_wait() -> tuple[float, float, list[float]]:
    """P6b: (median wait of the light runs, the step's duration, every wait), seconds."""
    with private_redis() as (kv, url), workers(url):
        client = _client(kv, url)
        heavy = client.enqueue_many(
            [RunRequest(p6_tick.name, {"sleep": STEP_S}, tenant="heavy") for _ in range(HEAVY_RUNS)]
        )
        time.sleep(0.5)  # the workers are at it: every slot turns over
        waits = _light_waits(client, "P6b")
        ended = [r for r in client.runs.list(HEAVY_RUNS) if r.id in set(heavy) and r.ended_at]
        step = statistics.median(_seconds(r.started_at, r.ended_at) for r in ended)
        return statistics.median(waits), step, waits


def measure_wide_wait() -> tuple[float, float, list[float]]:
    """P6c: (median wait of the light runs behind a wide step, a batch's duration, every wait), seconds."""
    with private_redis() as (kv, url), workers(url):
        client = _client(kv, url)
        wide = client.enqueue(p6_wide.name, {"tasks": WIDE_TASKS}, tenant="heavy")
        wait_for(lambda: client.get_run(wide).started_at, 60, "P6c: the wide run to start")
        time.sleep(0.5)  # its batches are on every process
        waits = _light_waits(client, "P6c")
        record = client.wait([wide], timeout_s=300)[0]
        batches = -(-WIDE_TASKS // get_settings().shard_batch_tasks)
        batch = _seconds(record.started_at, record.ended_at) * PROCESSES / batches
        return statistics.median(waits), batch, waits


def run() -> list[Row]:
    """Run P6, P6b and P6c; prints ``P6 ratio=<unfairness> target=0.5``, ``P6b ratio=<wait/step> target=2``
    and ``P6c ratio=<wait/batch> target=2``."""
    ours, fifo = measure_unfairness()
    print(f"   unfairness {ours:.3f} (perfect turns 0.475; one FIFO list over the same order: {fifo:.2f})")
    summary("P6", ours, TARGET)
    wait, step, waits = measure_light_wait()
    shown = ", ".join(f"{w * 1000:.0f}" for w in waits)
    print(f"   light runs behind {HEAVY_RUNS} heavy ones waited {shown} ms; a step: {step * 1000:.0f} ms")
    summary("P6b", wait / step, TARGET_B)
    wait_c, batch, waits_c = measure_wide_wait()
    shown = ", ".join(f"{w * 1000:.0f}" for w in waits_c)
    print(f"   light runs behind a {WIDE_TASKS}-task split step waited {shown} ms")
    print(f"   a batch: {batch * 1000:.0f} ms")
    summary("P6c", wait_c / batch, TARGET_C)
    return [
        Row(
            "P6",
            f"fairness, {TENANTS} Zipf(2) tenants, {RUNS} runs, {SLOTS} slots (Σ first position / tenants²)",
            f"{ours:.3f}",
            f"{fifo:.2f} (FIFO)",
            ours,
            TARGET,
        ),
        Row(
            "P6b",
            f"a light tenant's wait behind {HEAVY_RUNS} runs, in step durations",
            f"{wait * 1000:.0f} ms",
            f"{step * 1000:.0f} ms/step",
            wait / step,
            TARGET_B,
        ),
        Row(
            "P6c",
            f"a light tenant's wait behind a {WIDE_TASKS}-task split step, in batch durations",
            f"{wait_c * 1000:.0f} ms",
            f"{batch * 1000:.0f} ms/batch",
            wait_c / batch,
            TARGET_C,
        ),
    ]


if __name__ == "__main__":
    run()
