"""P3 engine: our in-process ``invoke`` vs LangGraph's ``invoke``, no checkpointer on either side.

Graphs: (a) a 50-node chain, each node ``{"n": state["n"] + 1}``; (b) a 10-way fan-out from START, each
branch appending to an ``Annotated[list, operator.add]`` channel, joined into one node; (saver) the chain
again with each side's in-memory checkpointer (graphq's ``InMemorySaver`` vs LangGraph's), a new thread per
invoke. Each repetition times a batch of invocations after a warm-up; the ratio is the median of 5
repetitions, ours / LangGraph.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import operator
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from bench.common import Row, fmt_ms, median, summary
from graphcore import END, START, InMemorySaver
from graphcore import StateGraph as OurStateGraph

CHAIN_NODES = 50
FANOUT = 10
CHAIN_CALLS = 200
SAVER_CALLS = 50
FANOUT_CALLS = 500
ASYNC_CALLS = 50
REPEATS = 5
WARMUP = 20
TARGET = 1.0


class ChainState(TypedDict):
    n: int


class FanState(TypedDict, total=False):
    out: Annotated[list[int], operator.add]
    total: int


def bump(state: ChainState) -> dict[str, Any]:
    """A chain node: ``n + 1``."""
    return {"n": state["n"] + 1}


def _worker(i: int) -> Callable[[FanState], dict[str, Any]]:
    def work(state: FanState) -> dict[str, Any]:
        return {"out": [i]}

    return work


def join(state: FanState) -> dict[str, Any]:
    """The join node: counts the branch outputs."""
    return {"total": len(state["out"])}


def build_chain(builder: Callable[[type[Any]], Any]) -> Any:
    """The 50-node chain on either engine's ``StateGraph`` (the builders share the API used here)."""
    g = builder(ChainState)
    names = [f"n{i}" for i in range(CHAIN_NODES)]
    for name in names:
        g.add_node(name, bump)
    for source, target in zip([START, *names], [*names, END], strict=True):
        g.add_edge(source, target)
    return g


def build_fanout(builder: Callable[[type[Any]], Any]) -> Any:
    """START → 10 parallel nodes → join → END on either engine's ``StateGraph``."""
    g = builder(FanState)
    names = [f"w{i}" for i in range(FANOUT)]
    for i, name in enumerate(names):
        g.add_node(name, _worker(i))
        g.add_edge(START, name)
    g.add_node("join", join)
    g.add_edge(names, "join")
    g.add_edge("join", END)
    return g


