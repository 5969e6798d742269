"""LangChain chat models, tools and runnables in a graph: the
agent of tests/workflows/lc_agent.py — a fake LangChain chat model with ``bind_tools`` called in a node,
``@tool`` / artifact / ``StructuredTool`` tools run by graphq's ToolNode, a prompt | model | parser chain
as a node — in process, on a burst worker in this process and on a ``graphq worker`` subprocess; and
``config["callbacks"]`` reaching the LangChain calls made inside nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any
from uuid import UUID

import pytest
import redis
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from graphcore import START, MessagesState, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.redis_store import RedisStore
from graphcore.backend.runs import RunStatus
from graphcore.checkpoints.model import Checkpoint, task_id
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.types import PendingTask, TaskWrites
from graphq.worker.step.messages import INTERVAL_S, MAX_BATCH, StepMessages
from tests.cli_helpers import error_line, invoke, ok
from tests.workers import burst, graphq, work, worker_env
from tests.workflows.lc_agent import Answer, build_tokens, lc_agent, lc_react, lc_react_hooks, lc_tokens

REGISTRY = Registry.load(["tests.workflows.lc_agent"])
QUESTION = {"messages": [HumanMessage("2+3 and sf weather?", id="h1")]}
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
CALLS = [
    {"name": "add", "args": {"a": 2, "b": "3"}, "id": "call-add", "type": "tool_call"},
    {"name": "lookup", "args": {"city": "sf"}, "id": "call-lookup", "type": "tool_call"},
    {"name": "shout", "args": {"text": "hi"}, "id": "call-shout", "type": "tool_call"},
]


def check_the_agents_messages(messages: list[Any]) -> None:
    assert [type(m) for m in messages] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        ToolMessage,
        ToolMessage,
        AIMessage,
        AIMessage,
    ]
    human, asks, added, looked, shouted, answer, summary = messages
    assert human == HumanMessage("2+3 and sf weather?", id="h1")
    assert (asks.tool_calls, asks.usage_metadata) == (CALLS, USAGE)
    assert [(m.name, m.content, m.tool_call_id, m.status) for m in (added, looked, shouted)] == [
        ("add", "5", "call-add", "success"),  # "3" coerced by the tool's schema
        ("lookup", "sunny in sf", "call-lookup", "success"),
        ("shout", "HI", "call-shout", "success"),
    ]
    assert looked.artifact == {"city": "sf", "celsius": 21}
    assert (answer.content, answer.usage_metadata) == ("2 + 3 = 5; sunny in sf", USAGE)
    assert (summary.content, summary.id) == ("summary: 5, sunny", "summary")


def test_a_langchain_agent_runs_in_process() -> None:
    check_the_agents_messages(lc_agent.invoke(QUESTION)["messages"])


def test_a_langchain_agent_runs_on_the_queue(client: Client) -> None:
    run_id = client.enqueue("lc_agent", QUESTION)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result is not None
    check_the_agents_messages(run.result["messages"])


def test_a_langchain_agent_runs_on_a_worker_subprocess(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("lc_agent", QUESTION)
    burst(worker_env(redis_url, "tests.workflows.lc_agent"))
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    check_the_agents_messages(run.result["messages"])


def test_a_tools_command_is_applied_on_the_queue(client: Client) -> None:
    """The tool's Command crosses ToolNode's inner graph (stored as a pending write on the queue) and is
    applied as the node's: its ToolMessage and facts, then its goto."""
    calls = [
        {"name": "lookup", "args": {"city": "sf"}, "id": "c1"},
        {"name": "remember", "args": {"fact": "x"}, "id": "c2"},
    ]
    run_id = client.enqueue("lc_command", {"messages": [AIMessage("", tool_calls=calls, id="a1")]})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    assert [(type(m), m.content) for m in run.result["messages"]] == [
        (AIMessage, ""),
        (ToolMessage, "sunny in sf"),
        (ToolMessage, "noted x"),
    ]
    assert run.result["facts"] == ["x", "3 messages"]


