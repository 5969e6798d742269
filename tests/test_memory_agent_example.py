"""The ``memory-agent`` example (examples/memory_agent.py): LangGraph's agents quickstart (a ReAct agent
with a LangChain ``@tool``, a prompt and memory) with its imports changed to graphq's. The same program
with LangGraph's imports gives the expected conversation; graphq's gives it in process, as a script, and
enqueued twice on one thread to a ``graphq worker`` subprocess (the thread is the memory)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from typing import Any

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphq.examples.memory_agent import FakeWeatherChat, agent, get_weather
from tests.workers import ROOT, burst, graphq, worker_env

REGISTRY = Registry.load(["graphq.examples.memory_agent"])
QUESTIONS = ["what is the weather in sf", "what about new york?"]


def shape(messages: list[Any]) -> list[tuple[str, Any, Any, Any]]:
    """(type, content, tool calls or tool_call_id, name) of each message; ids are random."""
    return [
        (m.type, m.content, getattr(m, "tool_calls", None) or getattr(m, "tool_call_id", None), m.name)
        for m in messages
    ]


def conversation(graph: Any) -> list[list[tuple[str, Any, Any, Any]]]:
    """The tutorial's two questions on thread "1" of ``graph``: the messages after each."""
    config = {"configurable": {"thread_id": "1"}}
    asked = [{"messages": [{"role": "user", "content": q}]} for q in QUESTIONS]
    return [shape(graph.invoke(question, config)["messages"]) for question in asked]


@pytest.fixture(scope="module")
def expected() -> list[list[tuple[str, Any, Any, Any]]]:
    """The conversation with LangGraph's imports (the tutorial as written, with the example's model)."""
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    memory = pytest.importorskip("langgraph.checkpoint.memory")
    with warnings.catch_warnings():  # LangGraph 1.x: create_react_agent has moved to langchain.agents
        warnings.simplefilter("ignore")
        graph = prebuilt.create_react_agent(
            model=FakeWeatherChat(),
            tools=[get_weather],
            prompt="You are a helpful assistant",
            checkpointer=memory.InMemorySaver(),
            name="memory-agent",
        )
    return conversation(graph)


def test_langgraphs_conversation_remembers_the_first_question(
    expected: list[list[tuple[str, Any, Any, Any]]],
) -> None:
    first, second = expected
    assert second[: len(first)] == first
    assert [m[1] for m in second if m[0] == "ai" and m[1]] == [
        "It's always sunny in sf! (question 1 of this conversation)",
        "It's always sunny in new york! (question 2 of this conversation)",
    ]


def test_in_process_it_is_langgraphs(expected: list[list[tuple[str, Any, Any, Any]]]) -> None:
    assert conversation(agent) == expected


def test_as_a_script_it_prints_the_second_answer() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graphq.examples.memory_agent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.splitlines()[-1] == "ai: It's always sunny in new york! (question 2 of this conversation)"
    )


def test_on_a_worker_subprocess_the_thread_is_the_memory(
    client: Client, redis_url: str, expected: list[list[tuple[str, Any, Any, Any]]]
) -> None:
    env = worker_env(redis_url, "graphq.examples.memory_agent")
    results = []
    for question in QUESTIONS:
        payload = json.dumps({"messages": [{"role": "user", "content": question}]})
        enqueued = graphq("enqueue", "memory-agent", "--thread", "1", "--input", payload, env=env)
        assert enqueued.returncode == 0, enqueued.stderr
        burst(env)
        run = client.get_run(enqueued.stdout.strip())
        assert run.status == RunStatus.COMPLETED, run.error
        assert run.result is not None
        results.append(shape(run.result["messages"]))
    assert results == expected
