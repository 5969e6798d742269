"""A state schema written with ``typing_extensions.TypedDict`` (as LangGraph's docs and programs write it),
the first thing a LangGraph program met: it was refused ("must be a TypedDict or a pydantic BaseModel");
it runs as a ``typing.TypedDict`` state does, in process and on the queue, and its input is type-checked
at enqueue."""

from __future__ import annotations

import logging
import operator
from datetime import datetime
from typing import Annotated, Literal, NotRequired

import pytest
from typing_extensions import TypedDict

from graphcore import END, START, Command, GraphqError, GraphRecursionError, StateGraph, StepLimitError
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidGraphError, InvalidUpdateError
from tests.workers import work


class Stamp(TypedDict):
    at: datetime
    by: str


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    count: int
    stamp: NotRequired[Stamp]


def first(state: State) -> dict[str, object]:
    return {"items": ["a"], "count": state["count"] + 1}


def second(state: State) -> dict[str, object]:
    stamp = {"at": datetime(2026, 12, 1), "by": "second"}
    return {"items": ["b"], "count": state["count"] + 1, "stamp": stamp}


def build() -> StateGraph:
    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    return g


GRAPH = build().compile(name="te-state")
REGISTRY = Registry({GRAPH.name: GRAPH})
EXPECTED = {"items": ["x", "a", "b"], "count": 2, "stamp": {"at": datetime(2026, 12, 1), "by": "second"}}


def test_in_process() -> None:
    assert GRAPH.invoke({"items": ["x"], "count": 0}) == EXPECTED


def test_on_the_queue(client: Client) -> None:
    """Stored and read back through the serde allow-list, the nested TypedDict's datetime included."""
    run_id = client.enqueue(GRAPH.name, {"items": ["x"], "count": 0})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result == EXPECTED


def test_input_types_are_checked_at_enqueue(client: Client) -> None:
    with pytest.raises(InvalidUpdateError, match=r"input\.count"):
        client.enqueue(GRAPH.name, {"items": ["x"], "count": "0"})


def test_add_node_named_after_its_function_and_add_sequence() -> None:
    """LangGraph's ``add_node(fn)`` (the node is named after the function, a subgraph after its name) and
    ``add_sequence`` (nodes and the edges between them)."""

    def double(state: State) -> dict[str, object]:
        return {"count": state["count"] * 2}

    inner = StateGraph(State)
    inner.add_node(first)
    inner.add_edge(START, "first")
    inner.add_edge("first", END)
    sub = inner.compile(name="inner")
    g = StateGraph(State)
    g.add_sequence([first, ("twice", double), sub])
    g.add_edge(START, "first")
    g.add_edge("inner", END)
    assert list(g.nodes) == ["first", "twice", "inner"]
    # the subgraph node writes its whole output through the parent's reducer, as in LangGraph (which gives
    # this value for add_sequence([first, ("twice", double), ("inner", sub)]))
    assert g.compile(name="seq").invoke({"items": [], "count": 1}) == {"items": ["a", "a", "a"], "count": 5}


def test_add_node_without_a_name_to_take() -> None:
    g = StateGraph(State)
    with pytest.raises(InvalidGraphError, match=r"name the node \(add_node\(name, fn\)\); it has no name"):
        g.add_node(lambda state: {})
    with pytest.raises(InvalidGraphError, match=r"add_node\('x'\) needs the node's function"):
        g.add_node("x")
    with pytest.raises(InvalidGraphError, match="add_sequence needs at least one node"):
        g.add_sequence([])


def _go(state: State) -> Command[Literal["left", "right"]]:
    return Command(update={"count": state["count"] + 1}, goto="right" if state["count"] else "left")


def _left(state: State) -> dict[str, object]:
    return {"items": ["left"]}


def _right(state: State) -> dict[str, object]:
    return {"items": ["right"]}


def _goes(state: State) -> Command:  # type: ignore[type-arg]  # no destinations declared
    return Command(goto="left")


def test_command_destinations_from_the_return_annotation(caplog: pytest.LogCaptureFixture) -> None:
    """A node annotated ``-> Command[Literal["left", "right"]]`` declares where it may go, as in LangGraph:
    nodes reachable only through its ``Command(goto=...)`` compile without ``destinations=`` or a warning;
    without the annotation they compile with a warning naming them (LangGraph compiles them too)."""
    g = StateGraph(State)
    g.add_node("go", _go)
    g.add_node("left", _left)
    g.add_node("right", _right)
    g.add_edge(START, "go")
    assert g.nodes["go"].destinations == ("left", "right")
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        graph = g.compile(name="goto")
    assert caplog.records == []
    assert graph.invoke({"items": [], "count": 0}) == {"items": ["left"], "count": 1}
    assert graph.invoke({"items": [], "count": 1}) == {"items": ["right"], "count": 2}
    bare = StateGraph(State)
    bare.add_node("go", _goes)
    bare.add_node("left", _left)
    bare.add_edge(START, "go")
    assert bare.nodes["go"].destinations == ()
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        unannotated = bare.compile(name="goto-bare")
    assert [r.getMessage()[:57] for r in caplog.records] == [
        "node(s) ['left'] cannot be reached from START by an edge:"
    ]
    assert unannotated.invoke({"items": [], "count": 0}) == {"items": ["left"], "count": 0}


def test_errors_are_the_builtin_types_langgraph_users_catch() -> None:
    """Graph validation and invalid updates are ValueErrors, the step limit a RecursionError named
    GraphRecursionError too (LangGraph's), and all stay graphq errors."""
    g = StateGraph(State)
    g.add_node("first", first)
    with pytest.raises(ValueError, match="entry"):  # no edge from START
        g.compile(name="no-entry")

    def twice(state: State) -> dict[str, object]:
        return {"count": 1}

    clash = StateGraph(State)
    clash.add_node("a", twice)
    clash.add_node("b", twice)
    clash.add_edge(START, "a")
    clash.add_edge(START, "b")
    with pytest.raises(ValueError, match="count") as raised:
        clash.compile(name="clash").invoke({"items": [], "count": 0})
    assert isinstance(raised.value, InvalidUpdateError)

    loop = StateGraph(State)
    loop.add_node("first", first)
    loop.add_edge(START, "first")
    loop.add_edge("first", "first")
    with pytest.raises(GraphRecursionError) as limit:
        loop.compile(name="loop").invoke({"items": [], "count": 0}, {"max_super_steps": 3})
    assert isinstance(limit.value, RecursionError) and isinstance(limit.value, GraphqError)
    assert GraphRecursionError is StepLimitError
