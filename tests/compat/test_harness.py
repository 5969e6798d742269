"""The harness itself: the same program, run with each side's imports, gives LangGraph's documented result."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def test_a_two_node_graph_appends_in_order(lg: Imports) -> None:
    """LangGraph: a reducer channel (``operator.add``) appends each node's update, in edge order."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", lg.END)
    assert builder.compile().invoke({"items": ["in"]}) == {"items": ["in", "a", "b"]}