def _time_calls(invoke: Callable[[], Any], calls: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean seconds per call of ``calls`` calls."""
    for _ in range(WARMUP):
        invoke()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            invoke()
        samples.append((time.perf_counter() - start) / calls)
    return median(samples)


def _check(name: str, ours: Any, theirs: Any) -> None:
    if ours != theirs:
        raise RuntimeError(f"P3 {name}: engines disagree: ours {ours!r}, LangGraph {theirs!r}")


async def abump(state: ChainState) -> dict[str, Any]:
    """An async chain node: ``n + 1``."""
    return {"n": state["n"] + 1}


def _async_chain(repeats: int) -> tuple[float, float]:
    """Seconds per ``ainvoke`` of the chain built of ``async def`` nodes, (ours, LangGraph), both awaited from
    one event loop kept for the whole measurement (graphq's async nodes run on it, as LangGraph's)."""
    from langgraph.graph import StateGraph as LGStateGraph

    def build(builder: Callable[[type[Any]], Any]) -> Any:
        g = builder(ChainState)
        names = [f"n{i}" for i in range(CHAIN_NODES)]
        for name in names:
            g.add_node(name, abump)
        for source, target in zip([START, *names], [*names, END], strict=True):
            g.add_edge(source, target)
        return g

    ours = build(OurStateGraph).compile(name="bench-p3-async")
    theirs = build(LGStateGraph).compile()
    lg_config = {"recursion_limit": CHAIN_NODES * 2 + 10}
    loop = asyncio.new_event_loop()

    def ours_call() -> Any:
        return loop.run_until_complete(ours.ainvoke({"n": 0}))

    def theirs_call() -> Any:
        return loop.run_until_complete(theirs.ainvoke({"n": 0}, lg_config))

    try:
        _check("async", ours_call(), dict(theirs_call()))
        return (
            _time_calls(ours_call, ASYNC_CALLS, repeats),
            _time_calls(theirs_call, ASYNC_CALLS, repeats),
        )
    finally:
        loop.close()


def measure(repeats: int = REPEATS) -> dict[str, tuple[float, float]] | None:
    """Seconds per invoke, (ours, LangGraph), per graph; None when LangGraph is not installed."""
    try:
        from langgraph.graph import StateGraph as LGStateGraph
    except ImportError:
        return None
    results: dict[str, tuple[float, float]] = {}
    cases: list[tuple[str, Callable[..., Any], Any, int]] = [
        ("chain", build_chain, {"n": 0}, CHAIN_CALLS),
        ("fanout", build_fanout, {"out": []}, FANOUT_CALLS),
    ]
    for name, build, inp, calls in cases:
        ours = build(OurStateGraph).compile(name=f"bench-p3-{name}")
        theirs = build(LGStateGraph).compile()
        lg_config = {"recursion_limit": CHAIN_NODES * 2 + 10}
        _check(name, ours.invoke(inp), dict(theirs.invoke(inp, lg_config)))
        results[name] = (
            _time_calls(functools.partial(ours.invoke, inp), calls, repeats),
            _time_calls(functools.partial(theirs.invoke, inp, lg_config), calls, repeats),
        )
    results["saver"] = _saver(repeats)
    results["async"] = _async_chain(repeats)
    return results


def _saver(repeats: int) -> tuple[float, float]:
    """Seconds per invoke of the chain with a checkpointer on both sides, a new thread per invoke."""
    from langgraph.checkpoint.memory import InMemorySaver as LGInMemorySaver
    from langgraph.graph import StateGraph as LGStateGraph

    ours = build_chain(OurStateGraph).compile(InMemorySaver(), name="bench-p3-saver")
    theirs = build_chain(LGStateGraph).compile(checkpointer=LGInMemorySaver())
    threads = itertools.count()

    def config() -> dict[str, Any]:
        return {"configurable": {"thread_id": f"t{next(threads)}"}, "recursion_limit": CHAIN_NODES * 2 + 10}

    _check("saver", ours.invoke({"n": 0}, config()), dict(theirs.invoke({"n": 0}, config())))
    return (
        _time_calls(lambda: ours.invoke({"n": 0}, config()), SAVER_CALLS, repeats),
        _time_calls(lambda: theirs.invoke({"n": 0}, config()), SAVER_CALLS, repeats),
    )


def run() -> list[Row]:
    """Run P3; prints ``P3chain``, ``P3fanout``, ``P3saver`` and ``P3`` (the worst of them) summary lines."""
    results = measure()
    if results is None:
        print("langgraph not installed", flush=True)
        summary("P3", None, TARGET)
        return [Row("P3", "in-process invoke vs LangGraph", "n/a", "langgraph not installed", None, TARGET)]
    rows = []
    what = {"chain": f"{CHAIN_NODES}-node chain invoke", "fanout": f"{FANOUT}-way fan-out + join invoke"}
    what["async"] = f"{CHAIN_NODES}-node chain of async nodes, ainvoke"
    what["saver"] = f"{CHAIN_NODES}-node chain invoke, in-memory checkpointers"
    for name, (ours, theirs) in results.items():
        summary(f"P3{name}", ours / theirs, TARGET)
        rows.append(
            Row(
                f"P3{name}",
                what[name],
                fmt_ms(ours),
                f"LangGraph {fmt_ms(theirs)}",
                ours / theirs,
                TARGET,
                gate=False,
            )
        )
    worst = max(ours / theirs for ours, theirs in results.values())
    summary("P3", worst, TARGET)
    rows.append(Row("P3", "in-process engine, the worst of the P3 lines", "", "", worst, TARGET))
    return rows
