"""``update_state(config, values, as_node="__input__")`` (the values as a run's input) and
``as_node="__copy__"`` (a copy of a checkpoint), as LangGraph 1.x gives them.

graphq's input checkpoint already holds the input (docs, "Move a LangGraph program": a thread's checkpoints),
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


class Named(TypedDict):
    name: Annotated[str, lambda a, b: " > ".join([a, b]) if a else b]


def _fan_out(lg: Imports) -> Any:
    """LangGraph's test_fork_and_update_task_results graph: one (and a Send to two), two, three."""
    builder = lg.StateGraph(Named)
    builder.add_node("one", lambda s: lg.Command(goto=[lg.Send("two", {})], update={"name": "one"}))
    builder.add_node("two", lambda s: {"name": "two"})
    builder.add_node("three", lambda s: {"name": "three"})
    builder.add_edge(lg.START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", "three")
    return builder.compile(checkpointer=lg.InMemorySaver())


def _tree(history: list[Any]) -> list[Any]:
    """Each snapshot of ``history`` (newest first) as (values, source, step, [(task, result)], the position
    of its parent in ``history``)."""
    ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    return [
        (
            s.values,
            s.metadata["source"],
            s.metadata["step"],
            [(t.name, t.result) for t in s.tasks],
            ids.index(s.parent_config["configurable"]["checkpoint_id"]) if s.parent_config else None,
        )
        for s in history
    ]


FORKED_ONE = [
    ({"name": "start > one* > two > three"}, "loop", 4, [], 1),
    ({"name": "start > one* > two"}, "loop", 3, [("three", {"name": "three"})], 2),
    ({"name": "start > one*"}, "update", 2, [("two", {"name": "two"})], 3),
    ({"name": "start"}, "fork", 1, [("one", {"name": "one*"})], 8),
    ({"name": "start > one > two > two > three"}, "loop", 3, [], 5),
    ({"name": "start > one > two > two"}, "loop", 2, [("three", {"name": "three"})], 6),
    ({"name": "start > one"}, "loop", 1, [("two", {"name": "two"}), ("two", {"name": "two"})], 7),
    ({"name": "start"}, "loop", 0, [("one", {"name": "one"})], 8),
    ({"name": ""}, "input", -1, [("__start__", {"name": "start"})], None),
]
"""The thread after forking the checkpoint before ``one`` with ``one``'s result replaced (LangGraph's)."""


@pytest.mark.parametrize("form", ["update_state", "bulk_update_state"])
def test_as_copy_with_updates_forks_and_applies_them(lg: Imports, form: str) -> None:
    """LangGraph (test_fork_and_update_task_results): ``update_state(config, [StateUpdate(...)],
    "__copy__")`` is ``bulk_update_state`` of the copy, then those updates on it; each update is the
    result of the copy's task of its node, and the run goes on from there."""
    graph, config = _fan_out(lg), {"configurable": {"thread_id": "1"}}
    graph.invoke({"name": "start"}, config)
    before_one = list(graph.get_state_history(config))[3]
    update = lg.StateUpdate(values={"name": "one*"}, as_node="one")
    if form == "update_state":
        forked = graph.update_state(before_one.config, [update], "__copy__")
    else:
        forked = graph.bulk_update_state(before_one.config, [[lg.StateUpdate(None, "__copy__")], [update]])
    assert graph.invoke(None, forked) == {"name": "start > one* > two > three"}
    assert _tree(list(graph.get_state_history(config))) == FORKED_ONE


def test_supersteps_fill_in_task_results(lg: Imports) -> None:
    """LangGraph (test_supersteps_populate_task_results): ``{}`` as ``__input__`` is an input checkpoint;
    the next super-steps' updates are the results of the tasks they stand for."""

    class Pair(TypedDict):
        num: int
        text: str

    builder = lg.StateGraph(Pair)
    builder.add_node("double", lambda s: {"num": s["num"] * 2, "text": s["text"] * 2})
    builder.add_edge(lg.START, "double")
    graph, config = builder.compile(checkpointer=lg.InMemorySaver()), {"configurable": {"thread_id": "b"}}
    graph.bulk_update_state(
        config,
        [
            [lg.StateUpdate(values={}, as_node="__input__")],
            [lg.StateUpdate(values={"num": 1, "text": "one"}, as_node="__start__")],
            [lg.StateUpdate(values={"num": 2, "text": "oneone"}, as_node="double")],
        ],
    )
    assert _tree(list(graph.get_state_history(config))) == [
        ({"num": 2, "text": "oneone"}, "update", 1, [], 1),
        ({"num": 1, "text": "one"}, "update", 0, [("double", {"num": 2, "text": "oneone"})], 2),
        ({}, "input", -1, [("__start__", {"num": 1, "text": "one"})], None),
    ]
