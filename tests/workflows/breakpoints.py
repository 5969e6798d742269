"""Workflows with static breakpoints and nodes that read LangGraph's config, for the queue tests of
tests/test_breakpoints.py (module-level: workers import them)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph
from graphcore.engine.interrupts import interrupt


class Items(TypedDict):
    items: Annotated[list[str], operator.add]


def _append(name: str) -> Any:
    return lambda state: {"items": [name]}


def _chain(*nodes: str) -> StateGraph:
    builder = StateGraph(Items)
    previous = START
    for name in nodes:
        builder.add_node(name, _append(name))
        builder.add_edge(previous, name)
        previous = name
    return builder


def _ask(state: Items) -> dict[str, Any]:
    return {"items": [f"b:{interrupt('ok?')}"]}


def _config_of(state: Items, config: Any) -> dict[str, Any]:
    conf = config["configurable"]
    return {"items": [f"{conf['thread_id']}/{conf['user']}/{config['recursion_limit']}/{config['tags']}"]}


stops_before = _chain("a", "b", "c").compile(name="stops_before", interrupt_before=["b"])
stops_after = _chain("a", "b", "c").compile(name="stops_after", interrupt_after=["a"])
stops_everywhere = _chain("a", "b").compile(name="stops_everywhere", interrupt_before="*")
stops_after_last = _chain("a", "b").compile(name="stops_after_last", interrupt_after=["b"])
stops_twice = _chain("a", "b", "c").compile(name="stops_twice", interrupt_before=["b", "c"])

_asking = _chain("a")
_asking.add_node("b", _ask)
_asking.add_edge("a", "b")
asks_after_a_stop = _asking.compile(name="asks_after_a_stop", interrupt_before=["b"])

_reads = StateGraph(Items)
_reads.add_node("read", _config_of)
_reads.add_edge(START, "read")
reads_config = _reads.compile(name="reads_config")

three_steps = _chain("a", "b", "c").compile(name="three_steps")

_outer = _chain("pre")
_outer.add_node("sub", _chain("a", "b").compile(interrupt_before=["b"]))
_outer.add_node("post", _append("post"))
_outer.add_edge("pre", "sub")
_outer.add_edge("sub", "post")
subgraph_stops = _outer.compile(name="subgraph_stops")
