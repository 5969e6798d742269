"""Subgraphs by their checkpointer (issue 11): a stateful one (``checkpointer=True``) that counts the
parent's turns it has seen on a thread, the same with an ``interrupt()``, and one that keeps no
checkpoints (``checkpointer=False``) asking a question, which graphq refuses."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph, interrupt


class Outer(TypedDict):
    out: str


class Inner(TypedDict):
    out: str
    seen: Annotated[list[str], operator.add]


def count(state: Inner) -> dict[str, Any]:
    return {"seen": ["x"], "out": f"seen {len(state.get('seen', []))}"}


def ask(state: Inner) -> dict[str, Any]:
    return {"seen": ["x"], "out": f"{interrupt('which?')}:{len(state.get('seen', []))}"}


def _parent(name: str, node: Any, checkpointer: bool) -> Any:
    inner = StateGraph(Inner)
    inner.add_node("inner", node)
    inner.add_edge(START, "inner")
    outer = StateGraph(Outer)
    outer.add_node("sub", inner.compile(checkpointer=checkpointer, name=f"{name}-inner"))
    outer.add_edge(START, "sub")
    return outer.compile(name=name)


stateful_counter = _parent("stateful-counter", count, True)
stateful_asker = _parent("stateful-asker", ask, True)
stateless_asker = _parent("stateless-asker", ask, False)
