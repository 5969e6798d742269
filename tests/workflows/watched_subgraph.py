"""A run with a subgraph, for ``graphq runs watch --mode checkpoints``: START → plan → writer (a subgraph of
sub_a → sub_b) → polish."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from graphcore import START, StateGraph


class State(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]


def builder() -> StateGraph:
    inner = StateGraph(State)
    inner.add_node("sub_a", lambda s: {"steps": ["sub_a"]})
    inner.add_node("sub_b", lambda s: {"steps": ["sub_b"]})
    inner.add_edge(START, "sub_a")
    inner.add_edge("sub_a", "sub_b")
    outer = StateGraph(State)
    outer.add_node("plan", lambda s: {"steps": ["plan"]})
    outer.add_node("writer", inner.compile())
    outer.add_node("polish", lambda s: {"steps": ["polish"]})
    outer.add_edge(START, "plan")
    outer.add_edge("plan", "writer")
    outer.add_edge("writer", "polish")
    return outer


watched_writer = builder().compile(name="watched-writer")
