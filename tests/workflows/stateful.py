"""Subgraphs by their checkpointer: a stateful one (``checkpointer=True``) that counts the
parent's turns it has seen on a thread, the same with an ``interrupt()``, one that keeps no
checkpoints (``checkpointer=False``) asking a question, which graphq refuses, and one compiled with a saver
of its own that asks after a first node (it checkpoints in its parent's thread, as LangGraph's)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, InMemorySaver, StateGraph, interrupt


class Outer(TypedDict):
    out: str


class Inner(TypedDict):
    out: str
    seen: Annotated[list[str], operator.add]


def count(state: Inner) -> dict[str, Any]:
    return {"seen": ["x"], "out": f"seen {len(state.get('seen', []))}"}


def ask(state: Inner) -> dict[str, Any]:
    return {"seen": ["x"], "out": f"{interrupt('which?')}:{len(state.get('seen', []))}"}


def first(state: Inner) -> dict[str, Any]:
    return {"seen": ["first"]}


def _parent(name: str, node: Any, checkpointer: Any, *, after_first: bool = False) -> Any:
    inner = StateGraph(Inner)
    inner.add_node("inner", node)
    if after_first:
        inner.add_node("first", first)
        inner.add_edge(START, "first")
        inner.add_edge("first", "inner")
    else:
        inner.add_edge(START, "inner")
    outer = StateGraph(Outer)
    outer.add_node("sub", inner.compile(checkpointer=checkpointer, name=f"{name}-inner"))
    outer.add_edge(START, "sub")
    return outer.compile(name=name)


stateful_counter = _parent("stateful-counter", count, True)
stateful_asker = _parent("stateful-asker", ask, True)
stateless_asker = _parent("stateless-asker", ask, False)
own_saver_asker = _parent("own-saver-asker", ask, InMemorySaver(), after_first=True)
