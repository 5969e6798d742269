"""Workflows of the node error-handler tests (tests/compat/test_error_handlers.py); module-level, so
workers import them. Built from the ``lg`` names of either side (:func:`build`); the module's graphs are
graphq's, for the queue.

``handled``: node ``a`` raises ``KeyError('boom')``; its handler writes what it was given; ``a``'s edge to
``b`` is not followed. ``goto``: the handler returns ``Command(update=..., goto="c")``. ``defaults``: one
``set_node_defaults`` handler for two parallel nodes, one of which fails. ``failing``: the handler raises.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, Command, NodeError, StateGraph


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def boom(state: State) -> dict[str, Any]:
    raise KeyError("boom")


def b(state: State) -> dict[str, Any]:
    return {"log": ["b"]}


def c(state: State) -> dict[str, Any]:
    return {"log": ["c"]}


def build(lg: Any, case: str) -> Any:
    """The graph of ``case`` (see the module docstring) built from ``lg``'s ``StateGraph``, ``Command``
    and ``START`` (LangGraph's or graphq's). LangGraph fills a handler's ``error`` when its annotation is
    ``NodeError`` (a name is enough: here it is a string)."""

    def record(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"{error.node}: {error.error!r}; saw {state['log']}"]}

    def to_c(state: State, error: NodeError) -> Any:
        return lg.Command(update={"log": [f"to c after {error.node}"]}, goto="c")

    def fails(state: State) -> dict[str, Any]:
        raise ValueError("handler failed")

    builder = lg.StateGraph(State)
    handler = {"handled": record, "goto": to_c, "failing": fails}.get(case)
    if case == "defaults":
        builder.set_node_defaults(error_handler=record)
        builder.add_node("a", boom)
    else:
        builder.add_node("a", boom, error_handler=handler)
    builder.add_node("b", b)
    builder.add_node("c", c)
    builder.add_edge(lg.START, "a")
    if case == "defaults":
        builder.add_edge(lg.START, "b")
    else:
        builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    return builder.compile(name=f"handlers_{case}")


class _Graphq:
    StateGraph = StateGraph
    Command = Command
    NodeError = NodeError
    START = START


CASES = ("handled", "goto", "defaults", "failing")
GRAPHS = {case: build(_Graphq, case) for case in CASES}
handlers_handled, handlers_goto, handlers_defaults, handlers_failing = (GRAPHS[c] for c in CASES)
