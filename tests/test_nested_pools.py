"""Tasks that run graphs of their own, many at once: each nesting depth has a thread pool of
its own (graphcore.engine.threads), so an outer task waiting on its inner graph never holds a thread that
graph's tasks need. With one shared pool of GRAPHQ_MAX_WORKERS_PER_STEP (8) threads, 10 parallel subgraph
nodes that each fan out two ways hung for ever, in process and on a worker."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from graphcore import END, START, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.errors import NodeTimeoutError
from graphcore.settings import get_settings
from tests.workers import Start, ended, worker_env
from tests.workflows.fanned import WIDTH, Out, fanned, fanned_calls, fanned_deep, pair

REGISTRY = Registry.load(["tests.workflows.fanned"])
BOUND_S = 20.0
"""A run that deadlocks never ends: each one here must end within this many seconds (they take ms)."""


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.fanned", tmp_path)


def _bounded(fn: Any) -> Any:
    """``fn()``'s result, run in a thread joined for at most BOUND_S seconds (a deadlock fails the test)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), f"deadlocked: still running after {BOUND_S} s"
    assert box, "the run raised (see the thread's traceback above)"
    return box[0]


@pytest.mark.parametrize("graph", [fanned, fanned_calls], ids=["subgraph-nodes", "invoke-in-nodes"])
def test_parallel_tasks_each_running_a_fan_out_end(graph: CompiledGraph) -> None:
    assert WIDTH > 8  # more than the default pool
    assert _bounded(lambda: graph.invoke({"out": []})) == {"out": ["a", "b"] * WIDTH}


def test_the_same_shape_nested_two_levels_deep_ends() -> None:
    result = _bounded(lambda: fanned_deep.invoke({"out": []}))
    assert result == {"out": ["a", "b"] * WIDTH * WIDTH}


def test_nested_fan_outs_end_under_max_concurrency() -> None:
    result = _bounded(lambda: fanned_deep.invoke({"out": []}, {"max_concurrency": 2}))
    assert result == {"out": ["a", "b"] * WIDTH * WIDTH}


def test_async_nodes_awaiting_fan_outs_end() -> None:
    async def call(state: Out) -> dict[str, Any]:
        return {"out": (await pair.ainvoke({"out": []}))["out"]}

    g = StateGraph(Out)
    for i in range(WIDTH):
        g.add_node(f"s{i}", call)
        g.add_edge(START, f"s{i}")
    outer = g.compile()
    assert _bounded(lambda: asyncio.run(outer.ainvoke({"out": []}))) == {"out": ["a", "b"] * WIDTH}


def test_parallel_subgraph_fan_outs_end_on_a_worker(client: Client, start: Start) -> None:
    start()
    run_id = client.enqueue("fanned", {"out": []})
    run = ended(client, run_id, timeout_s=BOUND_S)
    assert (run.status, run.result) == (RunStatus.COMPLETED, {"out": ["a", "b"] * WIDTH})


def test_sync_nodes_with_async_routers_running_graphs_end_under_ainvoke() -> None:
    """A sync node with an async router runs in graphq's pool of its depth, not in the event loop's default
    executor: with two such nodes each holding one of its two threads (a barrier keeps both in), the inner
    graphs' own such nodes found no thread there and ``ainvoke`` hung for ever."""

    async def to_end(state: Out) -> str:
        return END

    inner_g = StateGraph(Out)
    inner_g.add_node("leaf", lambda s: {"out": ["leaf"]})
    inner_g.add_edge(START, "leaf")
    inner_g.add_conditional_edges("leaf", to_end)
    inner = inner_g.compile()
    both = threading.Barrier(2, timeout=BOUND_S)

    def calling(name: str) -> Any:
        def node(state: Out) -> dict[str, Any]:
            both.wait()
            return {"out": [name, *inner.invoke({"out": []})["out"]]}

        return node

    g = StateGraph(Out)
    for name in ("x", "y"):
        g.add_node(name, calling(name))
        g.add_edge(START, name)
        g.add_conditional_edges(name, to_end)
    outer = g.compile()

    async def main() -> Any:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(2))
        return await outer.ainvoke({"out": []})

    assert _bounded(lambda: asyncio.run(main())) == {"out": ["x", "leaf", "y", "leaf"]}


def test_sync_nodes_with_async_routers_stuck_past_their_timeout_hold_no_pool_thread() -> None:
    """A timed sync node with an async router runs in a thread of its own, as a timed sync task does: as many
    stuck past their timeout as the pool has threads used to hold all of them, and the next parallel step of
    any graph in the process waited for ever."""
    width = get_settings().max_workers_per_step
    release = threading.Event()

    async def to_end(state: Out) -> str:
        return END

    def stuck(state: Out) -> dict[str, Any]:
        release.wait(3 * BOUND_S)  # set when the test ends
        return {"out": ["late"]}

    g = StateGraph(Out)
    for i in range(width):
        g.add_node(f"s{i}", stuck, timeout=0.05)
        g.add_edge(START, f"s{i}")
        g.add_conditional_edges(f"s{i}", to_end)
    timed = g.compile()
    try:
        with pytest.raises(NodeTimeoutError):
            timed.invoke({"out": []})
        assert _bounded(lambda: pair.invoke({"out": []})) == {"out": ["a", "b"]}
    finally:
        release.set()
