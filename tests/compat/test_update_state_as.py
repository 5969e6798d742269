"""``update_state(config, values, as_node="__input__")`` (the values as a run's input) and
``as_node="__copy__"`` (a copy of a checkpoint), as LangGraph 1.x gives them.

graphq's input checkpoint already holds the input (README, "Coming from LangGraph": a thread's checkpoints),
so the checkpoint "__input__" writes shows the input applied and the entry nodes next, where LangGraph's
shows ``next == ("__start__",)``; what the thread does next is the same.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _chain(lg: Imports) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=lg.InMemorySaver())


def test_as_input_makes_the_values_a_new_runs_input(lg: Imports) -> None:
    """LangGraph: the values are a run's input, held by an input checkpoint (source "input", next
    ``("__start__",)``, the state unchanged); invoke(None) applies them through the reducers (a "loop"
    checkpoint) and runs the entry nodes."""
    graph, config = _chain(lg), {"configurable": {"thread_id": "1"}}
    graph.invoke({"items": ["i"]}, config)
    written = graph.update_state(config, {"items": ["x"]}, as_node="__input__")
    assert sorted(written["configurable"]) == ["checkpoint_id", "checkpoint_ns", "thread_id"]
    state = graph.get_state(config)
    assert state.metadata == {"source": "input", "step": 3, "parents": {}}
    assert (state.values, state.next) == ({"items": ["i", "a", "b"]}, ("__start__",))
    assert graph.invoke(None, config) == {"items": ["i", "a", "b", "x", "a", "b"]}
    history = [(s.metadata["source"], s.metadata["step"], s.next) for s in graph.get_state_history(config)]
    assert history[:4] == [
        ("loop", 6, ()),
        ("loop", 5, ("b",)),
        ("loop", 4, ("a",)),
        ("input", 3, ("__start__",)),
    ]


def test_as_input_on_a_fresh_thread(lg: Imports) -> None:
    """LangGraph: on a new thread it is a run's input checkpoint (step -1); invoke(None) runs the graph."""
    graph, config = _chain(lg), {"configurable": {"thread_id": "new"}}
    graph.update_state(config, {"items": ["z"]}, as_node="__input__")
    assert graph.get_state(config).metadata["step"] == -1
    assert graph.invoke(None, config) == {"items": ["z", "a", "b"]}


def test_as_input_without_values_is_refused(lg: Imports) -> None:
    """LangGraph: no input writes is an InvalidUpdateError."""
    graph, config = _chain(lg), {"configurable": {"thread_id": "1"}}
    with pytest.raises(lg.InvalidUpdateError):
        graph.update_state(config, None, as_node="__input__")


def test_as_copy_forks_a_checkpoint_under_its_parent(lg: Imports) -> None:
    """LangGraph: the copy has the checkpoint's values, next tasks and parent, a new id, source "fork" and
    one step more; it becomes the thread's head, and invoke(None) goes on from it."""
    graph, config = _chain(lg), {"configurable": {"thread_id": "1"}}
    graph.invoke({"items": ["i"]}, config)
    [before_b] = [s for s in graph.get_state_history(config) if s.next == ("b",)]
    graph.update_state(before_b.config, None, as_node="__copy__")
    copy = graph.get_state(config)
    assert (copy.values, copy.next, copy.metadata["source"]) == ({"items": ["i", "a"]}, ("b",), "fork")
    assert copy.metadata["step"] == before_b.metadata["step"] + 1
    assert copy.parent_config == before_b.parent_config
    assert copy.config["configurable"]["checkpoint_id"] != before_b.config["configurable"]["checkpoint_id"]
    assert graph.invoke(None, config) == {"items": ["i", "a", "b"]}


def test_as_copy_of_a_thread_without_checkpoints_is_refused(lg: Imports) -> None:
    """LangGraph: "Cannot copy a non-existent checkpoint", an InvalidUpdateError."""
    graph = _chain(lg)
    with pytest.raises(lg.InvalidUpdateError):
        graph.update_state({"configurable": {"thread_id": "none"}}, None, as_node="__copy__")
