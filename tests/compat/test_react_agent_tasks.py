"""``create_react_agent``'s ``tools`` tasks: with LangGraph 1.x's default ``version="v2"`` the
router after the model sends one ``tools`` task per tool call, and ``ToolNode`` runs that one call in its
own task (no graph inside it). So with 2 calls the step-1 checkpoint has ``next=("tools", "tools")``, the
``updates`` stream has one ``tools`` chunk per call, ``subgraphs=True`` adds no nested event, the tool
messages stream under namespace ``()`` at step 2, and the callbacks hear no nested ``tools`` chain run.
``version="v1"`` keeps one ``tools`` task running all calls. Each case runs with LangGraph's imports and
with graphq's; LangGraph's values are the expected ones."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from tests.compat.conftest import Imports
from tests.workflows.lc_agent import ToolCallingFakeModel

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

RUNS: list[str] = []
"""The tool calls run, by their argument, in order (cleared by :func:`agent`)."""


@tool
def weather(city: str) -> str:
    """The weather of a city."""
    RUNS.append(city)
    return f"sunny in {city}"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    RUNS.append(f"{a}*{b}")
    return a * b


TWO_CALLS = AIMessage(
    "calling",
    id="ai-1",
    tool_calls=[
        {"name": "weather", "args": {"city": "sf"}, "id": "call-1"},
        {"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call-2"},
    ],
)
QUESTION = {"messages": [HumanMessage("sf weather and 6*7?", id="h-1")]}
CONFIG = {"configurable": {"thread_id": "t"}}


def agent(lg: Imports, *tools: Any, **options: Any) -> Any:
    """The agent of a scripted model (2 tool calls, then an answer) with a checkpointer."""
    RUNS.clear()
    replies = [TWO_CALLS, AIMessage("sunny; 42", id="ai-2")]
    model = ToolCallingFakeModel(responses=replies)
    tools = tools or (weather, multiply)
    return lg.create_react_agent(model, list(tools), checkpointer=lg.InMemorySaver(), **options)


def test_two_tool_calls_are_two_tools_tasks(lg: Imports) -> None:
    """LangGraph v2: the step-1 checkpoint schedules one ``tools`` task per call."""
    graph = agent(lg)
    graph.invoke(QUESTION, CONFIG)
    history = [
        (s.metadata["step"], s.next, [t.name for t in s.tasks]) for s in graph.get_state_history(CONFIG)
    ]
    assert history == [
        (3, (), []),
        (2, ("agent",), ["agent"]),
        (1, ("tools", "tools"), ["tools", "tools"]),
        (0, ("agent",), ["agent"]),
        (-1, ("__start__",), ["__start__"]),
    ]
    assert sorted(RUNS) == ["6*7", "sf"]


def test_version_v1_runs_the_calls_in_one_tools_task(lg: Imports) -> None:
    graph = agent(lg, version="v1")
    out = graph.invoke(QUESTION, CONFIG)
    step_1 = [s for s in graph.get_state_history(CONFIG) if s.metadata["step"] == 1]
    assert [(s.next, [t.name for t in s.tasks]) for s in step_1] == [(("tools",), ["tools"])]
    assert [(m.type, m.content) for m in out["messages"][2:]] == [
        ("tool", "sunny in sf"),
        ("tool", "42"),
        ("ai", "sunny; 42"),
    ]


def shown(chunk: dict[str, Any]) -> list[tuple[str, list[tuple[str, Any, Any]]]]:
    return [
        (node, [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in update["messages"]])
        for node, update in chunk.items()
    ]


def test_the_updates_stream_has_one_tools_chunk_per_call(lg: Imports) -> None:
    """The two ``tools`` chunks come as their tasks finish, in either order (both sides)."""
    chunks = [shown(c) for c in agent(lg).stream(QUESTION, CONFIG, stream_mode="updates")]
    assert [chunks[0], sorted(chunks[1:3]), chunks[3]] == [
        [("agent", [("ai", "calling", None)])],
        [[("tools", [("tool", "42", "call-2")])], [("tools", [("tool", "sunny in sf", "call-1")])]],
        [("agent", [("ai", "sunny; 42", None)])],
    ]
    assert len(chunks) == 4


def test_subgraphs_true_shows_no_nested_tools_event(lg: Imports) -> None:
    events = agent(lg).stream(QUESTION, CONFIG, stream_mode="updates", subgraphs=True)
    assert [(ns, list(chunk)) for ns, chunk in events] == [
        ((), ["agent"]),
        ((), ["tools"]),
        ((), ["tools"]),
        ((), ["agent"]),
    ]


def task_ns(metadata: dict[str, Any]) -> str:
    """The node part of a message's task namespace (``tools:<task id>`` → ``tools``)."""
    return str(metadata["langgraph_checkpoint_ns"]).split(":")[0]


