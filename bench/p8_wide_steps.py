"""P8 wide super-steps split across the worker pool (``GRAPHQ_SHARD_MIN_TASKS``, ``worker/step/split.py``).

Every figure is a wall time from the enqueue of one run to its end, on ``graphq worker --concurrency N``
processes already listening and warmed up (one small split run first), default settings unless said:

* P8: the demo workflow (``code-inventory`` over this Python's standard library: one ``parse_file`` task per
  ``.py`` file, about 1,790 in one super-step), 2 processes against 1: ``P8 ratio = T(2) / T(1)``, target
  0.56 (a speed-up of at least 1.8).
* P8b: one step of 2,000 tasks each sleeping 50 ms (I/O), 8 processes against 1: target 0.143 (7 ×).
* P8cpu: one step of 2,000 pure-Python CPU-bound tasks (a loop of a few ms), 2 processes against 1: target
  0.56.
* P8c: the cost of splitting: one step of 2,000 no-op tasks on ONE process, split (the default) against
  unsplit (the run's ``shard_min_tasks`` 0), alternating on the same process: target 1.3.
* P8mem (report only): the peak RSS (``VmHWM``) of the worker processes of a 2-process pool, each pool fresh,
  after one step of 5,000 no-op tasks whose state holds a 10 MB string (the Send args are small), split and
  unsplit.

Each measured run is repeated ``REPEATS`` times and the median is kept. Every run is printed with the CPU
seconds the pool's worker processes used and the CPU seconds the machine's cores stood idle meanwhile: on a
shared machine, a scaling ratio over its target with no idle CPU says the cores were busy with other work,
not that the pool waited. Nothing here asserts a timing.
"""

from __future__ import annotations

import operator
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from bench.common import (
    Row,
    cpu_seconds,
    fmt_bytes,
    idle_cpu_seconds,
    median,
    peak_rss,
    private_redis,
    summary,
    worker_children,
    worker_pool,
)
from graphcore import END, START, Send, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.examples.code_inventory import graph as inventory
from graphq.worker.queue import RQStepQueue

TASKS = 2000
MEM_TASKS = 5000
BLOB_BYTES = 10 * 1024 * 1024
SLEEP_S = 0.05
CPU_LOOPS = 40_000
REPEATS = 2
TARGET = 0.56
TARGET_B = 0.143
TARGET_CPU = 0.56
TARGET_C = 1.3
RUN_TIMEOUT_S = 600.0
MODULE = "bench.p8_wide_steps"


class Wide(TypedDict, total=False):
    """``n`` tasks of ``kind`` (``noop``, ``sleep``, ``cpu``); a ``blob`` of ``blob_bytes`` in the state."""

    n: int
    kind: str
    blob_bytes: int
    blob: str
    done: Annotated[int, operator.add]


class Item(TypedDict):
    kind: str


def plan(state: Wide) -> dict[str, Any]:
    """Fill the ``blob`` channel with ``blob_bytes`` of random hex (incompressible)."""
    size = state.get("blob_bytes", 0)
    return {"blob": os.urandom(size // 2).hex()} if size else {}


def fan(state: Wide) -> list[Send]:
    """One ``task`` per item, its Send arg a few bytes."""
    return [Send("task", {"kind": state["kind"]}) for _ in range(state["n"])]


def task(item: Item) -> dict[str, Any]:
    """Sleep 50 ms, spin the CPU for a few ms, or nothing."""
    if item["kind"] == "sleep":
        time.sleep(SLEEP_S)
    elif item["kind"] == "cpu":
        total = 0
        for i in range(CPU_LOOPS):
            total += i * i % 7
    return {"done": 1}


def join(state: Wide) -> dict[str, Any]:
    return {}


def _build() -> CompiledGraph:
    g = StateGraph(Wide)
    g.add_node("plan", plan)
    g.add_node("task", task)
    g.add_node("join", join)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["task"])
    g.add_edge("task", "join")
    g.add_edge("join", END)
    return g.compile(name="bench-p8-wide")


wide = _build()
REGISTRY = Registry({wide.name: wide, inventory.name: inventory})


def _client(kv: Any, url: str) -> Client:
    return Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url)))


@dataclass(frozen=True)
class Timed:
    """One measured run: ``wall`` seconds from its enqueue to its end, the CPU seconds its pool's worker
    processes used meanwhile (``cpu``), and the CPU seconds the machine's cores stood idle (``idle``: on a
    shared machine, what the pool could have had more)."""

    wall: float
    cpu: float
    idle: float

    def __str__(self) -> str:
        return f"{self.wall:.2f} s (workers' CPU {self.cpu:.2f} s, idle CPU {self.idle:.2f} s)"


def _run(client: Client, workflow: str, input: Any, **config: Any) -> float:
    """Seconds from the enqueue of one run to its end (it must complete)."""
    start = time.perf_counter()
    run_id = client.enqueue(workflow, input, config=config)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not (record := client.get_run(run_id)).terminal:
        if time.monotonic() > deadline:
            raise TimeoutError(f"P8: run {run_id} of {workflow} did not end within {RUN_TIMEOUT_S:g} s")
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    if record.status != RunStatus.COMPLETED:
        raise RuntimeError(f"P8: run {run_id} of {workflow} ended {record.status.value}: {record.error}")
    return elapsed


