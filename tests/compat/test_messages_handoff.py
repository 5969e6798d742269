"""``stream_mode="messages"`` of a node whose subgraph hands off with ``Command(graph=Command.PARENT)``:
LangGraph's run of that node fails with the command, so the messages its update writes to the
parent are not shown, with or without ``subgraphs=True``; the subgraph's own nodes' messages are (with
``subgraphs=True``). In process (sync and async) with LangGraph's imports and graphq's, and on the queue."""

import re
from typing import Any

import pytest

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports, streamed
from tests.workers import work
from tests.workflows.handoff import build_handoff

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

REGISTRY = Registry.load(["tests.workflows.handoff"])

INNER = [
    (("researcher:<id>",), "AIMessage", "", "agent"),
    (("researcher:<id>",), "ToolMessage", "otters hold hands", "tools"),
    (("researcher:<id>",), "AIMessage", "", "agent"),
]
"""LangGraph's pairs of the researcher's own nodes (``subgraphs=True`` only): no "Transferred" message."""

WRITER = [((), "AIMessage", "Otters hold hands.", "writer")]
"""LangGraph's pair of the parent's writer; none for the ``researcher`` node."""


def _pair(ns: tuple[str, ...], message: Any, metadata: dict[str, Any]) -> tuple[Any, ...]:
    names = tuple(re.sub(r":[0-9a-f-]{8,}", ":<id>", part) for part in ns)
    return names, type(message).__name__, message.content, metadata["langgraph_node"]


def shown(lg: Imports, subgraphs: bool, run_async: bool) -> list[tuple[Any, ...]]:
    graph = build_handoff(lg)
    given = {"messages": [lg.HumanMessage("otters", id="h1")]}
    items = streamed(graph, given, run_async, stream_mode="messages", subgraphs=subgraphs)
    return [_pair(item[0], *item[1]) if subgraphs else _pair((), *item) for item in items]


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("subgraphs", [False, True])
def test_a_node_handed_a_parent_command_shows_no_messages(
    lg: Imports, subgraphs: bool, run_async: bool
) -> None:
    """LangGraph: the ``researcher`` node's update (the "Transferred to writer" tool message) is not shown;
    with ``subgraphs=True`` its agent's and tools' messages are, under its namespace."""
    assert shown(lg, subgraphs, run_async) == (INNER + WRITER if subgraphs else WRITER)


def test_a_queued_run_shows_no_messages_of_a_node_handed_a_parent_command(
    client: Client, lg: Imports
) -> None:
    """A queued run with ``stream_mode=["messages"]`` records what LangGraph's stream without
    ``subgraphs=True`` shows: the writer's message only."""
    expected = shown(lg, subgraphs=False, run_async=False)
    assert expected == WRITER
    run_id = client.enqueue(
        "handoff", {"messages": [lg.HumanMessage("otters", id="h1")]}, config={"stream_mode": ["messages"]}
    )
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    events = read_events(client.kv, run_id, run_id)
    assert [_pair((), *event.data) for event in events if event.mode == "messages"] == expected
