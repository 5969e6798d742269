"""Nodes no edge reaches from START: LangGraph compiles them; graphq asks for the edge or the declaration."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import pytest

from graphcore.errors import InvalidGraphError
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


def test_a_node_reached_only_by_an_undeclared_command(lg: Imports) -> None:
    """LangGraph: a node reached only by an unannotated Command(goto="b") compiles and runs ({'x': 3})."""
    builder = _to_b(lg, "none")
    if lg.is_langgraph:
        assert builder.compile().invoke({"x": 0}) == {"x": 3}
        return
    with pytest.raises(InvalidGraphError) as caught:
        builder.compile()
    assert str(caught.value) == (
        "node(s) ['b'] cannot be reached from START: add an edge to them, or declare the node whose "
        "Command(goto=...) goes there: add_node(..., destinations=('b',)) or a return annotation "
        "-> Command[Literal['b']] on its function"
    )


@pytest.mark.parametrize("how", ["destinations", "annotation"])
def test_a_declared_command_target_compiles_and_runs(lg: Imports, how: str) -> None:
    """LangGraph: add_node(..., destinations=("b",)) or ``-> Command[Literal["b"]]`` declares the target."""
    assert _to_b(lg, how).compile().invoke({"x": 0}) == {"x": 3}


def test_an_orphan_node(lg: Imports) -> None:
    """LangGraph: a node nothing leads to compiles silently and never runs ({'x': 1})."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"x": 1})
    builder.add_node("orphan", lambda s: {"x": 2})
    builder.add_node("island", lambda s: {"x": 2})
    builder.add_edge(lg.START, "a")
    if lg.is_langgraph:
        assert builder.compile().invoke({"x": 0}) == {"x": 1}
        return
    with pytest.raises(InvalidGraphError) as caught:
        builder.compile()
    assert str(caught.value) == (
        "node(s) ['island', 'orphan'] cannot be reached from START: add an edge to them, or declare the "
        "node whose Command(goto=...) goes there: add_node(..., destinations=('island', 'orphan')) or a "
        "return annotation -> Command[Literal['island', 'orphan']] on its function"
    )
