"""A state schema written with ``typing_extensions.TypedDict`` (as LangGraph's docs and programs write it),
issue 11's first line: it was refused ("must be a TypedDict or a pydantic BaseModel"); it runs as a
``typing.TypedDict`` state does, in process and on the queue, and its input is type-checked at enqueue."""

from __future__ import annotations

import operator
from datetime import datetime
from typing import Annotated, NotRequired

import pytest
from typing_extensions import TypedDict

from graphcore import END, START, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
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
