"""``ToolRuntime``: a tool parameter annotated ``ToolRuntime`` (or ``ToolRuntime[Context,
State]``), or named ``runtime``, is filled by the tool node with the call's state, the run's context, store
and stream writer, the call's id, the config and the tools — in a ``ToolNode`` given a state or a list, and
in ``create_react_agent``'s per-call tasks, for sync and async tools; the model never sees it. Each case
runs with ``langgraph.prebuilt``'s imports and with graphq's. Queued runs: tests/test_tool_runtime_queue.py.

No ``from __future__ import annotations``: the tools' annotations name ``lg``'s ToolRuntime, evaluated as
written (a string annotation could not find ``lg``)."""

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from typing_extensions import TypedDict

from tests.compat.conftest import Imports
from tests.workflows.lc_agent import ToolCallingFakeModel

pytestmark = [
    pytest.mark.filterwarnings("ignore:create_react_agent has been moved"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),  # LangGraph's, of a dataclass context
]


@dataclass
class Ctx:
    user: str


def runtime_tools(lg: Imports) -> list[Any]:
    """``where`` (sync: state, context, store, call id, tools; writes a chunk) and ``later`` (async)."""

    @tool
    def where(city: str, runtime: lg.ToolRuntime[Ctx, dict]) -> str:  # type: ignore[name-defined]
        """Where a user is."""
        runtime.stream_writer({"where": city, "call": runtime.tool_call_id})
        home = runtime.store.get(("users", runtime.context.user), "home").value["city"]
        names = sorted(t.name for t in runtime.tools)
        return (
            f"{runtime.context.user} of {home} in {city}; {len(runtime.state['messages'])} messages; {names}"
        )

    @tool
    async def later(minutes: int, rt: lg.ToolRuntime) -> str:  # type: ignore[name-defined]
        """Remind a user later."""
        rt.stream_writer({"later": minutes, "call": rt.tool_call_id})
        return f"remind {rt.context.user} in {minutes} min ({rt.tool_call_id})"

    return [where, later]


CALLS = [
    {"name": "where", "args": {"city": "rome", "runtime": "forged"}, "id": "c1"},
    {"name": "later", "args": {"minutes": 5}, "id": "c2"},
]
EXPECTED_CONTENTS = [
    "ann of paris in rome; 2 messages; ['later', 'where']",
    "remind ann in 5 min (c2)",
]
EXPECTED_CHUNKS = [{"where": "rome", "call": "c1"}, {"later": 5, "call": "c2"}]


def store_of(lg: Imports) -> Any:
    store = lg.InMemoryStore()
    store.put(("users", "ann"), "home", {"city": "paris"})
    return store


def tool_node_graph(lg: Imports, tools: list[Any]) -> Any:
    builder = lg.StateGraph(lg.MessagesState, context_schema=Ctx)
    builder.add_node("tools", lg.ToolNode(tools))
    builder.add_edge(lg.START, "tools")
    builder.add_edge("tools", lg.END)
    return builder.compile(store=store_of(lg))


async def collected(parts: Any) -> list[Any]:
    return [part async for part in parts]


def test_the_model_does_not_see_the_runtime(lg: Imports) -> None:
    """LangGraph: a ``ToolRuntime`` parameter (plain or subscripted) is left out of the tool's schema, and
    so out of what ``bind_tools`` sends the model."""
    model = ToolCallingFakeModel(responses=[AIMessage("ok")]).bind_tools(runtime_tools(lg))
    assert [t["function"]["parameters"] for t in model.kwargs["tools"]] == [
        {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"},
        {"properties": {"minutes": {"type": "integer"}}, "required": ["minutes"], "type": "object"},
    ]


def test_a_tool_node_gives_each_call_its_runtime(lg: Imports) -> None:
    """LangGraph: under ``astream`` each call gets the node's state, the run's context and store, its own
    call id (not the model's forged value) and the tools; ``stream_writer`` chunks are the run's custom
    stream parts."""
    graph = tool_node_graph(lg, runtime_tools(lg))
    given = {"messages": [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=CALLS, id="a1")]}
    parts = asyncio.run(
        collected(graph.astream(given, context={"user": "ann"}, stream_mode=["custom", "updates"]))
    )
    assert sorted((p[1] for p in parts if p[0] == "custom"), key=str) == sorted(EXPECTED_CHUNKS, key=str)
    (update,) = [p[1] for p in parts if p[0] == "updates"]
    messages = update["tools"]["messages"]
    assert [(m.content, m.tool_call_id, m.name) for m in messages] == [
        (EXPECTED_CONTENTS[0], "c1", "where"),
        (EXPECTED_CONTENTS[1], "c2", "later"),
    ]