def test_create_react_agent_runs_in_process_and_on_the_queue(client: Client) -> None:
    """graphq's create_react_agent of a LangChain chat model and LangChain tools: the model gets the prompt
    first and is bound to the tools; in process and on a burst worker the conversation is the same."""
    heard = Recorder()
    out = lc_react.invoke(QUESTION, {"callbacks": [heard]})
    assert [e for e in heard.events if e[0] == "model"] == [("model", ["add", "lookup", "shout"])] * 2
    run_id = client.enqueue("lc_react", QUESTION)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    for messages in (out["messages"], run.result["messages"]):
        assert [(m.type, m.content) for m in messages] == [
            ("human", "2+3 and sf weather?"),
            ("ai", ""),
            ("tool", "5"),
            ("tool", "sunny in sf"),
            ("tool", "HI"),
            ("ai", "2 + 3 = 5; sunny in sf"),
        ]


def test_injected_state_and_store_are_filled_on_the_queue(client: Client, redis_client: redis.Redis) -> None:
    """On a burst worker, create_react_agent's tools get the state, its ``messages`` key (not the model's
    forged value) and the workers' Redis store, as LangGraph's do in process
    (tests/compat/test_injected.py)."""
    RedisStore(redis_client).put(("users", "ann"), "city", {"city": "paris"})
    run_id = client.enqueue("lc_injected", {"messages": [HumanMessage("hi", id="h1")]})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    assert [(m.type, m.content) for m in run.result["messages"]] == [
        ("human", "hi"),
        ("ai", ""),
        ("tool", "2 messages, keys ['messages', 'remaining_steps']"),
        ("tool", "> hi"),
        ("tool", "{'city': 'paris'}"),
        ("ai", "ok"),
    ]


def test_a_runnable_is_a_node_named_after_it() -> None:
    builder = StateGraph(MessagesState)
    builder.add_node(
        RunnableLambda(lambda s: {"messages": [("ai", f"{len(s['messages'])} seen")]}, name="count")
    )
    builder.add_edge(START, "count")
    graph = builder.compile()
    assert list(graph.get_graph().nodes) == ["__start__", "count", "__end__"]
    out = graph.invoke({"messages": [("user", "hi")]})
    assert [(type(m), m.content) for m in out["messages"]] == [(HumanMessage, "hi"), (AIMessage, "1 seen")]


class Recorder(BaseCallbackHandler):
    """Records the chat model and tool runs it is told about."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        tools = kwargs.get("invocation_params", {}).get("tools", [])
        self.events.append(("model", [t["function"]["name"] for t in tools]))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("model end", response.generations[0][0].message.content))

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.events.append(("tool", serialized["name"]))


def test_callbacks_reach_the_langchain_calls_made_inside_nodes() -> None:
    """The model is invoked without a config (LangChain's context variable carries the node's), the tools
    by the ToolNode, the chain as a node: the handler hears each call, and the model's bound tools."""
    recorder = Recorder()
    lc_agent.invoke(QUESTION, {"callbacks": [recorder]})
    model_runs = [e for e in recorder.events if e[0].startswith("model")]
    assert model_runs == [
        ("model", ["add", "lookup", "shout"]),
        ("model end", ""),
        ("model", ["add", "lookup", "shout"]),
        ("model end", "2 + 3 = 5; sunny in sf"),
        ("model", []),
        ("model end", "summary: 5, sunny"),
    ]
    assert sorted(e[1] for e in recorder.events if e[0] == "tool") == ["add", "lookup", "shout"]


def test_callbacks_are_refused_at_enqueue(client: Client) -> None:
    with pytest.raises(ConfigError) as refused:
        client.enqueue("lc_agent", QUESTION, config={"callbacks": [Recorder()]})
    assert str(refused.value) == (
        "run option callbacks: LangChain callback handlers are objects of this process and cannot be "
        "stored with a queued run; give none (use them with invoke/stream in process, or follow a queued "
        "run with graphq runs watch RUN)"
    )


