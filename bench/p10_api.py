"""P10 HTTP API under load: one ``graphq ui`` process on loopback, 200 long-polls held and 200 concurrent
enqueues.

On a private Redis with no worker running:

1. alone: ``ALONE`` enqueues (``POST /api/runs``) one after another on the idle server; their p99 latency;
2. ``HELD`` runs are enqueued, and one ``GET /api/runs/{id}?wait=300`` per run is opened at once (httpx
   AsyncClient); the bench waits until Redis shows all of them blocked (``XREAD BLOCK``, one per poll);
3. under load: ``CONCURRENT`` enqueues at once while the polls are held; their p50/p99 latency; then it
   checks that no poll has returned (the runs are still queued);
4. a ``graphq worker --burst`` works every run: each poll must return ``Graphq-Wait: ended`` with its run
   completed; its latency is from the run's ``ended_at`` to the poll's answer (how late a poll learns).

``P10 ratio = p99 of an enqueue under load / p99 of an enqueue alone``, target 20. Nothing here asserts a
timing; a poll that returns early or wrongly stops the bench (an error, not a figure).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import datetime
from typing import Any, TypedDict

import httpx

from bench.common import ROOT, Row, private_redis, summary, wait_for, worker_env
from graphcore import END, START, StateGraph
from graphcore.backend.embedded import free_port

ALONE = 50
HELD = 200
CONCURRENT = 200
TARGET = 20.0
WAIT_S = 300


class State(TypedDict, total=False):
    n: int


def bump(state: State) -> dict[str, Any]:
    return {"n": state.get("n", 0) + 1}


_g = StateGraph(State)
_g.add_node("bump", bump)
_g.add_edge(START, "bump")
_g.add_edge("bump", END)
bumping = _g.compile(name="bump")


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _graphq(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "graphq.cli", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def _enqueue(api: httpx.AsyncClient, n: int) -> tuple[str, float]:
    start = time.perf_counter()
    reply = await api.post("/runs", json={"workflow": "bump", "input": {"n": n}})
    took = time.perf_counter() - start
    assert reply.status_code == 201, reply.text
    run_id: str = reply.json()["run_ids"][0]
    return run_id, took


async def _poll(api: httpx.AsyncClient, run_id: str) -> tuple[dict[str, Any], str, float]:
    reply = await api.get(f"/runs/{run_id}", params={"wait": WAIT_S})
    answered = time.time()
    assert reply.status_code == 200, reply.text
    return reply.json(), reply.headers["graphq-wait"], answered


def _blocked(kv: Any) -> int:
    return sum(1 for c in kv.client_list() if "b" in c.get("flags", "") and c.get("cmd") == "xread")


async def _measure(base: str, kv: Any, env: dict[str, str]) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=HELD + CONCURRENT + 10, max_keepalive_connections=HELD + 10)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=WAIT_S + 60) as api:
        alone = [(await _enqueue(api, i))[1] for i in range(ALONE)]
        held = [run_id for run_id, _ in await asyncio.gather(*(_enqueue(api, i) for i in range(HELD)))]
        polls = [asyncio.create_task(_poll(api, run_id)) for run_id in held]
        while _blocked(kv) < HELD:
            assert not any(p.done() for p in polls), "a long-poll returned before its run ended"
            await asyncio.sleep(0.05)
        loaded = [took for _, took in await asyncio.gather(*(_enqueue(api, i) for i in range(CONCURRENT)))]
        early = sum(p.done() for p in polls)
        assert early == 0, f"{early} long-polls returned while their runs were queued"
        worker = _graphq(env, "worker", "--burst", "--log-level", "error")
        try:
            answers = await asyncio.gather(*polls)
        finally:
            worker.wait(WAIT_S)
    late = []
    for record, outcome, answered in answers:
        assert (outcome, record["status"]) == ("ended", "completed"), (outcome, record["status"])
        late.append(answered - datetime.fromisoformat(record["ended_at"]).timestamp())
    return {"alone": alone, "loaded": loaded, "late": late}


def measure() -> dict[str, Any]:
    """The latencies (seconds): enqueues alone and under load, and how late each long-poll answered."""
    with private_redis() as (kv, url):
        env = worker_env(url, "bench.p10_api")
        port = free_port()
        ui = _graphq(env, "ui", "--port", str(port))
        try:
            base = f"http://127.0.0.1:{port}"

            def answers() -> bool:
                assert ui.poll() is None, "graphq ui exited"
                try:
                    return httpx.get(base + "/api/openapi.json", timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_for(answers, 60, "graphq ui to answer")
            return asyncio.run(_measure(base + "/api", kv, env))
        finally:
            ui.terminate()
            ui.wait(30)


def run() -> list[Row]:
    """Run P10; print its summary lines; return its rows."""
    got = measure()
    p99_alone, p99_loaded = quantile(got["alone"], 0.99), quantile(got["loaded"], 0.99)
    summary("P10", p99_loaded / p99_alone, TARGET)
    for name, values in (("enqueue alone", got["alone"]), ("enqueue under load", got["loaded"])):
        p50, p99 = quantile(values, 0.5) * 1000, quantile(values, 0.99) * 1000
        print(f"   {name}: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    late = got["late"]
    print(
        f"   {HELD} long-polls held at once, none early; each answered {quantile(late, 0.5) * 1000:.1f} ms "
        f"(p50), {quantile(late, 0.99) * 1000:.1f} ms (p99) after its run ended",
        flush=True,
    )
    return [
        Row(
            "P10",
            f"{CONCURRENT} enqueues with {HELD} long-polls held, p99",
            f"{p99_loaded * 1000:.1f} ms",
            f"{p99_alone * 1000:.1f} ms",
            p99_loaded / p99_alone,
            TARGET,
        )
    ]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    run()
