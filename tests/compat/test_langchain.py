"""LangChain pieces in a LangGraph program (the LangChain interop issue): a chat model called in a node
hears the run's ``config["callbacks"]`` (passed the node's config or not: LangChain's context variable), a
``Runnable`` is a node, ``ToolNode`` runs LangChain tools. Each case runs with LangGraph's imports and with
graphq's; the messages are langchain-core's on both sides."""

import asyncio
import operator
from typing import Annotated, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import InjectedToolCallId, tool
from typing_extensions import TypedDict

from tests.compat.conftest import Imports
from tests.workflows.lc_agent import ToolCallingFakeModel


class Heard(BaseCallbackHandler):
    """Records the chat model runs it hears: the messages each was given, then its reply."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.heard.append(("start", [m.content for m in messages[0]]))

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.heard.append(("end", response.generations[0][0].message.content))


def test_callbacks_reach_chat_models_called_in_nodes(lg: Imports) -> None:
    """LangGraph: the handlers of ``config["callbacks"]`` hear a model a node calls, whether the node
    passes its config on (``model.invoke(messages, config)``) or not (``model.invoke(messages)``)."""
    model = FakeMessagesListChatModel(responses=[AIMessage("one"), AIMessage("two")])

    def without_config(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def with_config(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"], config)]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("first", without_config)
    builder.add_node("second", with_config)
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "second")
    heard = Heard()
    out = builder.compile().invoke({"messages": [HumanMessage("q")]}, {"callbacks": [heard]})
    assert heard.heard == [("start", ["q"]), ("end", "one"), ("start", ["q", "one"]), ("end", "two")]
    assert [(type(m), m.content) for m in out["messages"]] == [
        (HumanMessage, "q"),
        (AIMessage, "one"),
        (AIMessage, "two"),
    ]


def test_a_runnable_is_a_node(lg: Imports) -> None:
    """LangGraph: ``add_node(runnable)`` runs ``runnable.invoke(state)`` and names the node
    ``runnable.get_name()``."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node(RunnableLambda(lambda s: {"messages": [("ai", f"{len(s['messages'])}")]}, name="count"))
    builder.add_edge(lg.START, "count")
    out = builder.compile().invoke({"messages": [("user", "hi")]})
    assert [(m.type, m.content) for m in out["messages"]] == [("human", "hi"), ("ai", "1")]


@tool(response_format="content_and_artifact")
def lookup(city: str) -> tuple[str, dict[str, Any]]:
    """Look a city's weather up."""
    return f"sunny in {city}", {"celsius": 21}


def test_tool_node_runs_a_langchain_tool_with_its_artifact(lg: Imports) -> None:
    """LangGraph: ``ToolNode`` gives a LangChain tool the whole tool call; its ToolMessage keeps the
    artifact, the call's id and the tool's name."""
    call = {"name": "lookup", "args": {"city": "sf"}, "id": "c1"}
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode([lookup]))
    builder.add_edge(lg.START, "tools")
    out = builder.compile().invoke({"messages": [AIMessage("", tool_calls=[call])]})
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage)
    assert (message.content, message.artifact, message.tool_call_id, message.name) == (
        "sunny in sf",
        {"celsius": 21},
        "c1",
        "lookup",
    )