WITHOUT_LANGCHAIN = """
import sys
sys.modules["langchain_core"] = None
from graphcore import START, MessagesState, StateGraph
from graphcore.messages import AIMessage
builder = StateGraph(MessagesState)
builder.add_node("w", lambda s: {"messages": [AIMessage("x", id="a")]})
builder.add_edge(START, "w")
for message, metadata in builder.compile().stream({"messages": [("user", "hi")]}, stream_mode="messages"):
    shown = {k: v for k, v in metadata.items() if k != "langgraph_checkpoint_ns"}
    print(type(message).__module__, message.type, message.content, message.id, sorted(shown.items()))
    print(metadata["langgraph_checkpoint_ns"].split(":")[0])
print("langchain_core.messages" in sys.modules)
"""


def test_without_langchain_core_messages_mode_shows_the_written_messages() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LANGCHAIN], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "graphcore.lite_messages ai x a [('langgraph_node', 'w'), "
        "('langgraph_path', ('__pregel_pull', 'w')), ('langgraph_step', 1), "
        "('langgraph_triggers', ('branch:to:w',)), ('ls_integration', 'langgraph')]",
        "w",
        "False",
    ]


WITHOUT_LANGCHAIN_CALLBACKS = """
import sys
sys.modules["langchain_core"] = None
from typing_extensions import TypedDict
from graphcore import START, StateGraph
class State(TypedDict):
    x: int
builder = StateGraph(State)
builder.add_node("a", lambda s: {"x": s["x"] + 1})
builder.add_edge(START, "a")
print(builder.compile().invoke({"x": 1}, {"callbacks": []}))
print(sorted(m for m in sys.modules if m.startswith(("langchain", "graphcore.engine.lc_runs"))))
"""


def test_without_langchain_core_a_run_with_callbacks_runs_and_imports_nothing_of_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LANGCHAIN_CALLBACKS],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'x': 2}", "['langchain_core']"]  # the None placed above


TOKENS_INPUT = {"messages": [HumanMessage("hi", id="h1")]}


def _shown(pairs: Any) -> list[tuple[str, Any, Any, str, int]]:
    """``(class, content, id, node, langgraph_step)`` of each ``(message, metadata)`` pair."""
    return [
        (type(m).__name__, m.content, m.id, meta["langgraph_node"], meta["langgraph_step"])
        for m, meta in pairs
    ]


