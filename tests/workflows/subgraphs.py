"""Workflows with subgraphs (G7): parallel interrupting subgraphs, a slow looping subgraph, a child graph
invoked with its own thread id. Node entries are counted in ``CALLS`` (in-process workers) or logged to
``$GRAPHQ_TEST_DIR/starts.log`` (worker subprocesses)."""

from __future__ import annotations

import operator
import os
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import END, START, Send, StateGraph, get_cancel_token, interrupt

CALLS: Counter[str] = Counter()


class Item(TypedDict, total=False):
    item: str
    notes: Annotated[list[str], operator.add]


def review(state: Item) -> dict[str, Any]:
    CALLS[f"review:{state['item']}"] += 1
    answer = interrupt(f"ok {state['item']}?")
    return {"notes": [f"{state['item']}:{answer}"]}


_i = StateGraph(Item)
_i.add_node("review", review)
_i.add_edge(START, "review")
item_review = _i.compile(name="item-review")


class Batch(TypedDict, total=False):
    items: list[str]
    notes: Annotated[list[str], operator.add]
    joined: int


def fan(state: Batch) -> list[Send]:
    return [Send("reviewer", {"item": item}) for item in state["items"]]


def join(state: Batch) -> dict[str, Any]:
    CALLS["join"] += 1
    return {"joined": len(state["notes"])}


_b = StateGraph(Batch)
_b.add_node("reviewer", item_review)
_b.add_node("join", join)
_b.add_conditional_edges(START, fan)
_b.add_edge("reviewer", "join")
batch_review = _b.compile(name="batch-review")


class Loop(TypedDict, total=False):
    ticks: Annotated[list[int], operator.add]


def slow_tick(state: Loop) -> dict[str, Any]:
    """Logs ``<epoch s> <1 if its cancel token is set already, else 0>`` as it starts, then sleeps 1 s."""
    with (Path(os.environ["GRAPHQ_TEST_DIR"]) / "starts.log").open("a") as log:
        log.write(f"{time.time()} {int(get_cancel_token().cancelled)}\n")
    time.sleep(1.0)
    return {"ticks": [len(state.get("ticks", [])) + 1]}


def more(state: Loop) -> str:
    return "slow_tick" if len(state["ticks"]) < 20 else END


_l = StateGraph(Loop)
_l.add_node("slow_tick", slow_tick)
_l.add_edge(START, "slow_tick")
_l.add_conditional_edges("slow_tick", more, ["slow_tick", END])
slow_child = _l.compile(name="slow-child", config={"max_super_steps": 100})

_sp = StateGraph(Loop)
_sp.add_node("child", slow_child)
_sp.add_edge(START, "child")
slow_parent = _sp.compile(name="slow-parent")


class Counted(TypedDict, total=False):
    counter: int


def bump(state: Counted) -> dict[str, Any]:
    return {"counter": state.get("counter", 0) + 1}


_c = StateGraph(Counted)
_c.add_node("bump", bump)
_c.add_edge(START, "bump")
counting_child = _c.compile(name="counting-child")


class Outer(TypedDict, total=False):
    seen: int


def call_child(state: Outer) -> dict[str, Any]:
    out = counting_child.invoke({}, {"thread_id": "child-thread"})
    return {"seen": out["counter"]}


_o = StateGraph(Outer)
_o.add_node("call_child", call_child)
_o.add_edge(START, "call_child")
outer = _o.compile(name="outer")


class Shared(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int


def ask_then_add(state: Shared) -> dict[str, Any]:
    return {"items": [f"x:{interrupt('ok?')}"], "n": state.get("n", 0) + 1}


_si = StateGraph(Shared)
_si.add_node("x", ask_then_add)
_si.add_edge(START, "x")
_sh = StateGraph(Shared)
_sh.add_node("pre", lambda state: {"items": ["pre"]})
_sh.add_node("sub", _si.compile(name="shared-inner"))
_sh.add_edge(START, "pre")
_sh.add_edge("pre", "sub")
shared_list = _sh.compile(name="shared-list")
"""A subgraph sharing the parent's ``operator.add`` list: its whole output goes through the parent's reducer
(LangGraph: ``{'items': ['in', 'pre', 'in', 'pre', 'x:yes'], 'n': 1}`` for input ``['in']``, answer yes)."""
