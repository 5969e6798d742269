"""langchain-core's messages in a state: with langchain-core installed
``graphcore.messages`` names its classes; every message class a chat model or a tool returns is stored
without any setting (serde code 14: its ``type`` and fields) and loads as the same class, in process and on
the workers. Without langchain-core (a subprocess that blocks its import) the same records load as graphq's
lightweight classes, and what that process writes loads here as langchain-core's."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import langchain_core.messages as lc
import msgpack
import pytest

from graphcore import START, InMemorySaver, MessagesState, StateGraph, add_messages, lite_messages, messages
from graphcore.backend.client import Client
from graphcore.checkpoints import serde
from graphcore.engine.registry import Registry
from graphcore.errors import SerializationError
from tests.workers import work

REGISTRY = Registry.load(["tests.workflows.lc_messages"])
USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}

EVERY_CLASS = [
    lc.HumanMessage("hi", id="1", name="ann", additional_kwargs={"k": [1, 2]}),
    lc.AIMessage(
        "",
        id="2",
        tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}],
        invalid_tool_calls=[
            {"name": "g", "args": "{", "id": "c2", "error": "bad json", "type": "invalid_tool_call"}
        ],
        usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        response_metadata={"model_name": "fake"},
    ),
    lc.AIMessageChunk(
        "tok", id="3", tool_call_chunks=[{"name": "f", "args": '{"x"', "id": "c1", "index": 0}]
    ),
    lc.SystemMessage([{"type": "text", "text": "be brief"}], id="4"),
    lc.ToolMessage("r", id="5", tool_call_id="c1", status="error", artifact={"raw": b"\x00"}),
    lc.RemoveMessage(id="6"),
    lc.ChatMessage("c", role="critic", id="7"),
    lc.FunctionMessage("f out", name="f", id="8"),
    lc.HumanMessageChunk("h", id="9"),
    lc.SystemMessageChunk("s", id="10"),
    lc.ToolMessageChunk("t", tool_call_id="c1", id="11"),
    lc.ChatMessageChunk("cc", role="critic", id="12"),
    lc.FunctionMessageChunk("fc", name="f", id="13"),
    lc.HumanMessage("with extra", id="14", example=True),
]

# Runs in a process where langchain-core cannot be imported: loads the records given on stdin (hex, one per
# line), prints each message's class module, type and fields, then writes lightweight messages of its own.
WITHOUT_LANGCHAIN = """
import json, sys
sys.modules["langchain_core"] = None
from graphcore import messages, lite_messages
from graphcore.checkpoints import serde
assert messages.LANGCHAIN is False and messages.AIMessage is lite_messages.AIMessage
seen = []
for line in sys.stdin.read().split():
    for m in serde.loads(bytes.fromhex(line)):
        fields = {**m.__dict__, **(m.__pydantic_extra__ or {})}
        fields.pop("artifact", None)  # bytes: not JSON
        seen.append([type(m).__module__, type(m).__name__, fields])
written = serde.dumps([
    messages.HumanMessage("from lite", id="l1"),
    messages.AIMessage("", id="l2", tool_calls=[{"name": "f", "args": {}, "id": "c"}],
                       usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}),
    messages.AIMessageChunk("chunk", id="l3"),
    messages.ChatMessage("c", role="critic", id="l4"),
])
loaded = "langchain_core.messages" in sys.modules
print(json.dumps({"seen": seen, "written": written.hex(), "langchain_loaded": loaded}))
"""


def without_langchain(records: list[bytes]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LANGCHAIN],
        input="\n".join(r.hex() for r in records),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_graphcore_messages_are_langchain_cores_classes_when_it_is_installed() -> None:
    assert messages.LANGCHAIN is True
    assert (messages.AIMessage, messages.HumanMessage, messages.RemoveMessage, messages.AIMessageChunk) == (
        lc.AIMessage,
        lc.HumanMessage,
        lc.RemoveMessage,
        lc.AIMessageChunk,
    )


@pytest.mark.parametrize("message", EVERY_CLASS, ids=lambda m: f"{m.type}-{m.id}")
def test_every_langchain_message_class_round_trips_without_any_setting(message: Any) -> None:
    stored = serde.dumps({"messages": [message]})
    back = serde.loads(stored)["messages"][0]
    assert back == message and type(back) is type(message)
    assert b"langchain_core" not in stored  # stored by type, not by class name


def test_a_message_is_stored_as_its_type_and_fields() -> None:
    stored = serde.dumps(lc.HumanMessage("hi", id="h1"))
    ext = msgpack.unpackb(stored[1:], raw=False)
    assert ext.code == 14
    assert msgpack.unpackb(ext.data, raw=False) == [
        "human",
        {"content": "hi", "additional_kwargs": {}, "response_metadata": {}, "name": None, "id": "h1"},
    ]


def test_a_lightweight_message_loads_as_langchain_cores_class_of_its_type() -> None:
    lite = lite_messages.AIMessage(
        "x", id="a", tool_calls=[{"name": "f", "args": {}, "id": "c"}], usage_metadata=USAGE
    )
    back = serde.loads(serde.dumps(lite))
    assert type(back) is lc.AIMessage
    assert back == lc.AIMessage(
        "x",
        id="a",
        tool_calls=[{"name": "f", "args": {}, "id": "c", "type": "tool_call"}],
        usage_metadata=USAGE,
    )


def _old_model(qualname: str, fields: dict[str, Any]) -> msgpack.ExtType:
    """graphq's lightweight message as it stored them before code 14 (code 12, by module and qualname)."""
    payload = ["graphcore.messages", qualname, fields, None, sorted(fields)]
    return msgpack.ExtType(12, msgpack.packb(payload, use_bin_type=True))


