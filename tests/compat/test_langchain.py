"""LangChain pieces in a LangGraph program (the LangChain interop issue): a chat model called in a node
hears the run's ``config["callbacks"]`` (passed the node's config or not: LangChain's context variable), a
``Runnable`` is a node, ``ToolNode`` runs LangChain tools. Each case runs with LangGraph's imports and with
graphq's; the messages are langchain-core's on both sides."""

import operator
from typing import Annotated, Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import InjectedToolCallId, tool
from typing_extensions import TypedDict

from tests.compat.conftest import Imports


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