def test_a_tool_returning_a_command_updates_the_state_and_steers(lg: Imports) -> None:
    """LangGraph: a tool may return a ``Command``; ToolNode applies it as the node's (its update, with the
    ToolMessage answering the call, and its goto), beside the other calls' messages, in call order."""

    @tool
    def remember(fact: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Remember a fact."""
        answer = ToolMessage(f"noted {fact}", tool_call_id=tool_call_id)
        return lg.Command(update={"messages": [answer], "facts": [fact]}, goto="after")

    class State(TypedDict):
        messages: Annotated[list[Any], lg.add_messages]
        facts: Annotated[list[str], operator.add]

    builder = lg.StateGraph(State)
    builder.add_node("tools", lg.ToolNode([remember, lookup]), destinations=("after",))
    builder.add_node("after", lambda s: {"facts": [f"{len(s['messages'])} messages"]})
    builder.add_edge(lg.START, "tools")
    calls = [
        {"name": "lookup", "args": {"city": "sf"}, "id": "c1"},
        {"name": "remember", "args": {"fact": "x"}, "id": "c2"},
    ]
    out = builder.compile().invoke({"messages": [AIMessage("", tool_calls=calls)], "facts": []})
    assert [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in out["messages"]] == [
        ("ai", "", None),
        ("tool", "sunny in sf", "c1"),
        ("tool", "noted x", "c2"),
    ]
    assert out["facts"] == ["x", "3 messages"]


def _streamed(pairs: Any) -> list[tuple[str, Any, Any, str, int]]:
    return [
        (type(m).__name__, m.content, m.id, meta["langgraph_node"], meta["langgraph_step"])
        for m, meta in pairs
    ]


def test_messages_mode_streams_tokens_and_written_messages(lg: Imports) -> None:
    """LangGraph: ``stream_mode="messages"`` yields ``(message, metadata)``: each token of a chat model a
    node calls (``invoke`` streams under it), then the messages nodes write that were neither streamed nor
    in the state already, with the node and step in the metadata."""
    model = GenericFakeChatModel(messages=iter([AIMessage("hello big world", id="m1")]))

    def chat(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def written(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("plain", id="w1"), state["messages"][0]]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("chat", chat)
    builder.add_node("written", written)
    builder.add_edge(lg.START, "chat")
    builder.add_edge("chat", "written")
    pairs = list(
        builder.compile().stream({"messages": [HumanMessage("hi", id="h1")]}, stream_mode="messages")
    )
    assert _streamed(pairs) == [
        ("AIMessageChunk", "hello", "m1", "chat", 1),
        ("AIMessageChunk", " ", "m1", "chat", 1),
        ("AIMessageChunk", "big", "m1", "chat", 1),
        ("AIMessageChunk", " ", "m1", "chat", 1),
        ("AIMessageChunk", "world", "m1", "chat", 1),
        ("AIMessage", "plain", "w1", "written", 2),
    ]
    assert pairs[0][1]["ls_provider"] == "genericfakechatmodel"


def test_messages_mode_beside_other_modes_and_tool_messages(lg: Imports) -> None:
    """LangGraph: with a list of modes each pair comes as ``("messages", (message, metadata))``; a model
    that does not stream shows its reply once; a ToolNode's tool messages are shown as written."""
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage("", id="a1", tool_calls=[{"name": "lookup", "args": {"city": "sf"}, "id": "c1"}])
        ]
    )

    def ask(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("ask", ask)
    builder.add_node("tools", lg.ToolNode([lookup]))
    builder.add_edge(lg.START, "ask")
    builder.add_edge("ask", "tools")
    events = list(
        builder.compile().stream({"messages": [("user", "q")]}, stream_mode=["messages", "updates"])
    )
    assert [mode for mode, _ in events] == ["messages", "updates", "messages", "updates"]
    shown = _streamed(payload for mode, payload in events if mode == "messages")
    assert [(kind, content, node, step) for kind, content, _, node, step in shown] == [
        ("AIMessage", "", "ask", 1),
        ("ToolMessage", "sunny in sf", "tools", 2),
    ]


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")  # LangGraph 1.x's, still there
def test_create_react_agent_loops_between_the_model_and_the_tools(lg: Imports) -> None:
    """LangGraph: ``create_react_agent(model, tools, prompt=...)`` calls the model on the prompt and the
    messages, runs the tools it asks for, and ends at a reply without tool calls; nodes ``agent``,
    ``tools``."""
    model = ToolCallingFakeModel(
        responses=[
            AIMessage("", id="a1", tool_calls=[{"name": "lookup", "args": {"city": "sf"}, "id": "c1"}]),
            AIMessage("sunny", id="a2"),
        ]
    )
    heard = Heard()
    agent = lg.create_react_agent(model, [lookup], prompt="Be brief.")
    out = agent.invoke({"messages": [HumanMessage("weather?", id="h1")]}, {"callbacks": [heard]})
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "weather?"),
        ("ai", ""),
        ("tool", "sunny in sf"),
        ("ai", "sunny"),
    ]
    assert heard.heard[0] == ("start", ["Be brief.", "weather?"])
    assert {"agent", "tools"} <= set(agent.get_graph().nodes)


