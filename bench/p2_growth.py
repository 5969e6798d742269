"""P2 growth: 2,000 steps each appending 1 KB to an ``Annotated[list, operator.add]`` channel.

Ours runs on the queue (one run, a burst ``SimpleWorker``): Redis memory of the thread is the sum of
``MEMORY USAGE key SAMPLES 0`` over every ``graphq:{THREAD}:*`` key, against the 2,000 x 1,024-byte payload
(``P2``); per-step time is each step job's execution time in the worker, last tenth against first tenth
(``P2b``). The same graph in LangGraph with its in-memory saver is measured beside it (bytes the saver
holds; per-step time from one node entry to the next), for information.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import time
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from bench.common import (
    Row,
    fmt_bytes,
    fmt_ms,
    install_context,
    private_redis,
    run_burst,
    summary,
)
from graphcore import END, START, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue, queue_name

STEPS = 2000
ITEM_BYTES = 1024
PAYLOAD = STEPS * ITEM_BYTES
MEMORY_TARGET = 3.0
GROWTH_TARGET = 1.3
QUEUE = "bench-p2"


class GrowState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def item(i: int) -> str:
    """The ``i``-th appended value: 1,024 ASCII characters, distinct per step."""
    block = hashlib.sha256(str(i).encode()).hexdigest()
    return (block * (ITEM_BYTES // len(block) + 1))[:ITEM_BYTES]


def append(state: GrowState) -> dict[str, Any]:
    """Append the next 1 KB item."""
    return {"items": [item(len(state.get("items") or []))]}


def more(state: GrowState) -> str:
    """Loop until ``STEPS`` items are in."""
    return "append" if len(state.get("items") or []) < STEPS else END


def growth_graph() -> CompiledGraph:
    """One node that appends an item and loops back to itself until ``STEPS`` items."""
    g = StateGraph(GrowState)
    g.add_node("append", append)
    g.add_edge(START, "append")
    g.add_conditional_edges("append", more, ["append", END])
    return g.compile(name="bench-p2-growth")


def tenth_ratio(durations: Sequence[float]) -> tuple[float, float, float]:
    """(mean of the first tenth, mean of the last tenth, last / first)."""
    tenth = max(1, len(durations) // 10)
    first = sum(durations[:tenth]) / tenth
    last = sum(durations[-tenth:]) / tenth
    return first, last, last / first


def thread_memory(kv: Any, thread_id: str) -> tuple[int, int]:
    """(bytes by ``MEMORY USAGE … SAMPLES 0`` summed over the thread's keys, number of keys)."""
    pattern = keys.thread_pattern(thread_id)
    total = count = 0
    for key in kv.scan_iter(match=pattern, count=1000):
        total += int(kv.memory_usage(key, samples=0) or 0)
        count += 1
    return total, count


def measure_ours() -> dict[str, float]:
    """Run the 2,000-step graph on the queue; memory and per-step numbers."""
    graph = growth_graph()
    with private_redis() as (kv, url):
        settings = Settings(redis_url=url, queue=QUEUE)
        install_context(kv, settings, [graph])
        client = Client(kv, Registry({graph.name: graph}), RQStepQueue(kv, settings))
        run_id = client.enqueue(graph.name, {}, config={"max_super_steps": STEPS + 100})
        wall, worker = run_burst(kv, queue_name(QUEUE, graph.name))
        run = client.get_run(run_id)
        if run.status.value != "completed" or len(run.result["items"]) != STEPS:
            raise RuntimeError(f"P2 run {run_id} ended {run.status.value} at step {run.step}")
        memory, nkeys = thread_memory(kv, run.thread_id)
    first, last, ratio = tenth_ratio(worker.durations)
    return {
        "memory": memory,
        "keys": nkeys,
        "first": first,
        "last": last,
        "growth": ratio,
        "wall": wall,
        "steps": len(worker.durations),
    }


def _saved_bytes(obj: Any) -> int:
    """Total length of every ``bytes`` value inside nested dicts/tuples/lists."""
    if isinstance(obj, bytes | bytearray):
        return len(obj)
    if isinstance(obj, dict):
        return sum(_saved_bytes(v) for v in obj.values())
    if isinstance(obj, tuple | list):
        return sum(_saved_bytes(v) for v in obj)
    return 0


def _langgraph_graph(stamps: list[float]) -> tuple[Any, Any]:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import StateGraph as LGStateGraph

    def lg_append(state: GrowState) -> dict[str, Any]:
        stamps.append(time.perf_counter())
        return append(state)

    g = LGStateGraph(GrowState)
    g.add_node("append", lg_append)
    g.add_edge(START, "append")
    g.add_conditional_edges("append", more, ["append", END])
    saver = InMemorySaver()
    return g.compile(checkpointer=saver), saver


def measure_langgraph() -> dict[str, float] | None:
    """The same graph in LangGraph with ``InMemorySaver`` (durability ``sync``, as our commits are)."""
    try:
        import langgraph  # noqa: F401
    except ImportError:
        return None
    stamps: list[float] = []
    graph, saver = _langgraph_graph(stamps)
    config = {"configurable": {"thread_id": "p2"}, "recursion_limit": STEPS + 100}
    start = time.perf_counter()
    final = graph.invoke({"items": []}, config, durability="sync")
    stamps.append(time.perf_counter())
    wall = time.perf_counter() - start
    if len(final["items"]) != STEPS:
        raise RuntimeError(f"P2 LangGraph run ended with {len(final['items'])} items")
    stored = sum(_saved_bytes(x) for x in (saver.storage, saver.blobs, saver.writes))
    durations = [b - a for a, b in itertools.pairwise(stamps)]
    first, last, ratio = tenth_ratio(durations)
    del graph, saver, final
    return {"memory": stored, "first": first, "last": last, "growth": ratio, "wall": wall}


def _lg_text(lg: dict[str, float] | None, key: str) -> str:
    if lg is None:
        return "n/a"
    if key == "memory":
        return f"LangGraph {fmt_bytes(lg['memory'])}"
    return f"LangGraph {fmt_ms(lg['first'])} -> {fmt_ms(lg['last'])} (x{lg['growth']:.2f})"


def _rows(ours: dict[str, float], lg: dict[str, float] | None) -> list[Row]:
    return [
        Row(
            "P2",
            f"Redis memory of the thread, {STEPS} x 1 KB appends ({int(ours['keys'])} keys)",
            fmt_bytes(ours["memory"]),
            f"payload {fmt_bytes(PAYLOAD)}; {_lg_text(lg, 'memory')}",
            ours["memory"] / PAYLOAD,
            MEMORY_TARGET,
        ),
        Row(
            "P2b",
            "per-step time, last tenth / first tenth",
            f"{fmt_ms(ours['first'])} -> {fmt_ms(ours['last'])}",
            _lg_text(lg, "time"),
            ours["growth"],
            GROWTH_TARGET,
        ),
    ]


def run() -> list[Row]:
    """Run P2; prints ``P2 ratio=…`` (memory / payload) and ``P2b ratio=…`` (last / first tenth)."""
    ours = measure_ours()
    summary("P2", ours["memory"] / PAYLOAD, MEMORY_TARGET)
    summary("P2b", ours["growth"], GROWTH_TARGET)
    print(
        f"P2 ours: {int(ours['steps'])} step jobs in {ours['wall']:.2f} s, "
        f"{fmt_bytes(ours['memory'])} in {int(ours['keys'])} keys",
        flush=True,
    )
    lg = measure_langgraph()
    if lg is None:
        print("langgraph not installed", flush=True)
    else:
        print(
            f"P2 langgraph: {fmt_bytes(lg['memory'])} held by InMemorySaver "
            f"(x{lg['memory'] / PAYLOAD:.0f} payload), per step {fmt_ms(lg['first'])} -> "
            f"{fmt_ms(lg['last'])} (x{lg['growth']:.2f}), {lg['wall']:.2f} s",
            flush=True,
        )
    return _rows(ours, lg)
