"""P4 scale-out: steps per second with 1, 2, 4 and 8 worker processes on I/O-bound nodes.

Each configuration starts ``graphq worker --concurrency N`` (N worker processes under their supervisor) on
a private Redis, waits until all N are listening, warms them up, then enqueues ``2 N`` runs of a chain of
``STEPS`` steps whose node sleeps ``SLEEP_S`` (50 ms, an I/O wait): there are always more ready steps than
workers. Steps per second = steps / wall time from the enqueue to the last run's end. The speed-up at 8 is
the rate with 8 processes over the rate with 1; ``P4 ratio = 8 / speed-up`` (1.0 = linear), target 1.18
(a speed-up of at least 0.85 × 8).
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from bench.common import Row, private_redis, summary, worker_pool
from graphcore import END, START, StateGraph
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import TERMINAL, RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue

PROCESSES = (1, 2, 4, 8)
STEPS = 20
SLEEP_S = 0.05
TARGET = 1.18


class Sleepy(TypedDict, total=False):
    steps: int
    n: int


def nap(state: Sleepy) -> dict[str, Any]:
    """An I/O-bound node: waits 50 ms."""
    time.sleep(SLEEP_S)
    return {"n": state.get("n", 0) + 1}


def _more(state: Sleepy) -> str:
    return "nap" if state["n"] < state["steps"] else END


_g = StateGraph(Sleepy)
_g.add_node("nap", nap)
_g.add_edge(START, "nap")
_g.add_conditional_edges("nap", _more, ["nap", END])
sleepy = _g.compile(name="bench-p4-sleepy", config={"max_super_steps": 10_000})
REGISTRY = Registry({sleepy.name: sleepy})


def _batch(client: Client, runs: int, steps: int) -> float:
    """Enqueue ``runs`` runs of ``steps`` steps; seconds until every one has ended (all must complete)."""
    start = time.perf_counter()
    ids = client.enqueue_many([RunRequest(sleepy.name, {"steps": steps}) for _ in range(runs)])
    pending = set(ids)
    while pending:
        for run_id in list(pending):
            record = client.runs.get(run_id)
            if record.status in TERMINAL:
                if record.status != RunStatus.COMPLETED:
                    raise RuntimeError(f"P4 run {run_id} ended {record.status.value}: {record.error}")
                pending.discard(run_id)
        time.sleep(0.01)
    return time.perf_counter() - start


def measure(processes: int) -> float:
    """Steps per second with ``processes`` worker processes."""
    with private_redis() as (kv, url), worker_pool(url, "bench.p4_scale_out", processes):
        client = Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url)))
        _batch(client, processes, 3)  # warm-up: every process has imported and connected
        runs = 2 * processes
        return runs * STEPS / _batch(client, runs, STEPS)


def run() -> list[Row]:
    """Run P4; prints ``P4 ratio=<8 / speed-up at 8> target=1.18``."""
    rates = {n: measure(n) for n in PROCESSES}
    for n, rate in rates.items():
        print(f"   {n} process(es): {rate:.1f} steps/s (speed-up {rate / rates[1]:.2f})", flush=True)
    top = PROCESSES[-1]
    speedup = rates[top] / rates[1]
    summary("P4", top / speedup, TARGET)
    return [
        Row(
            "P4",
            f"steps/s, {SLEEP_S * 1000:g} ms I/O nodes, {top} processes vs 1 (speed-up {speedup:.2f})",
            f"{rates[top]:.1f} steps/s",
            f"{rates[1]:.1f} steps/s x {top}",
            top / speedup,
            TARGET,
        )
    ]


if __name__ == "__main__":
    run()
