"""P5 recovery: from SIGKILL of a worker mid-step to the continuation's step starting on another worker.

Two ``graphq worker`` processes (each in its own process group, default settings: ``GRAPHQ_LEASE_TTL_S``
20, ``GRAPHQ_REAPER_INTERVAL_S`` 5) on a private Redis. A run's second step is a node that blocks on its
first execution; once it runs, the worker holding it is SIGKILLed (its whole process group, as a pod dies).
The reaper of the surviving worker finds the lapsed lease and continues the run; the continuation's step
starts the node again, which records the time. ``P5 ratio = seconds / 30`` (the design's bound with the
defaults), target 1; the defaults' own bound is lease TTL + reaper interval = 25 s.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any, TypedDict

import redis

from bench.common import Row, kill, private_redis, start_worker, summary, wait_for, worker_env
from graphcore import END, START, StateGraph
from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings, get_settings
from graphq.worker.queue import RQStepQueue

TARGET = 1.0
BOUND_S = 30.0
STARTS = "bench-p5:starts"
"""Redis list of the times (``time.time()``) at which the blocking node started, one per execution."""


class Two(TypedDict, total=False):
    n: int


def first(state: Two) -> dict[str, Any]:
    return {"n": 1}


def block_once(state: Two) -> dict[str, Any]:
    """Records when it starts; blocks on its first execution (the benchmark kills its worker then)."""
    client = redis.Redis.from_url(get_settings().redis_url or "")
    try:
        if client.rpush(STARTS, repr(time.time())) == 1:
            time.sleep(600)
    finally:
        client.close()
    return {"n": 2}


_g = StateGraph(Two)
_g.add_node("first", first)
_g.add_node("block", block_once)
_g.add_edge(START, "first")
_g.add_edge("first", "block")
_g.add_edge("block", END)
blocking = _g.compile(name="bench-p5-blocking")
REGISTRY = Registry({blocking.name: blocking})


def measure() -> float:
    """Seconds from the SIGKILL to the continuation's step starting (the node's second start)."""
    with private_redis() as (kv, url):
        client = Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url)))
        env = worker_env(url, "bench.p5_recovery")
        procs = [start_worker(env), start_worker(env)]
        try:
            run_id = client.enqueue(blocking.name, {})
            wait_for(lambda: kv.llen(STARTS) == 1, 60, "P5: the blocking node to start")
            holder = client.get_run(run_id).worker or ""
            group = os.getpgid(int(holder.split(".")[-2]))
            killed = time.time()
            os.killpg(group, signal.SIGKILL)
            wait_for(lambda: kv.llen(STARTS) == 2, 120, "P5: the continuation's step to start")
            started = float(kv.lindex(STARTS, 1))
            [final] = client.wait([run_id], timeout_s=60)
            assert final.continued_from_run_id == run_id and final.status.value == "completed", final
            return started - killed
        finally:
            for p in procs:
                kill(p)


def run() -> list[Row]:
    """Measure once (about 25 s with the defaults) and print the P5 line."""
    seconds = measure()
    ratio = seconds / BOUND_S
    summary("P5", ratio, TARGET)
    defaults = Settings()
    bound = defaults.lease_ttl_s + defaults.reaper_interval_s
    return [
        Row(
            "P5",
            "SIGKILL mid-step → continuation's step starts (defaults)",
            f"{seconds:.1f} s",
            f"{BOUND_S:g} s (lease TTL + reaper interval = {bound:g} s)",
            ratio,
            TARGET,
        )
    ]
