"""The ``tasks`` start events' ``triggers``: a node's triggers are every
channel it listens to, sorted, however its task was scheduled — ``branch:to:<node>``, and for a join into it
(``add_edge(["b", "c"], "d")``) ``join:b+c:d``, sources as given; a Send's task has ``__pregel_push``. The
same program, LangGraph's imports or graphq's, gives LangGraph's triggers."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict, total=False):
    n: int
    trail: Annotated[list[str], operator.add]


def step(name: str) -> Any:
    return lambda state: {"trail": [name]}


def diamond(lg: Imports, sources: list[str]) -> Any:
    """START → a → b, c; ``sources`` (b and c in some order) join into d."""
    builder = lg.StateGraph(State)
    for name in "abcd":
        builder.add_node(name, step(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge(sources, "d")
    builder.add_edge("d", lg.END)
    return builder.compile()


def starts(chunks: Any) -> list[tuple[str, Any]]:
    return [(c["name"], c["triggers"]) for c in chunks if "triggers" in c]


def test_a_join_node_is_triggered_by_its_branch_and_its_join(lg: Imports) -> None:
    """LangGraph: ``('branch:to:d', 'join:b+c:d')`` for the joined node, the branch alone for the others."""
    chunks = list(diamond(lg, ["b", "c"]).stream({"n": 2}, stream_mode="tasks"))
    assert starts(chunks) == [
        ("a", ("branch:to:a",)),
        ("b", ("branch:to:b",)),
        ("c", ("branch:to:c",)),
        ("d", ("branch:to:d", "join:b+c:d")),
    ]


def test_a_join_is_named_by_its_sources_as_given(lg: Imports) -> None:
    """LangGraph: ``add_edge(["c", "b"], "d")`` is the channel ``join:c+b:d``."""
    chunks = list(diamond(lg, ["c", "b"]).stream({"n": 2}, stream_mode="tasks"))
    assert starts(chunks)[-1] == ("d", ("branch:to:d", "join:c+b:d"))


def test_a_join_node_reached_by_a_command_names_its_join_too(lg: Imports) -> None:
    """LangGraph: the triggers are the node's channels, not the ones written: a ``Command(goto=...)`` to
    the joined node starts it with its join's name too; two joins into one node are both named, sorted."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: lg.Command(goto="d", update={"trail": ["a"]}))
    for name in "bcd":
        builder.add_node(name, step(name))
    builder.add_conditional_edges(lg.START, lambda state: "a", ["a", "b", "c"])  # b, c never run
    builder.add_edge(["c", "b"], "d")
    builder.add_edge(["a", "b"], "d")
    chunks = list(builder.compile().stream({"n": 2}, stream_mode="tasks"))
    assert starts(chunks) == [("a", ("branch:to:a",)), ("d", ("branch:to:d", "join:a+b:d", "join:c+b:d"))]
