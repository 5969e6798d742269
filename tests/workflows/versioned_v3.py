"""Release 3 of the ``versioned`` workflow (:mod:`tests.workflows.versioned`): node ``ask`` renamed
``review``, so a run paused at ``ask`` cannot go on (the upgrade check says so)."""

from __future__ import annotations

from typing import Any

from graphcore import END, START, StateGraph
from tests.workflows.versioned import State, asking, mark


def a(state: State) -> dict[str, Any]:
    return mark("v3", "a", state)


def review(state: State) -> dict[str, Any]:
    return asking("v3", state)


def c(state: State) -> dict[str, Any]:
    return mark("v3", "c", state)


graph = StateGraph(State)
graph.add_node("a", a)
graph.add_node("review", review)
graph.add_node("c", c)
graph.add_edge(START, "a")
graph.add_edge("a", "review")
graph.add_edge("review", "c")
graph.add_edge("c", END)
versioned = graph.compile(name="versioned")