def _events_graph(lg: Imports) -> Any:
    """``chat`` (a chat model streaming "hello world") then ``plain`` (writes a message)."""

    def chat(state: Any) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage("hello world", id="m1")]))
        return {"messages": [model.invoke(state["messages"])]}

    def plain(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("plain", id="w1")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("chat", chat)
    builder.add_node("plain", plain)
    builder.add_edge(lg.START, "chat")
    builder.add_edge("chat", "plain")
    return builder.compile()


async def _collect(events: Any) -> list[dict[str, Any]]:
    return [event async for event in events]


def test_astream_events_reports_the_graph_its_nodes_and_the_model_tokens(lg: Imports) -> None:
    """LangGraph: ``astream_events(version="v2")`` is LangChain's event stream: the graph's chain run (its
    input, each ``updates`` chunk, the final state), each node's (``langgraph_node`` in its metadata, tag
    ``graph:step:<n>``, what it returned), and the model's events inside its node's run, one
    ``on_chat_model_stream`` per token."""
    graph = _events_graph(lg)
    question = {"messages": [HumanMessage("hi", id="h1")]}
    events = asyncio.run(_collect(graph.astream_events(question, version="v2")))
    root = events[0]["run_id"]
    shape = [
        (e["event"], "<graph>" if e["run_id"] == root else e["name"], e["metadata"].get("langgraph_node"))
        for e in events
    ]
    assert shape == [
        ("on_chain_start", "<graph>", None),
        ("on_chain_start", "chat", "chat"),
        ("on_chat_model_start", "GenericFakeChatModel", "chat"),
        ("on_chat_model_stream", "GenericFakeChatModel", "chat"),
        ("on_chat_model_stream", "GenericFakeChatModel", "chat"),
        ("on_chat_model_stream", "GenericFakeChatModel", "chat"),
        ("on_chat_model_end", "GenericFakeChatModel", "chat"),
        ("on_chain_stream", "chat", "chat"),
        ("on_chain_end", "chat", "chat"),
        ("on_chain_stream", "<graph>", None),
        ("on_chain_start", "plain", "plain"),
        ("on_chain_stream", "plain", "plain"),
        ("on_chain_end", "plain", "plain"),
        ("on_chain_stream", "<graph>", None),
        ("on_chain_end", "<graph>", None),
    ]
    assert [len(e["parent_ids"]) for e in events][:3] == [0, 1, 2]  # graph > node > model
    assert [e["data"]["chunk"].content for e in events if e["event"] == "on_chat_model_stream"] == [
        "hello",
        " ",
        "world",
    ]
    node_runs = [e for e in events if e["event"] == "on_chain_start" and e["run_id"] != root]
    assert [(e["tags"], e["metadata"]["langgraph_step"]) for e in node_runs] == [
        (["graph:step:1"], 1),
        (["graph:step:2"], 2),
    ]
    assert events[0]["data"]["input"] == question
    updates = [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream" and e["run_id"] == root]
    assert [list(chunk) for chunk in updates] == [["chat"], ["plain"]]
    assert updates[1] == {"plain": {"messages": [AIMessage("plain", id="w1")]}}
    final = events[-1]["data"]["output"]
    assert [(m.type, m.content) for m in final["messages"]] == [
        ("human", "hi"),
        ("ai", "hello world"),
        ("ai", "plain"),
    ]


def test_astream_events_as_langgraphs_docs_filter_it(lg: Imports) -> None:
    """LangGraph's docs: the tokens of one node's model, by ``event["event"] == "on_chat_model_stream"``
    and ``event["metadata"]["langgraph_node"]``; and LangChain's ``include_types`` filter."""
    graph = _events_graph(lg)
    question = {"messages": [HumanMessage("hi", id="h1")]}

    async def tokens() -> list[str]:
        out = []
        async for event in graph.astream_events(question, version="v2"):
            if event["event"] == "on_chat_model_stream" and event["metadata"]["langgraph_node"] == "chat":
                out.append(event["data"]["chunk"].content)
        return out

    assert asyncio.run(tokens()) == ["hello", " ", "world"]
    models = asyncio.run(_collect(graph.astream_events(question, version="v2", include_types=["chat_model"])))
    assert [e["event"] for e in models] == ["on_chat_model_start"] + ["on_chat_model_stream"] * 3 + [
        "on_chat_model_end"
    ]


def test_astream_events_reports_an_async_node_and_its_model(lg: Imports) -> None:
    """LangGraph: an ``async def`` node's run and its model's ``ainvoke`` tokens, inside the node's run."""

    async def chat(state: Any) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage("a b", id="m1")]))
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(lg.START, "chat")
    events = asyncio.run(
        _collect(builder.compile().astream_events({"messages": [("user", "hi")]}, version="v2"))
    )
    chat_run = next(e["run_id"] for e in events if e["event"] == "on_chain_start" and e["name"] == "chat")
    tokens = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert [e["data"]["chunk"].content for e in tokens] == ["a", " ", "b"]
    assert all(e["parent_ids"][-1] == chat_run for e in tokens)


def test_astream_events_ignores_an_unknown_keyword(lg: Imports) -> None:
    """LangGraph passes an unknown keyword of astream_events on to astream, which ignores it; graphq
    ignores it too, with a warning naming it (it was a TypeError)."""
    builder = lg.StateGraph(dict)
    builder.add_node("a", lambda s: {"x": 1})
    builder.add_edge(lg.START, "a")

    async def events() -> list[str]:
        return [e["event"] async for e in builder.compile().astream_events({}, bogus="values")]

    with lg.graphq_warns(r"^astream_events\(\) ignores unknown keyword argument\(s\) \['bogus'\]$"):
        got = asyncio.run(events())
    assert got[0] == "on_chain_start" and got[-1] == "on_chain_end"
