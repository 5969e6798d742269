"""A root-channel state's checkpoints as the ``checkpoints`` and ``debug`` stream modes show them, and a
checkpointer class given to ``compile``."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest

from tests.compat.conftest import Imports


def _root_join(lg: Imports) -> Any:
    """The trial's t-root: r1 and r2 from START, r3 after both, on ``Annotated[list, operator.add]``."""
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("r1", lambda v: ["r1"])
    builder.add_node("r2", lambda v: [len(v)])
    builder.add_node("r3", lambda v: ["r3", v[-1]])
    builder.add_edge(lg.START, "r1")
    builder.add_edge(lg.START, "r2")
    builder.add_edge(["r1", "r2"], "r3")
    return builder.compile(checkpointer=lg.InMemorySaver())


def _root_int(lg: Imports) -> Any:
    builder = lg.StateGraph(int)
    builder.add_node("double", lambda v: v * 2)
    builder.add_edge(lg.START, "double")
    return builder.compile(checkpointer=lg.InMemorySaver())


def _payloads(graph: Any, value: Any, thread: str) -> list[tuple[str, Any]]:
    """(mode, checkpoint values) of every ``checkpoints`` event and ``debug`` checkpoint event."""
    config = {"configurable": {"thread_id": thread}}
    seen = []
    for mode, chunk in graph.stream(value, config, stream_mode=["checkpoints", "debug"]):
        if mode == "checkpoints":
            seen.append((mode, chunk["values"]))
        elif chunk["type"] == "checkpoint":
            seen.append((mode, chunk["payload"]["values"]))
    return seen


@pytest.mark.parametrize(
    ("build", "value", "kind", "last"),
    [(_root_join, ["x"], list, ["x", "r1", 1, "r3", 1]), (_root_int, 3, int, 6)],
    ids=["list", "int"],
)
def test_a_root_states_checkpoint_events_hold_the_value(
    lg: Imports, build: Any, value: Any, kind: type, last: Any
) -> None:
    """LangGraph: a root-channel state's ``checkpoints`` events and ``debug`` checkpoint payloads have the
    value itself as ``values`` (never a dict of channels), the last one the final value."""
    seen = _payloads(build(lg), value, "root")
    assert {mode for mode, _ in seen} == {"checkpoints", "debug"}
    assert {type(values) for _, values in seen if values is not None} == {
        kind
    }  # LangGraph: None before input
    assert [values for mode, values in seen if mode == "checkpoints"][-1] == last
    assert [values for mode, values in seen if mode == "debug"][-1] == last


def test_a_root_states_snapshot_and_history_hold_the_value(lg: Imports) -> None:
    """LangGraph: get_state and get_state_history of a root-channel thread show the value itself."""
    graph = _root_join(lg)
    config = {"configurable": {"thread_id": "root-history"}}
    graph.invoke(["x"], config)
    assert graph.get_state(config).values == ["x", "r1", 1, "r3", 1]
    assert all(isinstance(s.values, list) for s in graph.get_state_history(config))


def test_a_checkpointer_class_is_refused_at_compile(lg: Imports) -> None:
    """LangGraph: compile(checkpointer=InMemorySaver), the class without parentheses, raises TypeError."""
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("a", lambda v: ["a"])
    builder.add_edge(lg.START, "a")
    with pytest.raises(TypeError) as caught:
        builder.compile(checkpointer=lg.InMemorySaver)
    if not lg.is_langgraph:
        assert str(caught.value) == (
            "compile(checkpointer=...): got the class graphcore.checkpoints.memory.InMemoryCheckpointStore, "
            "not a checkpoint store: pass an instance, e.g. InMemorySaver() (with the parentheses)"
        )
