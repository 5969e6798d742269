"""A ``checkpointer=True`` subgraph travels back in time with its parent: replaying the parent from an
earlier checkpoint (or from an ``update_state`` fork of one) runs the subgraph on its state as of that
checkpoint, not on its latest, as LangGraph's."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class Outer(TypedDict):
    out: str


class Inner(TypedDict):
    out: str
    seen: Annotated[list[str], operator.add]


def count(state: Inner) -> dict[str, Any]:
    return {"seen": ["x"], "out": f"seen {len(state.get('seen', []))}"}


def _counter(lg: Imports) -> Any:
    """A parent whose stateful subgraph counts the turns it has seen on the thread; run three turns."""
    inner = lg.StateGraph(Inner)
    inner.add_node("count", count)
    inner.add_edge(lg.START, "count")
    outer = lg.StateGraph(Outer)
    outer.add_node("sub", inner.compile(checkpointer=True))
    outer.add_edge(lg.START, "sub")
    graph = outer.compile(checkpointer=lg.InMemorySaver())
    outs = [graph.invoke({"out": ""}, THREAD) for _ in range(3)]
    assert outs == [{"out": "seen 0"}, {"out": "seen 1"}, {"out": "seen 2"}]
    return graph


THREAD = {"configurable": {"thread_id": "1"}}


def _before_sub(graph: Any) -> list[Any]:
    """The parent's checkpoints about to run the subgraph, newest first (one per turn)."""
    return [s for s in graph.get_state_history(THREAD) if s.next == ("sub",)]


def test_replaying_a_turn_runs_the_subgraph_on_its_state_of_then(lg: Imports) -> None:
    """LangGraph: invoke(None) from the second turn's checkpoint: the subgraph had seen one turn then."""
    graph = _counter(lg)
    second = _before_sub(graph)[1]
    assert graph.invoke(None, second.config) == {"out": "seen 1"}


def test_a_turn_after_a_replay_goes_on_from_the_replayed_branch(lg: Imports) -> None:
    """LangGraph: the next turn's subgraph starts from the state the replay left (two turns seen)."""
    graph = _counter(lg)
    graph.invoke(None, _before_sub(graph)[1].config)
    assert graph.invoke({"out": ""}, THREAD) == {"out": "seen 2"}


def test_a_fork_by_update_state_runs_the_subgraph_on_its_state_of_then(lg: Imports) -> None:
    """LangGraph: update_state on the first turn's checkpoint, then invoke(None) from the fork: the
    subgraph had seen nothing then."""
    graph = _counter(lg)
    fork = graph.update_state(_before_sub(graph)[-1].config, {"out": "f"})
    assert graph.invoke(None, fork) == {"out": "seen 0"}


def test_invoke_none_without_a_checkpoint_id_uses_the_latest_state(lg: Imports) -> None:
    """LangGraph: a new turn on the thread (no checkpoint id) sees every earlier turn."""
    graph = _counter(lg)
    assert graph.invoke({"out": ""}, THREAD) == {"out": "seen 3"}
