"""Graphs whose parallel tasks each run a graph that fans out (the shape that deadlocked one shared pool):
``fanned`` has ``WIDTH`` subgraph nodes in one super-step, each a 2-way fan-out; ``fanned-calls`` the same
with ``inner.invoke(...)`` in the nodes; ``fanned-deep`` nests it one level more (``WIDTH`` nodes each
running ``fanned``). ``WIDTH`` is above ``GRAPHQ_MAX_WORKERS_PER_STEP``'s default of 8."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph
from graphcore.engine.executor import CompiledGraph

WIDTH = 10


class Out(TypedDict):
    out: Annotated[list[str], operator.add]


def _pair() -> CompiledGraph:
    g = StateGraph(Out)
    g.add_node("a", lambda s: {"out": ["a"]})
    g.add_node("b", lambda s: {"out": ["b"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    return g.compile(name="fanned-pair")


def _wide(node: Any, name: str) -> CompiledGraph:
    """``WIDTH`` parallel copies of ``node`` from START."""
    g = StateGraph(Out)
    for i in range(WIDTH):
        g.add_node(f"s{i}", node)
        g.add_edge(START, f"s{i}")
    return g.compile(name=name)


pair = _pair()


def call_pair(state: Out) -> dict[str, Any]:
    return {"out": pair.invoke({"out": []})["out"]}


fanned = _wide(pair, "fanned")
fanned_calls = _wide(call_pair, "fanned-calls")
fanned_deep = _wide(fanned, "fanned-deep")
