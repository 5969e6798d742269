"""Engine bugs the LangGraph comparison found (issue 11): each case shows LangGraph's value, which graphq now
gives too (or, where graphq deliberately refuses, each side's own result)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


# -- Overwrite wins its super-step --------------------------------------------------------------------------


@pytest.mark.parametrize("first", ["reset", "append"])
def test_an_overwrite_wins_over_a_sibling_append_in_its_step(lg: Imports, first: str) -> None:
    """LangGraph: an ``Overwrite`` replaces the channel's value for its super-step; a parallel node's reducer
    write to the same channel in that step is dropped, whichever task comes first."""
    nodes = {
        "reset": lambda s: {"items": lg.Overwrite(["reset"])},
        "append": lambda s: {"items": ["appended"]},
    }
    builder = lg.StateGraph(State)
    for name in (first, *(n for n in nodes if n != first)):
        builder.add_node(name, nodes[name])
        builder.add_edge(lg.START, name)
    assert builder.compile().invoke({"items": ["in"]}) == {"items": ["reset"]}


def test_writes_after_an_overwrite_step_are_reduced_again(lg: Imports) -> None:
    """LangGraph: the ``Overwrite`` only governs its own super-step; the next step's writes go through the
    reducer onto the overwritten value."""
    builder = lg.StateGraph(State)
    builder.add_node("reset", lambda s: {"items": lg.Overwrite(["reset"])})
    builder.add_node("more", lambda s: {"items": ["more"]})
    builder.add_edge(lg.START, "reset")
    builder.add_edge("reset", "more")
    assert builder.compile().invoke({"items": ["in"]}) == {"items": ["reset", "more"]}


def test_two_overwrites_of_one_channel_in_one_step_are_refused(lg: Imports) -> None:
    """LangGraph: two ``Overwrite`` writes to one channel in one super-step raise ``InvalidUpdateError``."""
    builder = lg.StateGraph(State)
    for name in ("x", "y"):
        builder.add_node(name, lambda s, n=name: {"items": lg.Overwrite([n])})
        builder.add_edge(lg.START, name)
    with pytest.raises(lg.InvalidUpdateError):
        builder.compile().invoke({"items": []})


def test_a_node_returning_an_overwrite_and_routing_sees_the_new_value(lg: Imports) -> None:
    """LangGraph: a conditional edge after a node that wrote an ``Overwrite`` reads the overwritten value."""
    seen: list[Any] = []
    builder = lg.StateGraph(State)
    builder.add_node("reset", lambda s: {"items": lg.Overwrite(["only"])})
    builder.add_node("done", lambda s: seen.append(list(s["items"])) or {})
    builder.add_edge(lg.START, "reset")
    builder.add_conditional_edges("reset", lambda s: "done" if s["items"] == ["only"] else lg.END)
    builder.add_edge("done", lg.END)
    assert builder.compile().invoke({"items": ["a", "b"]}) == {"items": ["only"]}
    assert seen == [["only"]]
