"""Small workflows for queue tests: a counter chain, a fan-out, a failing node, an unserialisable value."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import END, START, RetryPolicy, Send, StateGraph


class Counter(TypedDict, total=False):
    n: int
    limit: int
    log: Annotated[list[str], operator.add]


def bump(state: Counter) -> dict[str, Any]:
    return {"n": state.get("n", 0) + 1, "log": [f"bump{state.get('n', 0) + 1}"]}


def more(state: Counter) -> str:
    return "bump" if state["n"] < state.get("limit", 3) else END


_g = StateGraph(Counter)
_g.add_node("bump", bump)
_g.add_edge(START, "bump")
_g.add_conditional_edges("bump", more, ["bump", END])
counter = _g.compile(name="counter")


class Fan(TypedDict, total=False):
    items: list[int]
    squares: Annotated[list[int], operator.add]
    total: int


def fan_out(state: Fan) -> list[Send]:
    return [Send("square", i) for i in state["items"]]


def square(i: int) -> dict[str, Any]:
    return {"squares": [i * i]}


def total(state: Fan) -> dict[str, Any]:
    return {"total": sum(state["squares"])}


_f = StateGraph(Fan)
_f.add_node("square", square)
_f.add_node("total", total)
_f.add_conditional_edges(START, fan_out)
_f.add_edge("square", "total")
fanout = _f.compile(name="fanout")


class Boom(TypedDict, total=False):
    n: int
    bad: Any


def ok(state: Boom) -> dict[str, Any]:
    return {"n": 1}


def explode(state: Boom) -> dict[str, Any]:
    raise RuntimeError("kaboom at node explode")


def unserialisable(state: Boom) -> dict[str, Any]:
    return {"bad": {"inner": [1, object()]}}


_b = StateGraph(Boom)
_b.add_node("ok", ok)
_b.add_node("explode", explode)
_b.add_edge(START, "ok")
_b.add_edge("ok", "explode")
failing = _b.compile(name="failing")

_u = StateGraph(Boom)
_u.add_node("ok", ok)
_u.add_node("unserialisable", unserialisable)
_u.add_edge(START, "ok")
_u.add_edge("ok", "unserialisable")
unserialisable_graph = _u.compile(name="unserialisable")


FLAKES: dict[str, int] = {"calls": 0}


def flaky_call(state: Boom) -> dict[str, Any]:
    FLAKES["calls"] += 1
    if FLAKES["calls"] < 3:
        raise ConnectionError(f"upstream unavailable (call {FLAKES['calls']})")
    return {"n": FLAKES["calls"]}


_r = StateGraph(Boom)
_r.add_node("flaky_call", flaky_call, retry=RetryPolicy(initial_interval_s=0.01, jitter=False))
_r.add_edge(START, "flaky_call")
retrying = _r.compile(name="retrying")