def _timed(client: Client, pids: list[int], workflow: str, input: Any, **config: Any) -> Timed:
    """:func:`_run`, with the CPU the worker processes ``pids`` used and the machine's idle CPU."""
    cpu, idle = sum(cpu_seconds(p) for p in pids), idle_cpu_seconds()
    wall = _run(client, workflow, input, **config)
    return Timed(wall, sum(cpu_seconds(p) for p in pids) - cpu, idle_cpu_seconds() - idle)


@contextmanager
def _pool(processes: int, **settings: str) -> Iterator[tuple[Client, list[int]]]:
    """A private Redis and ``graphq worker --concurrency PROCESSES`` warmed up (one small split run: every
    process has imported, connected and run a batch): a client and the worker processes' pids."""
    with private_redis() as (kv, url), worker_pool(url, MODULE, processes, **settings) as pool:
        client = _client(kv, url)
        _run(client, wide.name, {"n": 256, "kind": "noop"})
        yield client, worker_children(pool)


def scaling(name: str, what: str, workflow: str, input: Any, processes: int, target: float) -> Row:
    """``name``: the median wall time of ``REPEATS`` runs on ``processes`` processes over that on 1; prints
    every run and the speed-up, returns the row."""
    times: dict[int, list[Timed]] = {}
    for n in (1, processes):
        with _pool(n) as (client, pids):
            times[n] = [_timed(client, pids, workflow, input) for _ in range(REPEATS)]
        print(f"   {name} {n} process(es): " + "; ".join(map(str, times[n])), flush=True)
    t1, tn = (median([t.wall for t in times[n]]) for n in (1, processes))
    print(f"   {name} speed-up {t1 / tn:.2f} (ideal {processes})", flush=True)
    summary(name, tn / t1, target)
    return Row(name, f"{what}, {processes} processes vs 1", f"{tn:.2f} s", f"{t1:.2f} s", tn / t1, target)


def split_cost() -> Row:
    """P8c: 2,000 no-op tasks on one process, split against unsplit (alternating runs)."""
    noop = {"n": TASKS, "kind": "noop"}
    split: list[Timed] = []
    whole: list[Timed] = []
    with _pool(1) as (client, pids):
        for _ in range(REPEATS):
            split.append(_timed(client, pids, wide.name, noop))
            whole.append(_timed(client, pids, wide.name, noop, shard_min_tasks=0))
    ts, tw = median([t.wall for t in split]), median([t.wall for t in whole])
    print(f"   P8c split: {'; '.join(map(str, split))}", flush=True)
    print(f"   P8c unsplit: {'; '.join(map(str, whole))}", flush=True)
    summary("P8c", ts / tw, TARGET_C)
    what = f"{TASKS:,} no-op tasks, split vs unsplit, 1 process"
    return Row("P8c", what, f"{ts:.2f} s", f"{tw:.2f} s", ts / tw, TARGET_C)


def peaks(shard_min_tasks: str) -> list[tuple[int, int]]:
    """Peak RSS (bytes) of each worker process of a fresh 2-process pool (``GRAPHQ_SHARD_MIN_TASKS``
    ``shard_min_tasks``) after warm-up, and after one run of ``MEM_TASKS`` no-op tasks over 10 MB of state."""
    with _pool(2, GRAPHQ_SHARD_MIN_TASKS=shard_min_tasks) as (client, pids):
        before = [peak_rss(pid) for pid in pids]
        _run(client, wide.name, {"n": MEM_TASKS, "kind": "noop", "blob_bytes": BLOB_BYTES})
        return list(zip(before, [peak_rss(pid) for pid in pids], strict=True))


def memory() -> list[Row]:
    """P8mem (report only): the workers' peak RSS on a 5,000-task step over 10 MB of state, split and
    unsplit."""
    rows = []
    for label, setting in (("split", "128"), ("unsplit", "0")):
        each = peaks(setting)
        shown = ", ".join(f"{fmt_bytes(a)} -> {fmt_bytes(b)}" for a, b in each)
        print(
            f"   P8mem {label}: peak RSS of each worker process, warm -> after the run: {shown}", flush=True
        )
        what = f"peak RSS of a worker, {MEM_TASKS:,} tasks over 10 MB of state, {label} (report only)"
        rows.append(Row("P8mem", what, fmt_bytes(max(b for _, b in each)), "-", None, 0, gate=False))
    return rows


PARTS: dict[str, Callable[[], list[Row]]] = {
    "P8": lambda: [
        scaling("P8", "code-inventory of the stdlib (~1,790 tasks)", inventory.name, {}, 2, TARGET)
    ],
    "P8b": lambda: [
        scaling(
            "P8b",
            f"{TASKS:,} tasks of {SLEEP_S * 1000:g} ms I/O",
            wide.name,
            {"n": TASKS, "kind": "sleep"},
            8,
            TARGET_B,
        )
    ],
    "P8cpu": lambda: [
        scaling("P8cpu", f"{TASKS:,} CPU-bound tasks", wide.name, {"n": TASKS, "kind": "cpu"}, 2, TARGET_CPU)
    ],
    "P8c": lambda: [split_cost()],
    "P8mem": memory,
}


def run(parts: tuple[str, ...] = tuple(PARTS)) -> list[Row]:
    """Run P8, P8b, P8cpu, P8c and P8mem (or the ``parts`` named); prints one summary line each."""
    rows: list[Row] = []
    for part in parts:
        rows += PARTS[part]()
    return rows


if __name__ == "__main__":
    import sys

    run(tuple(sys.argv[1:]) or tuple(PARTS))
