"""The ``configurable`` keys LangGraph 1.x copies into the config's metadata (LangGraph's
test_pregel ``test_configurable_propagates_to_stream_metadata``): ``thread_id``, ``checkpoint_id``,
``checkpoint_ns``, ``task_id``, ``run_id``, ``assistant_id`` and ``graph_id``, when set and not in the
metadata already. A node sees them in ``config["metadata"]``; the ``messages`` stream shows them with a
node's written messages and with a chat model's tokens. Other keys (an API key, a nested setting, a
number) are not copied. Each case runs with LangGraph's imports and with graphq's."""

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from tests.compat.conftest import Imports

CONFIGURABLE = {
    "thread_id": "th-123",
    "checkpoint_id": "ckpt-1",
    "checkpoint_ns": "ns-1",
    "task_id": "task-1",
    "run_id": "run-456",
    "assistant_id": "asst-789",
    "graph_id": "graph-0",
    "model": "gpt-4o",
    "some_api_key": "secret",
    "custom_setting": {"nested": True},
    "empty": "",
}

COPIED = {
    "thread_id": "th-123",
    "checkpoint_id": "ckpt-1",
    "checkpoint_ns": "ns-1",
    "task_id": "task-1",
    "run_id": "run-456",
    "assistant_id": "asst-789",
    "graph_id": "graph-0",
}


def _without_langgraph_keys(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without the task's ``langgraph_*`` keys and LangChain's ``ls_*`` and ``lc_versions`` keys
    of a model."""
    return {k: v for k, v in metadata.items() if not k.startswith(("langgraph_", "ls_", "lc_versions"))}


def test_configurable_keys_are_in_the_metadata_of_nodes_and_messages(lg: Imports) -> None:
    seen: list[dict[str, Any]] = []

    def my_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        seen.append(_without_langgraph_keys(dict(config["metadata"])))
        return {"messages": HumanMessage(content="hello", id="h1")}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("my_node", my_node)
    builder.add_edge(lg.START, "my_node")
    config = {"configurable": CONFIGURABLE, "metadata": {"graph_id": "mine", "foo": "bar"}}
    chunks = list(builder.compile().stream({"messages": []}, config, stream_mode="messages"))
    expected = {**COPIED, "graph_id": "mine", "foo": "bar"}
    assert seen == [expected]
    assert [(m.content, _without_langgraph_keys(meta)) for m, meta in chunks] == [("hello", expected)]
    assert chunks[0][1]["ls_integration"] == "langgraph"


def test_a_chat_models_tokens_carry_them(lg: Imports) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="hi there", id="ai1")]))

    def call(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("call", call)
    builder.add_edge(lg.START, "call")
    config = {"configurable": {"thread_id": "t-1", "assistant_id": "a-1", "user_id": "u-1"}}
    chunks = list(builder.compile().stream({"messages": []}, config, stream_mode="messages"))
    expected = {"thread_id": "t-1", "assistant_id": "a-1", "checkpoint_ns": chunks[0][1]["checkpoint_ns"]}
    assert [(m.content, _without_langgraph_keys(meta)) for m, meta in chunks] == [
        ("hi", expected),
        (" ", expected),
        ("there", expected),
    ]


def test_without_them_the_metadata_has_none(lg: Imports) -> None:
    seen: list[dict[str, Any]] = []

    def my_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        seen.append(_without_langgraph_keys(dict(config["metadata"])))
        return {"messages": HumanMessage(content="hello", id="h1")}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("my_node", my_node)
    builder.add_edge(lg.START, "my_node")
    chunks = list(
        builder.compile().stream({"messages": []}, {"configurable": {"x": 1}}, stream_mode="messages")
    )
    assert seen == [{}]
    assert [_without_langgraph_keys(meta) for _, meta in chunks] == [{}]
