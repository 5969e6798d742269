"""The ``react-agent`` example (examples/react_agent.py, ported from LangGraph's "How to create a ReAct agent
from scratch"): in process, and enqueued with ``graphq enqueue`` to a real ``graphq worker`` subprocess that
finds it through its ``graphq.workflows`` entry point."""

from __future__ import annotations

import json
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from graphq.examples.react_agent import FakeWeatherModel, graph
from tests.workers import ROOT, burst, graphq, worker_env

MODULE = "tests.workflows.agent_tools"
REGISTRY = Registry.load([MODULE])  # the entry points (react-agent) and the test's tool-approvals
QUESTION = {"messages": [{"role": "user", "content": "weather in sf and nyc?"}], "tokens_left": 400}
CALLS = [
    {"name": "get_weather", "args": {"city": "sf"}, "id": "call-0-0", "type": "tool_call"},
    {"name": "get_weather", "args": {"city": "nyc"}, "id": "call-0-1", "type": "tool_call"},
]
ANSWER = "The weather: sf: foggy, 14 °C; nyc: sunny, 22 °C."
FIRST_USAGE = {"input_tokens": 18, "output_tokens": 16, "total_tokens": 34}  # 16 words in; 2 calls x 8 out
SECOND_USAGE = {"input_tokens": 26, "output_tokens": 10, "total_tokens": 36}


def shape(messages: list[Any]) -> list[tuple[str, Any, Any]]:
    """(type, content, tool calls or tool_call_id) of each message; ids are random."""
    return [
        (m.type, m.content, getattr(m, "tool_calls", None) or getattr(m, "tool_call_id", None))
        for m in messages
    ]


EXPECTED = [
    ("human", "weather in sf and nyc?", None),
    ("ai", "", CALLS),
    ("tool", "sf: foggy, 14 °C", "call-0-0"),
    ("tool", "nyc: sunny, 22 °C", "call-0-1"),
    ("ai", ANSWER, None),
]


def test_the_fake_model_calls_a_tool_per_city_and_reports_usage() -> None:
    model = FakeWeatherModel()
    system = SystemMessage("Use get_weather.")
    asks = model.invoke([system, HumanMessage("weather in paris, paris and atlantis?")])
    assert [c["args"] for c in asks.tool_calls] == [{"city": "paris"}]
    assert asks.usage_metadata == {"input_tokens": 8, "output_tokens": 8, "total_tokens": 16}
    tool = ToolMessage("paris: light rain, 11 °C", tool_call_id="call-0-0")
    assert (
        model.invoke([system, HumanMessage("q"), asks, tool]).content
        == "The weather: paris: light rain, 11 °C."
    )
    assert (
        model.invoke([system, HumanMessage("hello")]).content == "I can tell the weather in sf, nyc, paris."
    )


def test_in_process_the_loop_answers_with_the_tool_results() -> None:
    out = graph.invoke(QUESTION)
    assert shape(out["messages"]) == EXPECTED
    assert [m.usage_metadata for m in out["messages"] if isinstance(m, AIMessage)] == [
        FIRST_USAGE,
        SECOND_USAGE,
    ]
    assert (out["iterations"], out["tokens_left"]) == (2, 400 - 34 - 36)
    assert out["decision"] == {"action": "answer", "names": [], "answer": ANSWER}


def test_in_process_a_spent_budget_ends_the_loop_before_the_tools_run() -> None:
    out = graph.invoke({"messages": "weather in paris", "tokens_left": 10})
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    spent = 16 + 8  # 16 words in (the prompt and the question), 8 out (one tool call)
    assert (out["iterations"], out["tokens_left"]) == (1, 10 - spent)
    assert out["decision"] == {"action": "call_tools", "names": ["get_weather"], "answer": None}


def test_it_is_registered_as_the_react_agent_workflow() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
        "graphq.workflows"
    ]
    assert declared["react-agent"] == "graphq.examples.react_agent:graph"
    (ep,) = [ep for ep in entry_points(group="graphq.workflows") if ep.name == "react-agent"]
    assert ep.load() is graph and graph.name == "react-agent"


def test_enqueued_it_runs_on_a_worker_subprocess(client: Client, redis_url: str) -> None:
    """``graphq enqueue react-agent`` and a ``graphq worker --burst`` that loads only the entry points: the
    messages (through the serde allow-list), the iteration count and the budget left are the in-process
    ones; ``runs show -o json`` prints the messages as dicts."""
    env = worker_env(redis_url, "")  # no workflow modules: the worker finds react-agent by its entry point
    enqueued = graphq("enqueue", "react-agent", "--input", json.dumps(QUESTION), env=env)
    assert enqueued.returncode == 0, enqueued.stderr
    run_id = enqueued.stdout.strip()
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result is not None
    assert shape(run.result["messages"]) == EXPECTED
    assert all(type(m) in (HumanMessage, AIMessage, ToolMessage) for m in run.result["messages"])
    assert (run.result["iterations"], run.result["tokens_left"]) == (2, 330)
    shown = graphq("runs", "show", run_id, "-o", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    result = json.loads(shown.stdout)["result"]
    assert [(m["type"], m["content"]) for m in result["messages"]] == [(t, c) for t, c, _ in EXPECTED]
    assert result["messages"][2]["tool_call_id"] == "call-0-0"
    assert (result["iterations"], result["tokens_left"]) == (2, 330)


def test_tool_calls_that_ask_are_answered_by_id_on_a_worker(
    client: Client, redis_url: str, tmp_path: Path
) -> None:
    """On the queue, ToolNode's calls are tasks of its inner graph (checkpointed in the run's thread under
    the tools task's namespace): both asking calls surface as requests, each answer reaches its call, and
    the call that finished before the pause is not run again after it."""
    env = worker_env(redis_url, MODULE, test_dir=tmp_path)
    run_id = client.enqueue("tool-approvals", {"messages": "go"})
    burst(env)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    asks = client.requests(run_id)
    assert sorted(r.value["approve"] for r in asks) == ["pay", "ship"]
    client.answer(run_id, {r.id: f"ok-{r.value['approve']}" for r in asks})
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED and run.result is not None
    assert shape(run.result["messages"][2:]) == [
        ("tool", "pay: ok-pay", "c-pay"),
        ("tool", "z", "c-quick"),
        ("tool", "ship: ok-ship", "c-ship"),
        ("ai", "done: pay: ok-pay, z, ship: ok-ship", None),
    ]
    assert (tmp_path / "quick.log").read_text() == "z\n"