def test_a_sync_run_gives_the_runtime_to_a_sync_tool(lg: Imports) -> None:
    """LangGraph: the same under ``stream``, in call order, for a sync tool."""
    graph = tool_node_graph(lg, runtime_tools(lg)[:1])
    given = {"messages": [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=CALLS[:1], id="a1")]}
    parts = list(graph.stream(given, context={"user": "ann"}, stream_mode=["custom", "updates"]))
    assert [
        (mode, part if mode == "custom" else part["tools"]["messages"][0].content) for mode, part in parts
    ] == [
        ("custom", EXPECTED_CHUNKS[0]),
        ("updates", "ann of paris in rome; 2 messages; ['where']"),
    ]


def test_create_react_agent_gives_each_call_its_runtime(lg: Imports) -> None:
    """LangGraph: ``create_react_agent(..., context_schema=, store=)``'s per-call tools tasks give each call
    its runtime, the agent's state (with ``remaining_steps``) included."""
    replies = [AIMessage("", tool_calls=CALLS, id="a1"), AIMessage("ok", id="a2")]
    agent = lg.create_react_agent(
        ToolCallingFakeModel(responses=replies), runtime_tools(lg), context_schema=Ctx, store=store_of(lg)
    )
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("hi", id="h1")]}, context={"user": "ann"}))
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "hi"),
        ("ai", ""),
        ("tool", EXPECTED_CONTENTS[0]),
        ("tool", EXPECTED_CONTENTS[1]),
        ("ai", "ok"),
    ]


def list_graph(lg: Imports, tools: list[Any]) -> Any:
    """A graph whose state is a list of messages, its one node a ToolNode."""
    builder = lg.StateGraph(Annotated[list, lg.add_messages])
    builder.add_node("tools", lg.ToolNode(tools))
    builder.add_edge(lg.START, "tools")
    return builder.compile()


def test_a_list_state_is_the_runtimes_state(lg: Imports) -> None:
    """LangGraph: a ToolNode given a list of messages gives that list as the runtime's state; a run
    without context or store gives None for them."""

    @tool
    def peek(runtime: lg.ToolRuntime) -> str:  # type: ignore[name-defined]
        """Peek at the runtime."""
        seen = f"{runtime.context} {runtime.store} {runtime.tool_call_id}"
        return f"{type(runtime.state).__name__} of {len(runtime.state)}; {seen}"

    calls = [{"name": "peek", "args": {}, "id": "p1"}]
    out = list_graph(lg, [peek]).invoke(
        [HumanMessage("hi", id="h1"), AIMessage("", tool_calls=calls, id="a1")]
    )
    assert [(m.content, m.tool_call_id) for m in out[2:]] == [("list of 2; None None p1", "p1")]


def test_a_parameter_named_runtime_gets_it(lg: Imports) -> None:
    """LangGraph: a parameter named ``runtime`` gets the ToolRuntime whatever its annotation."""

    @tool
    def named(x: int, runtime: Any = None) -> str:
        """A parameter named runtime."""
        return f"{x} {type(runtime).__name__} {runtime.tool_call_id}"

    calls = [{"name": "named", "args": {"x": 1}, "id": "n1"}]
    out = list_graph(lg, [named]).invoke([AIMessage("", tool_calls=calls, id="a1")])
    assert [m.content for m in out[1:]] == ["1 ToolRuntime n1"]