def _watched(redis_url: str, run_id: str, *modes: str) -> list[dict[str, Any]]:
    """The JSON lines of ``graphq runs watch RUN -o json`` (``--mode`` each of ``modes``), run to its end."""
    options = [x for mode in modes for x in ("--mode", mode)]
    done = graphq(
        "runs", "watch", run_id, *options, "-o", "json", env=worker_env(redis_url, "tests.workflows.lc_agent")
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_queued_run_records_messages_events_as_langgraph_streams_them(
    client: Client, redis_url: str
) -> None:
    """A run enqueued with the run option ``stream_mode=["messages"]``, on a ``graphq worker`` subprocess:
    its events hold LangGraph's ``stream_mode="messages"`` pairs (the chat model's tokens, then the message
    a node wrote), and ``graphq runs watch RUN --mode messages`` prints them, before the node's update."""
    lg_graph = pytest.importorskip("langgraph.graph")
    expected = _shown(
        build_tokens(lg_graph.StateGraph, lg_graph.START)
        .compile()
        .stream(TOKENS_INPUT, stream_mode="messages")
    )
    assert _shown(lc_tokens.stream(TOKENS_INPUT, stream_mode="messages")) == expected  # in process
    run_id = client.enqueue("lc_tokens", TOKENS_INPUT, config={"stream_mode": ["messages"]})
    burst(worker_env(redis_url, "tests.workflows.lc_agent"))
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    events = list(read_events(client.kv, run_id, run_id))
    pairs = [event.data for event in events if event.mode == "messages"]
    assert _shown(pairs) == expected
    assert [event.step for event in events if event.mode == "messages"] == [1, 1, 1, 1, 1, 2]  # as updates
    assert pairs[0][1]["ls_provider"] == "genericfakechatmodel"
    lines = _watched(redis_url, run_id, "messages", "updates")
    assert [(line["mode"], line["step"]) for line in lines] == [("messages", 1)] * 5 + [
        ("updates", 1),
        ("messages", 2),
        ("updates", 2),
    ]
    shown = [line["data"] for line in lines if line["mode"] == "messages"]
    assert [(m["content"], m["id"], meta["langgraph_node"]) for m, meta in shown] == [
        (content, mid, node) for _, content, mid, node, _ in expected
    ]
    assert [m["type"] for m, _ in shown] == ["AIMessageChunk"] * 5 + ["ai"]  # the messages' own type


def test_a_queued_run_without_the_option_records_no_messages_events(client: Client, redis_url: str) -> None:
    """Without ``stream_mode=["messages"]`` a queued run records no ``messages`` events (no callback, no
    Redis call for them): the events are those of any run."""
    run_id = client.enqueue("lc_tokens", TOKENS_INPUT)
    burst(worker_env(redis_url, "tests.workflows.lc_agent"))
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    modes = [event.mode for event in read_events(client.kv, run_id, run_id)]
    assert modes == ["status", "values", "updates", "values", "updates", "values", "status"]
    # A watch of its messages alone would print nothing and exit 0 (found by the new-user trial): refused.
    alone = invoke("tests.workflows.lc_agent", redis_url, "runs", "watch", run_id, "--mode", "messages")
    assert error_line(ok(alone, 2)) == (
        f"error: --mode messages: run {run_id} records no messages events: it was enqueued without the run "
        """option stream_mode ["messages"] (graphq enqueue --config '{"stream_mode": ["messages"]}')"""
    )
    modes = ["-m", "messages", "-m", "status"]
    both = ok(invoke("tests.workflows.lc_agent", redis_url, "runs", "watch", run_id, *modes))
    assert both.stderr.startswith(f"note: run {run_id} records no messages events")
    assert [line.split()[3] for line in both.stdout.splitlines()] == ["status", "status"]


def test_a_bad_stream_mode_option_is_refused_at_enqueue(client: Client, redis_url: str) -> None:
    """The option is checked at enqueue: a ConfigError naming it from the client; exit 2 and one line
    naming --config from ``graphq enqueue``, which takes a good one (its run records messages events)."""
    with pytest.raises(
        ConfigError, match=r"run option stream_mode\.0: Input should be 'messages' \(got 'valus'\)"
    ):
        client.enqueue("lc_tokens", TOKENS_INPUT, config={"stream_mode": ["valus"]})
    question = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    bad = invoke(
        "tests.workflows.lc_agent",
        redis_url,
        "enqueue",
        "lc_tokens",
        "-i",
        question,
        "--config",
        '{"stream_mode": "valus"}',
    )
    assert (
        error_line(ok(bad, 2))
        == "error: --config: run option stream_mode.0: Input should be 'messages' (got 'valus')"
    )
    assert client.list_runs() == []
    good = ok(
        invoke(
            "tests.workflows.lc_agent",
            redis_url,
            "enqueue",
            "lc_tokens",
            "-i",
            question,
            "--config",
            '{"stream_mode": "messages"}',
        )
    )
    run_id = good.stdout.strip()
    work(client)
    modes = [event.mode for event in read_events(client.kv, run_id, run_id)]
    assert modes.count("messages") == 6


def test_create_react_agent_with_hooks_and_a_structured_response_on_a_worker(
    client: Client, redis_url: str
) -> None:
    """create_react_agent with ``pre_model_hook``, ``post_model_hook`` and ``response_format`` (a pydantic
    class): the same state in process and on a ``graphq worker`` subprocess, the structured response an
    :class:`Answer` on both; the hook's ``llm_input_messages`` are not in the state."""
    out = lc_react_hooks.invoke(QUESTION)
    run_id = client.enqueue("lc_react_hooks", QUESTION)
    burst(worker_env(redis_url, "tests.workflows.lc_agent"))
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    for result in (out, run.result):
        assert sorted(result) == ["messages", "structured_response"]
        assert result["structured_response"] == Answer(text="2 + 3 = 5; sunny in sf", tools=3)
        assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "tool", "tool", "ai"]
        assert {m.name for m in result["messages"] if m.type == "ai"} == {"lc_react_hooks"}


