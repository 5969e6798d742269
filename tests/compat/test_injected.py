"""Tool parameters the tool node fills: ``InjectedState`` (the graph's state, or one key of it)
and ``InjectedStore`` (the run's long-term store), for LangChain ``@tool`` tools run by ``ToolNode`` and by
``create_react_agent``; each case runs with ``langgraph.prebuilt``'s imports and with graphq's. The model
never sees these parameters; a value it gives for one is dropped. Queued runs:
tests/test_langchain_interop.py.

No ``from __future__ import annotations``: the tools' annotations name ``lg``'s markers, evaluated as
written (a string annotation could not find ``lg``)."""

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from tests.compat.conftest import Imports
from tests.workflows.lc_agent import ToolCallingFakeModel

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


def injected_tools(lg: Imports) -> list[Any]:
    """Three tools: the whole state, one key of it, and the store."""

    @tool
    def count(state: Annotated[dict, lg.InjectedState]) -> str:
        """Count the messages."""
        return f"{len(state['messages'])} messages, keys {sorted(state)}"

    @tool
    def first(prefix: str, messages: Annotated[list, lg.InjectedState("messages")]) -> str:
        """The first message's text."""
        return f"{prefix}{messages[0].content}"

    @tool
    def recall(user: str, store: Annotated[Any, lg.InjectedStore()]) -> str:
        """A user's favourite city."""
        return str(store.get(("users", user), "city").value)

    return [count, first, recall]


CALLS = [
    {"name": "count", "args": {}, "id": "c1"},
    {"name": "first", "args": {"prefix": "> ", "messages": ["forged"]}, "id": "c2"},
    {"name": "recall", "args": {"user": "ann"}, "id": "c3"},
]


def shown(messages: list[Any]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in messages]


def store_of(lg: Imports) -> Any:
    store = lg.InMemoryStore()
    store.put(("users", "ann"), "city", {"city": "paris"})
    return store


def test_the_model_does_not_see_injected_parameters(lg: Imports) -> None:
    """LangGraph: the tools' schemas (what ``bind_tools`` sends the model) leave injected parameters out."""
    schemas = [convert_to_openai_tool(t)["function"]["parameters"] for t in injected_tools(lg)]
    assert [sorted(s["properties"]) for s in schemas] == [[], ["prefix"], ["user"]]


def test_tool_node_fills_the_state_a_key_and_the_store(lg: Imports) -> None:
    """LangGraph: ``ToolNode`` gives each tool the node's state, its ``messages`` key (not the model's
    forged value) and the graph's store."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode(injected_tools(lg)))
    builder.add_edge(lg.START, "tools")
    builder.add_edge("tools", lg.END)
    graph = builder.compile(store=store_of(lg))
    out = graph.invoke({"messages": [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=CALLS, id="a1")]})
    assert shown(out["messages"]) == [
        ("human", "hi", None),
        ("ai", "", None),
        ("tool", "2 messages, keys ['messages']", "c1"),
        ("tool", "> hi", "c2"),
        ("tool", "{'city': 'paris'}", "c3"),
    ]


def test_create_react_agent_fills_them_with_its_store(lg: Imports) -> None:
    """LangGraph: ``create_react_agent(..., store=s)``'s tools node gives the agent's state (with
    ``remaining_steps``) and ``s``."""
    replies = [AIMessage("", tool_calls=CALLS, id="a1"), AIMessage("ok", id="a2")]
    model = ToolCallingFakeModel(responses=replies)
    agent = lg.create_react_agent(model, injected_tools(lg), store=store_of(lg))
    out = agent.invoke({"messages": [HumanMessage("hi", id="h1")]})
    assert shown(out["messages"]) == [
        ("human", "hi", None),
        ("ai", "", None),
        ("tool", "2 messages, keys ['messages', 'remaining_steps']", "c1"),
        ("tool", "> hi", "c2"),
        ("tool", "{'city': 'paris'}", "c3"),
        ("ai", "ok", None),
    ]


def test_an_injected_store_without_a_store_fails_the_run(lg: Imports) -> None:
    """LangGraph: a tool asking for the store in a graph compiled without one raises ValueError."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode(injected_tools(lg)))
    builder.add_edge(lg.START, "tools")
    graph = builder.compile()
    with pytest.raises(ValueError, match="Cannot inject store into tools with InjectedStore annotations"):
        graph.invoke({"messages": [AIMessage("", tool_calls=CALLS[2:], id="a1")]})


def test_graphq_tool_node_fills_langgraphs_markers() -> None:
    """A tool written with ``langgraph.prebuilt``'s markers gets the same values from graphq's ToolNode
    (before, the call became an error ToolMessage "state: Field required")."""
    langgraph_side, graphq_side = Imports("langgraph"), Imports("graphq")
    pytest.importorskip("langgraph")
    builder = graphq_side.StateGraph(graphq_side.MessagesState)
    builder.add_node("tools", graphq_side.ToolNode(injected_tools(langgraph_side)))
    builder.add_edge(graphq_side.START, "tools")
    graph = builder.compile(store=store_of(graphq_side))
    out = graph.invoke({"messages": [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=CALLS, id="a1")]})
    assert shown(out["messages"])[2:] == [
        ("tool", "2 messages, keys ['messages']", "c1"),
        ("tool", "> hi", "c2"),
        ("tool", "{'city': 'paris'}", "c3"),
    ]


def test_a_missing_key_is_the_default_or_a_key_error(lg: Imports) -> None:
    """LangGraph: ``InjectedState("topic")`` of a state without ``topic`` leaves the parameter's default;
    without a default the run fails with KeyError naming the key."""

    @tool
    def topic(topic: Annotated[str, lg.InjectedState("topic")] = "none") -> str:
        """The topic."""
        return f"topic {topic}"

    @tool
    def strict(topic: Annotated[str, lg.InjectedState("topic")]) -> str:
        """The topic, required."""
        return f"topic {topic}"

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode([topic, strict]))
    builder.add_edge(lg.START, "tools")
    graph = builder.compile()
    call = {"name": "topic", "args": {"topic": "forged"}, "id": "t1"}
    out = graph.invoke({"messages": [AIMessage("", tool_calls=[call], id="a1")]})
    assert shown(out["messages"])[1:] == [("tool", "topic none", "t1")]
    with pytest.raises(KeyError, match="'topic'"):
        graph.invoke({"messages": [AIMessage("", tool_calls=[{**call, "name": "strict"}], id="a1")]})