def test_tool_messages_stream_at_the_root_at_step_2(lg: Imports) -> None:
    events = agent(lg).stream(QUESTION, CONFIG, stream_mode="messages", subgraphs=True)
    tools = [
        (ns, m.content, md["langgraph_node"], md["langgraph_step"], task_ns(md))
        for ns, (m, md) in events
        if m.type == "tool"
    ]
    assert sorted(tools) == [((), "42", "tools", 2, "tools"), ((), "sunny in sf", "tools", 2, "tools")]


class ChainRuns(BaseCallbackHandler):
    """The chain runs a run starts: (name, whether its parent is the graph's run)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, UUID, UUID | None]] = []

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self.runs.append((kw.get("name") or (serialized or {}).get("name"), run_id, parent_run_id))

    def tools_runs(self) -> list[bool]:
        """For each ``tools`` chain run: whether the graph's run is its parent."""
        root = self.runs[0][1]
        return [parent == root for name, _, parent in self.runs if name == "tools"]


def test_callbacks_hear_one_tools_run_per_call_and_none_nested(lg: Imports) -> None:
    heard = ChainRuns()
    agent(lg).invoke(QUESTION, {**CONFIG, "callbacks": [heard]})
    assert heard.tools_runs() == [True, True]


ASK: list[Any] = []
"""The side's ``interrupt`` (set by the interrupt case; a LangChain tool takes no extra parameter)."""


@tool
def pay(amount: int) -> str:
    """Pay an amount, once a human approves it."""
    RUNS.append(f"pay {amount}")
    answer = ASK[0]({"pay": amount})
    return f"paid {amount}: {answer}"


def test_calls_that_ask_pause_and_are_answered_by_id(lg: Imports) -> None:
    """LangGraph v2: each asking call is its own task: both questions surface; answered by id, each call
    goes on; the call that finished is not run again."""
    ASK[:] = [lg.interrupt]
    calls = [
        {"name": "pay", "args": {"amount": 5}, "id": "call-1"},
        {"name": "weather", "args": {"city": "sf"}, "id": "call-2"},
        {"name": "pay", "args": {"amount": 7}, "id": "call-3"},
    ]
    RUNS.clear()
    model = ToolCallingFakeModel(responses=[AIMessage("", id="ai-1", tool_calls=calls), AIMessage("done")])
    graph = lg.create_react_agent(model, [pay, weather], checkpointer=lg.InMemorySaver())
    paused = graph.invoke(QUESTION, CONFIG)
    asked = sorted(paused["__interrupt__"], key=lambda i: i.value["pay"])
    assert [i.value for i in asked] == [{"pay": 5}, {"pay": 7}]
    assert graph.get_state(CONFIG).next == ("tools", "tools")  # the finished call is not pending
    resume = {asked[0].id: "yes", asked[1].id: "ok"}
    out = graph.invoke(lg.Command(resume=resume), CONFIG)
    assert [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in out["messages"][2:]] == [
        ("tool", "paid 5: yes", "call-1"),
        ("tool", "sunny in sf", "call-2"),
        ("tool", "paid 7: ok", "call-3"),
        ("ai", "done", None),
    ]
    assert sorted(RUNS) == ["pay 5", "pay 5", "pay 7", "pay 7", "sf"]