class ChainRuns(BaseCallbackHandler):
    """The names of the chain runs it hears, with their parent's name."""

    def __init__(self) -> None:
        self.names: dict[UUID, str] = {}
        self.runs: list[tuple[str, str | None]] = []

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self.names[run_id] = kwargs["name"]
        self.runs.append((kwargs["name"], self.names.get(parent_run_id) if parent_run_id else None))

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.runs.append(("model", self.names.get(parent_run_id) if parent_run_id else None))


def test_a_graph_called_in_a_langchain_run_reports_its_run_and_its_node_runs() -> None:
    """A graph invoked with the config of a LangChain run (a ``RunnableLambda`` passing its config on): the
    graph's chain run is a child of that run, each node's a child of the graph's, and the model called in a
    node is a child of the node's run, as LangGraph's; without a LangChain run around it the graph's run is
    the root."""
    graph = build_tokens().compile()
    heard = ChainRuns()
    chain = RunnableLambda(lambda x, config: graph.invoke(x, config), name="outer")
    chain.invoke(TOKENS_INPUT, {"callbacks": [heard]})
    graph_runs = [("chat", "LangGraph"), ("model", "chat"), ("plain", "LangGraph")]
    assert heard.runs == [("outer", None), ("LangGraph", "outer"), *graph_runs]
    plain = ChainRuns()
    graph.invoke(TOKENS_INPUT, {"callbacks": [plain]})
    assert plain.runs == [("LangGraph", None), *graph_runs]


class Ticks:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_queued_steps_messages_are_sent_in_batches() -> None:
    """The batching of a queued step's ``messages`` events (graphq.worker.step.messages): with the clock
    still, one call per MAX_BATCH pairs and the rest at the task's end (its written message first); once
    INTERVAL_S has passed, the next pair goes at once."""
    sent: list[list[tuple[str, int, Any]]] = []
    clock = Ticks()
    cp = Checkpoint(
        id="c",
        parent_id=None,
        step=3,
        channel_values={"messages": [HumanMessage("hi", id="h1")]},
        next_tasks=[PendingTask("chat")],
    )
    step = StepMessages(sent.append, cp, clock)
    for n in range(2 * MAX_BATCH + 50):
        step.shows.show(AIMessageChunk(str(n), id="m1"), {"langgraph_node": "chat"}, dedupe=False)
    assert [len(batch) for batch in sent] == [MAX_BATCH, MAX_BATCH]
    chat = task_id("c", 0, "chat")
    written = TaskWrites(
        chat, "chat", [("messages", [AIMessage("done", id="m2"), HumanMessage("hi", id="h1")])]
    )
    step.task_done(written)
    assert [len(batch) for batch in sent] == [MAX_BATCH, MAX_BATCH, 51]
    mode, event_step, (message, metadata) = sent[-1][-1]
    assert (mode, event_step, message.content, metadata) == (
        "messages",
        4,
        "done",
        {
            "ls_integration": "langgraph",
            "langgraph_step": 4,  # the step of the checkpoint the task makes, as the event's
            "langgraph_node": "chat",
            "langgraph_triggers": ("branch:to:chat",),
            "langgraph_path": ("__pregel_pull", "chat"),
            "langgraph_checkpoint_ns": f"chat:{chat}",
        },
    )
    clock.now += INTERVAL_S
    step.shows.show(AIMessageChunk("late", id="m3"), {"langgraph_node": "chat"}, dedupe=False)
    assert [len(batch) for batch in sent] == [MAX_BATCH, MAX_BATCH, 51, 1]
    step.flush()
    assert len(sent) == 4  # nothing waits: no call
