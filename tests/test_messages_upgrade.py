"""Threads saved before graphq took LangGraph's messages: graphq's add_messages then kept any dict
with an "id" (``{"id": "m1", "text": "hi"}``); such a thread loads, and its next add_messages write is refused
with what the stored message lacks and how to convert the thread (docs/guides/upgrading.md)."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

from graphcore import START, InMemorySaver, Overwrite, StateGraph, add_messages
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from graphcore.messages import AIMessage, HumanMessage
from tests.workers import work

REGISTRY = Registry.load(["tests.workflows.upgrade"])

OLD = {"id": "m1", "text": "hi"}
REFUSED = (
    "add_messages: the state holds {'id': 'm1', 'text': 'hi'}, a message dict without 'role' (or 'type') and "
    "'content': graphq's add_messages kept such dicts before it took LangGraph's messages, LangGraph refuses "
    "them. Convert the thread's messages once with update_state(config, {key: Overwrite([...])}), each "
    "message a HumanMessage/AIMessage/... or a dict with 'role', 'content' and its 'id' (e.g. {'role': "
    "'user', 'content': ..., 'id': 'm1'})"
)


class Turns(TypedDict):
    messages: Annotated[list[Any], add_messages]


@pytest.mark.parametrize(
    ("stored", "lacking"),
    [
        ({"id": "m1", "text": "hi"}, "'role' (or 'type') and 'content'"),
        ({"id": "m1", "content": "hi"}, "'role' (or 'type')"),
        ({"id": "m1", "role": "user"}, "'content'"),
    ],
)
def test_a_stored_dict_message_is_refused_naming_what_it_lacks(stored: dict[str, Any], lacking: str) -> None:
    with pytest.raises(InvalidUpdateError) as refused:
        add_messages([stored], [HumanMessage("again", id="h2")])
    assert str(refused.value).startswith(
        f"add_messages: the state holds {stored!r}, a message dict without "
        f"{lacking}: graphq's add_messages kept such dicts"
    )


def test_an_old_thread_is_refused_then_converted_in_process() -> None:
    builder = StateGraph(Turns)
    builder.add_node("reply", lambda s: {"messages": [AIMessage(f"seen {len(s['messages'])}", id="ai")]})
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "old"}}
    graph.update_state(config, {"messages": Overwrite([OLD])}, as_node="reply")  # as it was stored
    assert graph.get_state(config).values == {"messages": [OLD]}  # the thread loads
    with pytest.raises(InvalidUpdateError) as refused:
        graph.invoke({"messages": [("user", "again")]}, config)
    assert str(refused.value) == REFUSED
    graph.update_state(
        config, {"messages": Overwrite([{"role": "user", "content": "hi", "id": "m1"}])}, "reply"
    )
    out = graph.invoke({"messages": [HumanMessage("again", id="h2")]}, config)
    assert [(m.type, m.content, m.id) for m in out["messages"]] == [
        ("human", "hi", "m1"),
        ("human", "again", "h2"),
        ("ai", "seen 2", "ai"),
    ]


def test_an_old_thread_on_the_queue_is_refused_then_converted(client: Client) -> None:
    client.enqueue("replying", {"messages": [HumanMessage("first", id="h1")]}, thread_id="old")
    work(client)
    client.update_state("replying", "old", {"messages": Overwrite([OLD])})  # as it was stored
    assert client.get_state("old").channel_values["messages"] == [OLD]
    refused = client.enqueue("replying", {"messages": [HumanMessage("again", id="h2")]}, thread_id="old")
    work(client)
    run = client.get_run(refused)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert (run.error.type, run.error.message) == ("InvalidUpdateError", REFUSED)
    client.update_state(
        "replying", "old", {"messages": Overwrite([{"role": "user", "content": "hi", "id": "m1"}])}
    )
    again = client.enqueue("replying", {"messages": [HumanMessage("again", id="h2")]}, thread_id="old")
    work(client)
    result = client.get_run(again).result
    assert [(m.type, m.content, m.id) for m in result["messages"]] == [
        ("human", "hi", "m1"),
        ("human", "again", "h2"),
        ("ai", "seen 2", "ai-2"),
    ]
