"""One workflow, ``versioned``, in two versions (tests/test_version_pinning.py): :mod:`versioned_v1` and
:mod:`versioned_v2` build it from :func:`build` with their own node functions (another module: another
catalog version). Each node appends ``"<release>:<node>"`` to ``ran``, so a run's state says which version
ran each of its super-steps. ``a`` → ``ask`` (asks a human when the input says ``ask``) → ``c``; each node
sleeps ``pause_s``."""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from graphcore import END, START, StateGraph
from graphcore.engine.interrupts import interrupt


class State(TypedDict, total=False):
    ask: bool
    pause_s: float
    ran: Annotated[list[str], operator.add]
    answer: Any


Node = Callable[[State], dict[str, Any]]


def mark(release: str, node: str, state: State) -> dict[str, Any]:
    """The update of node ``node`` of ``release``: its mark in ``ran``, after ``pause_s``."""
    time.sleep(state.get("pause_s", 0.0))
    return {"ran": [f"{release}:{node}"]}


def asking(release: str, state: State) -> dict[str, Any]:
    """Node ``ask``: asks a human (``interrupt``) when the input said ``ask``, then marks."""
    answer = interrupt("go on?") if state.get("ask") else None
    return mark(release, "ask", state) | {"answer": answer}


def build(a: Node, ask: Node, c: Node, config: dict[str, Any] | None = None, asks: str = "ask") -> Any:
    """The ``versioned`` graph over these node functions; ``asks``: the name of the node ``ask`` runs as."""
    graph = StateGraph(State)
    graph.add_node("a", a)
    graph.add_node(asks, ask)
    graph.add_node("c", c)
    graph.add_edge(START, "a")
    graph.add_edge("a", asks)
    graph.add_edge(asks, "c")
    graph.add_edge("c", END)
    return graph.compile(name="versioned", config=config)