def test_graphq_tool_node_fills_langgraphs_tool_runtime() -> None:
    """A tool written with ``langgraph.prebuilt``'s ToolRuntime (as LangChain 1.x's ``langchain.tools``
    exports it) gets one of that class from graphq's ToolNode, with the same values (before, graphq's class:
    the call became an error ToolMessage "runtime: Input should be ... an instance of ToolRuntime")."""
    langgraph_side, graphq_side = Imports("langgraph"), Imports("graphq")
    pytest.importorskip("langgraph")

    @tool
    def peek(x: int, runtime: langgraph_side.ToolRuntime) -> str:  # type: ignore[name-defined]
        """Peek at the runtime."""
        return f"{x} {type(runtime).__module__} {runtime.tool_call_id} {len(runtime.state)}"

    calls = [{"name": "peek", "args": {"x": 1}, "id": "p1"}]
    out = list_graph(graphq_side, [peek]).invoke([AIMessage("", tool_calls=calls, id="a1")])
    assert [(m.content, m.status) for m in out[1:]] == [("1 langgraph.prebuilt.tool_node p1 1", "success")]


class Topic(TypedDict):
    messages: Any
    topic: str


def test_a_tool_returns_a_command_with_its_call_id(lg: Imports) -> None:
    """LangGraph: a tool answers its call with ``Command(update=...)``, its ToolMessage naming
    ``runtime.tool_call_id``."""

    @tool
    def set_topic(topic: str, runtime: lg.ToolRuntime) -> Any:  # type: ignore[name-defined]
        """Set the topic."""
        done = ToolMessage(f"topic is {topic}", tool_call_id=runtime.tool_call_id)
        return lg.Command(update={"topic": topic, "messages": [done]})

    class State(lg.MessagesState):
        topic: str

    builder = lg.StateGraph(State)
    builder.add_node("tools", lg.ToolNode([set_topic]))
    builder.add_edge(lg.START, "tools")
    graph = builder.compile()
    call = {"name": "set_topic", "args": {"topic": "tea"}, "id": "t1"}
    out = graph.invoke({"messages": [AIMessage("", tool_calls=[call], id="a1")], "topic": "none"})
    assert out["topic"] == "tea"
    assert [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in out["messages"]] == [
        ("ai", "", None),
        ("tool", "topic is tea", "t1"),
    ]


@tool
async def doubled(x: str) -> str:
    """Double a text, asynchronously."""
    return x * 2


def test_an_async_langchain_tool_runs_under_ainvoke(lg: Imports) -> None:
    """LangGraph: an ``async def`` LangChain tool (``@tool``) is awaited under ``ainvoke`` (before, graphq's
    ToolNode called its sync ``invoke``: NotImplementedError "StructuredTool does not support sync
    invocation")."""
    calls = [{"name": "doubled", "args": {"x": "ab"}, "id": "d1"}]
    out = asyncio.run(list_graph(lg, [doubled]).ainvoke([AIMessage("", tool_calls=calls, id="a1")]))
    assert [(m.content, m.tool_call_id) for m in out[1:]] == [("abab", "d1")]


def test_graphq_awaits_an_async_langchain_tool_under_invoke() -> None:
    """LangGraph refuses a sync ``invoke`` of an async LangChain tool (NotImplementedError); graphq awaits
    it, as it does an ``async def`` function (docs, LangGraph differences)."""
    graphq_side = Imports("graphq")
    calls = [{"name": "doubled", "args": {"x": "ab"}, "id": "d1"}]
    out = list_graph(graphq_side, [doubled]).invoke([AIMessage("", tool_calls=calls, id="a1")])
    assert [(m.content, m.tool_call_id) for m in out[1:]] == [("abab", "d1")]