OLD_THREAD = b"\x01" + msgpack.packb(
    [
        _old_model("HumanMessage", {"content": "q", "type": "human", "id": "h1"}),
        _old_model(
            "AIMessage",
            {
                "content": "",
                "type": "ai",
                "id": "a1",
                "tool_calls": [{"name": "f", "args": {}, "id": "c", "type": "tool_call"}],
            },
        ),
        _old_model("ToolMessage", {"content": "r", "type": "tool", "id": "t1", "tool_call_id": "c"}),
        _old_model("RemoveMessage", {"content": "", "type": "remove", "id": "h1"}),
    ],
    use_bin_type=True,
)


def test_a_thread_written_with_graphqs_old_classes_loads_as_langchain_cores() -> None:
    human, ai, tool, removal = serde.loads(OLD_THREAD)
    assert [type(m) for m in (human, ai, tool, removal)] == [
        lc.HumanMessage,
        lc.AIMessage,
        lc.ToolMessage,
        lc.RemoveMessage,
    ]
    assert (human.content, human.id, ai.tool_calls[0]["name"], tool.tool_call_id) == ("q", "h1", "f", "c")
    assert add_messages([human, ai, tool], removal) == [ai, tool]


def test_an_unknown_stored_message_type_is_refused_naming_it() -> None:
    stored = b"\x01" + msgpack.packb(
        msgpack.ExtType(14, msgpack.packb(["robot", {"content": "x"}])), use_bin_type=True
    )
    with pytest.raises(SerializationError, match="unknown chat message type 'robot'; known: human, ai,"):
        serde.loads(stored)


def test_a_bad_value_inside_a_message_is_named_by_its_path() -> None:
    where = r"state\.messages\[0\]\.additional_kwargs\.when: type 'object'"
    with pytest.raises(SerializationError, match=where):
        serde.dumps({"messages": [lc.HumanMessage("x", additional_kwargs={"when": object()})]})


def test_without_langchain_core_the_same_records_load_as_lightweight_classes_and_back() -> None:
    """Both ways: what this process wrote loads there as graphq's classes (old records too), and what that
    process wrote loads here as langchain-core's."""
    out = without_langchain([serde.dumps(EVERY_CLASS), OLD_THREAD])
    assert out["langchain_loaded"] is False
    seen = out["seen"]
    assert {module for module, _, _ in seen} == {"graphcore.lite_messages"}
    assert [name for _, name, _ in seen] == [type(m).__name__ for m in EVERY_CLASS] + [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "RemoveMessage",
    ]
    ai_fields = seen[1][2]
    assert (ai_fields["type"], ai_fields["tool_calls"], ai_fields["usage_metadata"]) == (
        "ai",
        [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
        {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    )
    assert seen[6][2]["role"] == "critic" and seen[2][2]["tool_call_chunks"][0]["args"] == '{"x"'
    written = serde.loads(bytes.fromhex(out["written"]))
    assert written == [
        lc.HumanMessage("from lite", id="l1"),
        lc.AIMessage(
            "",
            id="l2",
            tool_calls=[{"name": "f", "args": {}, "id": "c", "type": "tool_call"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        lc.AIMessageChunk("chunk", id="l3"),
        lc.ChatMessage("c", role="critic", id="l4"),
    ]
    assert [type(m) for m in written] == [lc.HumanMessage, lc.AIMessage, lc.AIMessageChunk, lc.ChatMessage]


def test_add_messages_mixes_both_kinds() -> None:
    mine = lite_messages.HumanMessage("lite", id="a")
    theirs = lc.AIMessage("lc", id="b")
    merged = add_messages([mine], [theirs, ("user", "made"), lite_messages.AIMessage("again", id="b")])
    assert [(type(m), m.content) for m in merged] == [
        (lite_messages.HumanMessage, "lite"),
        (lite_messages.AIMessage, "again"),
        (lc.HumanMessage, "made"),
    ]


def test_a_thread_of_langchain_messages_is_checkpointed_in_process() -> None:
    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [lc.AIMessage("a", id="a1", usage_metadata=USAGE)]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [lc.HumanMessage("q", id="h1")]}, config)
    graph.invoke({"messages": [lc.HumanMessage("q2", id="h2")]}, config)
    state = graph.get_state(config).values["messages"]
    assert [(type(m), m.content, m.id) for m in state] == [
        (lc.HumanMessage, "q", "h1"),
        (lc.AIMessage, "a", "a1"),
        (lc.HumanMessage, "q2", "h2"),
    ]


def test_langchain_messages_on_the_queue_load_back_as_langchain_cores_classes(client: Client) -> None:
    run_id = client.enqueue("lc_chat", {"messages": [lc.HumanMessage("weather?", id="h1")]})
    work(client)
    result = client.get_run(run_id).result
    assert [type(m) for m in result["messages"]] == [lc.HumanMessage, lc.AIMessage, lc.AIMessageChunk]
    human, ai, chunk = result["messages"]
    assert human == lc.HumanMessage("weather?", id="h1")
    assert ai.tool_calls == [
        {"name": "lookup", "args": {"q": "weather?"}, "id": "call-1", "type": "tool_call"}
    ]
    assert ai.usage_metadata == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert chunk.content == "langchain_core.messages.human:HumanMessage"
