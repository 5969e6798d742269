"""A thread's checkpoints in LangGraph's shape: per run with input, an input checkpoint
(step s, source "input", next ``("__start__",)``, the state before the input), then the input applied (step
s + 1, source "loop"), then one per super-step; snapshot metadata with the run config's keys copied in; each
committed step's tasks with their writes as ``result``; time travel to the input checkpoint."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _chain(lg: Imports) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"x": s["x"] + 1, "log": ["a"]})
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=lg.InMemorySaver())


def _shape(snapshots: Any) -> list[tuple[Any, ...]]:
    return [(s.metadata, s.next, s.values, [(t.name, t.result) for t in s.tasks]) for s in snapshots]


CONFIG = {"configurable": {"thread_id": "t", "team": "x", "n": 3, "obj": [1]}, "metadata": {"user": "u"}}
"""A run config: its metadata and its configurable str/int values are copied into each checkpoint's
metadata (not ``thread_id``, not a list)."""


def _meta(source: str, step: int, copied: bool = True) -> dict[str, Any]:
    return {"source": source, "step": step, "parents": {}} | (
        {"user": "u", "team": "x", "n": 3} if copied else {}
    )


FIRST_RUN = [
    (_meta("loop", 2), (), {"x": 2, "log": ["a", "b"]}, []),
    (_meta("loop", 1), ("b",), {"x": 2, "log": ["a"]}, [("b", {"log": ["b"]})]),
    (_meta("loop", 0), ("a",), {"x": 1, "log": []}, [("a", {"x": 2, "log": ["a"]})]),
    (_meta("input", -1), ("__start__",), {"log": []}, [("__start__", {"x": 1})]),
]
"""LangGraph's history of the first run of :func:`_chain` with input ``{"x": 1}`` under :data:`CONFIG`."""

SECOND_RUN = [
    (_meta("loop", 6, False), (), {"x": 11, "log": ["a", "b", "a", "b"]}, []),
    (_meta("loop", 5, False), ("b",), {"x": 11, "log": ["a", "b", "a"]}, [("b", {"log": ["b"]})]),
    (_meta("loop", 4, False), ("a",), {"x": 10, "log": ["a", "b"]}, [("a", {"x": 11, "log": ["a"]})]),
    (_meta("input", 3, False), ("__start__",), {"x": 2, "log": ["a", "b"]}, [("__start__", {"x": 10})]),
]
"""Then a second run with input ``{"x": 10}`` and no run metadata: numbered on from the first."""


def test_each_run_writes_an_input_checkpoint_then_the_input_applied(lg: Imports) -> None:
    graph = _chain(lg)
    graph.invoke({"x": 1}, CONFIG)
    assert _shape(graph.get_state_history(CONFIG)) == FIRST_RUN
    graph.invoke({"x": 10}, {"configurable": {"thread_id": "t"}})
    assert _shape(graph.get_state_history(CONFIG)) == SECOND_RUN + FIRST_RUN
    assert graph.get_state(CONFIG).metadata == _meta("loop", 6, False)


def test_time_travel_to_the_input_checkpoint_applies_the_input_again(lg: Imports) -> None:
    """invoke(None, config of the step -1 checkpoint): a fork one step later (its next still __start__),
    then the input applied, then the run."""
    graph = _chain(lg)
    graph.invoke({"x": 1}, CONFIG)
    first = list(graph.get_state_history(CONFIG))[-1]
    assert graph.invoke(None, first.config) == {"x": 2, "log": ["a", "b"]}
    branch = list(graph.get_state_history(CONFIG))[:4]
    assert [(s.metadata["source"], s.metadata["step"], s.next) for s in branch] == [
        ("loop", 3, ()),
        ("loop", 2, ("b",)),
        ("loop", 1, ("a",)),
        ("fork", 0, ("__start__",)),
    ]
    assert branch[-1].parent_config is not None
    assert (
        branch[-1].parent_config["configurable"]["checkpoint_id"]
        == first.config["configurable"]["checkpoint_id"]
    )


def test_time_travel_to_a_step_forks_one_step_later(lg: Imports) -> None:
    graph = _chain(lg)
    graph.invoke({"x": 1}, CONFIG)
    step0 = list(graph.get_state_history(CONFIG))[-2]
    assert graph.invoke(None, step0.config) == {"x": 2, "log": ["a", "b"]}
    branch = list(graph.get_state_history(CONFIG))[:3]
    assert [(s.metadata["source"], s.metadata["step"], s.next) for s in branch] == [
        ("loop", 3, ()),
        ("loop", 2, ("b",)),
        ("fork", 1, ("a",)),
    ]


def test_update_state_copies_the_configs_keys_into_the_metadata(lg: Imports) -> None:
    graph = _chain(lg)
    graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}})
    graph.update_state(CONFIG, {"x": 5}, as_node="b")
    graph.update_state(CONFIG, None, as_node="__copy__")
    assert [s.metadata for s in list(graph.get_state_history(CONFIG))[:2]] == [
        _meta("fork", 4, False),  # LangGraph's copy takes no config keys
        _meta("update", 3),
    ]
