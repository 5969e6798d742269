"""Nodes no edge reaches from START: LangGraph compiles them (silently); graphq compiles them too, with a
warning saying how to declare them."""

from __future__ import annotations

import logging
from typing import Any, Literal, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    x: int


def _to_b(lg: Imports, how: str) -> Any:
    def a(s: State) -> Any:
        return lg.Command(goto="b")

    if how == "annotation":
        a.__annotations__["return"] = lg.Command[Literal["b"]]  # each side's Command
    builder = lg.StateGraph(State)
    builder.add_node("a", a, **({"destinations": ("b",)} if how == "destinations" else {}))
    builder.add_node("b", lambda s: {"x": 3})
    builder.add_edge(lg.START, "a")
    return builder


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "graphcore.engine.validate"]


def test_a_node_reached_only_by_an_undeclared_command(lg: Imports, caplog: pytest.LogCaptureFixture) -> None:
    """LangGraph: a node reached only by an unannotated Command(goto="b") compiles and runs ({'x': 3});
    graphq logs a warning at compile."""
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        graph = _to_b(lg, "none").compile()
    assert graph.invoke({"x": 0}) == {"x": 3}
    if not lg.is_langgraph:
        assert _warnings(caplog) == [
            "node(s) ['b'] cannot be reached from START by an edge: they run only when a Send or a "
            "Command(goto=...) goes there; add an edge to them, or declare the node whose Command(goto=...) "
            "goes there: add_node(..., destinations=('b',)) or a return annotation -> Command[Literal['b']] "
            "on its function"
        ]


def test_a_node_reached_only_by_a_send(lg: Imports) -> None:
    """LangGraph: a node reached only by a Send from a router with a path map that does not name it
    compiles and runs."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"x": 1})
    builder.add_node("sent", lambda s: {"x": s["x"] * 10})
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", lambda s: [lg.Send("sent", {"x": 4})], {"done": lg.END})
    assert builder.compile().invoke({"x": 0}) == {"x": 40}


@pytest.mark.parametrize("how", ["destinations", "annotation"])
def test_a_declared_command_target_compiles_and_runs(
    lg: Imports, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """LangGraph: add_node(..., destinations=("b",)) or ``-> Command[Literal["b"]]`` declares the target
    (graphq: no warning)."""
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        assert _to_b(lg, how).compile().invoke({"x": 0}) == {"x": 3}
    assert _warnings(caplog) == []


def test_an_orphan_node(lg: Imports, caplog: pytest.LogCaptureFixture) -> None:
    """LangGraph: a node nothing leads to compiles silently and never runs ({'x': 1}); graphq warns."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"x": 1})
    builder.add_node("orphan", lambda s: {"x": 2})
    builder.add_node("island", lambda s: {"x": 2})
    builder.add_edge(lg.START, "a")
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        assert builder.compile().invoke({"x": 0}) == {"x": 1}
    if not lg.is_langgraph:
        assert _warnings(caplog) == [
            "node(s) ['island', 'orphan'] cannot be reached from START by an edge: they run only when a Send "
            "or a Command(goto=...) goes there; add an edge to them, or declare the node whose "
            "Command(goto=...) goes there: add_node(..., destinations=('island', 'orphan')) or a return "
            "annotation -> Command[Literal['island', 'orphan']] on its function"
        ]
