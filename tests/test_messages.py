"""graphcore.messages beyond LangGraph's cases (tests/compat/test_messages.py has those): the messages through
the serde, langchain-core message objects in process, pydantic's coercion of AnyMessage, and graphq's
lightweight classes (graphcore.lite_messages, named by graphcore.messages without langchain-core;
tests/test_messages_langchain.py runs a process without it)."""

from __future__ import annotations

from typing import Any

import langchain_core.messages as lc
import pytest
from pydantic import TypeAdapter

from graphcore import START, MessagesState, MessagesStateModel, StateGraph, lite_messages
from graphcore.checkpoints import serde
from graphcore.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    add_messages,
    coerce_message,
)

MESSAGES = [
    HumanMessage("hi", id="1", name="ann", additional_kwargs={"k": [1, 2]}),
    AIMessage(
        "",
        id="2",
        tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}],
        usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        response_metadata={"model": "fake"},
    ),
    ToolMessage("r", id="3", tool_call_id="c1", status="error", artifact={"raw": b"\x00"}),
    SystemMessage([{"type": "text", "text": "be brief"}], id="4"),
    RemoveMessage("5"),
    HumanMessage("with extra", id="6", example=True),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.type)
def test_every_message_class_round_trips_through_the_serde(message: Any) -> None:
    back = serde.loads(serde.dumps({"messages": [message]}))["messages"][0]
    assert back == message and type(back) is type(message)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.type)
def test_every_lightweight_message_round_trips_as_the_class_of_its_type(message: Any) -> None:
    lite = getattr(lite_messages, type(message).__name__).model_construct(**message.model_dump())
    back = serde.loads(serde.dumps({"messages": [lite]}))["messages"][0]
    assert back == message and type(back) is type(message)


def test_langchain_messages_pass_through_add_messages_in_process() -> None:
    """Duck-typed (``id``, ``type``, ``content``): kept as they are, given ids, replaced and removed by id."""
    theirs = lc.HumanMessage("from langchain")
    merged = add_messages([theirs], [AIMessage("ours", id="a"), lc.AIMessage("again", id="a")])
    assert merged[0] is theirs and isinstance(theirs.id, str)
    assert [(type(m).__module__.split(".")[0], m.content) for m in merged] == [
        ("langchain_core", "from langchain"),
        ("langchain_core", "again"),
    ]
    assert add_messages(merged, lc.RemoveMessage(id=theirs.id)) == [merged[1]]


def test_a_graph_takes_langchain_messages_in_process() -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("bot", lambda s: {"messages": [("ai", f"got {s['messages'][-1].content}")]})
    builder.add_edge(START, "bot")
    out = builder.compile().invoke({"messages": [lc.HumanMessage("q")]})
    assert [(m.type, m.content) for m in out["messages"]] == [("human", "q"), ("ai", "got q")]


def test_any_message_coerces_and_copies_messages_of_the_other_kind_into_its_classes() -> None:
    adapter = TypeAdapter(list[AnyMessage])
    read = adapter.validate_python(
        [
            "hi",
            ("ai", "yo"),
            {"role": "system", "content": "s"},
            {"type": "tool", "content": "r", "tool_call_id": "c"},
        ]
    )
    assert [type(m) for m in read] == [HumanMessage, AIMessage, SystemMessage, ToolMessage]
    [copied] = adapter.validate_python(
        [lite_messages.AIMessage("x", id="9", tool_calls=[{"name": "f", "args": {}, "id": "c"}])]
    )
    assert copied == AIMessage(
        "x", id="9", tool_calls=[{"name": "f", "args": {}, "id": "c", "type": "tool_call"}]
    )


def test_the_pydantic_messages_state_starts_empty_and_is_subclassed() -> None:
    class State(MessagesStateModel):
        turns: int = 0

    builder = StateGraph(State)
    builder.add_node(
        "bot", lambda s: {"messages": [AIMessage(f"{len(s.messages)} before")], "turns": s.turns + 1}
    )
    builder.add_edge(START, "bot")
    out = builder.compile().invoke({"turns": 0})
    assert [(m.type, m.content) for m in out["messages"]] == [("ai", "0 before")]
    assert out["turns"] == 1


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (42, "cannot read 42 as a message"),
        (("robot", "x"), "unexpected message role 'robot'"),
        ({"role": "tool", "content": "r"}, "a 'tool' message needs a 'tool_call_id'"),
        ({"content": "no role"}, "must have 'role' (or 'type') and 'content' keys"),
    ],
)
def test_what_cannot_be_a_message_is_refused_as_a_value_error(value: Any, error: str) -> None:
    with pytest.raises(ValueError) as refused:
        coerce_message(value)
    assert error in str(refused.value)


def test_remove_message_takes_no_content_and_messages_print_as_langchain_does() -> None:
    """The reprs and pretty_repr texts are langchain-core 1.8's (compared by hand)."""
    with pytest.raises(ValueError, match="RemoveMessage does not take content"):
        lite_messages.RemoveMessage(id="1", content="x")
    assert (
        repr(lite_messages.HumanMessage("hi", id="1"))
        == repr(lc.HumanMessage("hi", id="1"))
        == "HumanMessage(content='hi', additional_kwargs={}, response_metadata={}, id='1')"
    )
    call: Any = {"name": "f", "args": {"x": 1}, "id": "c"}
    assert lite_messages.AIMessage("", tool_calls=[call]).pretty_repr() == (
        "================================== Ai Message ==================================\n"
        "Tool Calls:\n  f (c)\n Call ID: c\n  Args:\n    x: 1"
    )
