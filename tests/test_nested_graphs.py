"""Graphs a node invokes in its body, on the queue with real worker subprocesses and
in-process: the inner graph's interrupt pauses the run and its answer reaches it; each call of a node has a
namespace of its own; the idempotency key of a task is the same on every resume."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypedDict

import pytest
import redis

from graphcore import START, Command, StateGraph, get_config, interrupt, keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.engine.registry import Registry
from tests.workers import burst, graphq, worker_env

REGISTRY = Registry.load(["tests.workflows.nested"])


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.nested", tmp_path)


def _log(tmp_path: Path) -> list[str]:
    path = tmp_path / "nested.log"
    return path.read_text().splitlines() if path.exists() else []


def test_an_inner_graphs_question_pauses_the_run_and_its_answer_reaches_it(
    client: Client, env: dict[str, str], tmp_path: Path
) -> None:
    run_id = client.enqueue("nested-ask", {"items": []})
    burst(env)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    (request,) = client.requests(run_id)
    assert (request.node, request.value) == ("ask", "ok?")
    assert client.answer(run_id, "yes") == [request.id]
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result == {"items": ["inner:['x', 'answer:yes']"]}
    first, second = _log(tmp_path)
    assert first == second  # the inner task's idempotency key is the same on the resumed run
    assert re.fullmatch(rf"ask {run_id}:1:[0-9a-f]{{16}}", first)  # the inner graph's first step: 1


def test_graphq_runs_answer_reaches_an_inner_graphs_question(client: Client, env: dict[str, str]) -> None:
    run_id = client.enqueue("nested-ask", {"items": []})
    burst(env)
    (request,) = client.requests(run_id)
    answered = graphq("runs", "answer", run_id, "--value", '"yes"', env=env)
    assert (answered.returncode, answered.stdout) == (0, f"{request.id}\n")
    burst(env)
    assert client.get_run(run_id).result == {"items": ["inner:['x', 'answer:yes']"]}


def test_each_graph_call_of_a_node_has_its_namespace_on_the_queue(
    client: Client, env: dict[str, str], tmp_path: Path, redis_client: redis.Redis
) -> None:
    run_id = client.enqueue("nested-three", {"items": []})
    burst(env)
    assert len(client.requests(run_id)) == 1
    client.answer(run_id, "yes")
    burst(env)
    run = client.get_run(run_id)
    assert run.result == {"items": ["one", "done", "two", "done", "answer:yes"]}
    log = _log(tmp_path)
    assert log[:2] == ["work one", "work two"]  # the finished calls do not run again on the answer
    assert [line.split()[0] for line in log] == ["work", "work", "ask", "ask"]
    namespaces = {k.decode().split(":hist:")[1] for k in redis_client.scan_iter(match="graphq:*:hist:?*")}
    assert len(namespaces) == 3
    base = min(namespaces, key=len)
    assert re.fullmatch(r"call:[0-9a-f]{16}", base)
    assert namespaces == {base, f"{base}|1", f"{base}|2"}


def test_a_retried_node_runs_its_graph_call_again_on_the_queue(
    client: Client, env: dict[str, str], tmp_path: Path
) -> None:
    run_id = client.enqueue("nested-retry", {"items": []})
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"items": ["x", "done"]}
    assert _log(tmp_path) == ["work x", "work x"]  # the retry's call runs afresh, not the failed try's


def test_a_node_asking_around_its_graph_call_gets_each_answer_on_the_queue(
    client: Client, env: dict[str, str]
) -> None:
    run_id = client.enqueue("nested-around", {"items": []})
    asked = []
    for answer in ("A", "B", "C"):
        burst(env)
        (request,) = client.requests(run_id)
        asked.append(request.value)
        client.answer(run_id, answer)
    burst(env)
    assert asked == ["outer?", "ok?", "last?"]
    assert client.get_run(run_id).result == {"items": ["A", "answer:B", "C"]}


def test_a_node_asking_from_two_threads_fails_the_run_on_the_queue(
    client: Client, env: dict[str, str]
) -> None:
    run_id = client.enqueue("nested-threads", {"items": []})
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "ConcurrentInterruptError"
    assert run.error.message.startswith("node 'call' paused from 2 threads (or asyncio tasks) of one task: ")


class Keyed(TypedDict, total=False):
    keys: list[str]


def test_the_idempotency_key_of_a_task_is_the_same_on_every_resume_in_process() -> None:
    seen: list[str] = []

    def ask(state: Keyed) -> dict[str, Any]:
        seen.append(get_config().configurable["__graphq_idempotency_key"])
        first, second = interrupt("first?"), interrupt("second?")
        return {"keys": [first, second]}

    builder = StateGraph(Keyed)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemoryCheckpointStore())
    thread = {"thread_id": "k"}
    graph.invoke({}, thread)
    graph.invoke(Command(resume="A"), thread)
    assert graph.invoke(Command(resume="B"), thread) == {"keys": ["A", "B"]}
    assert len(seen) == 3
    assert len(set(seen)) == 1
    run, step, task = seen[0].split(":")
    assert (len(run), step, len(task)) == (32, "1", 16)


def test_the_idempotency_key_of_an_inner_task_is_the_parents_run_and_stable() -> None:
    seen: list[tuple[str, str]] = []

    def ask(state: Keyed) -> dict[str, Any]:
        seen.append(("inner", get_config().configurable["__graphq_idempotency_key"]))
        return {"keys": [interrupt("ok?")]}

    inner = StateGraph(Keyed)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    asker = inner.compile()

    def call(state: Keyed) -> dict[str, Any]:
        seen.append(("outer", get_config().configurable["__graphq_idempotency_key"]))
        return asker.invoke({})

    outer = StateGraph(Keyed)
    outer.add_node("call", call)
    outer.add_edge(START, "call")
    graph = outer.compile(checkpointer=InMemoryCheckpointStore())
    graph.invoke({}, {"thread_id": "n"})
    assert graph.invoke(Command(resume="yes"), {"thread_id": "n"}) == {"keys": ["yes"]}
    (outer_1, inner_1, outer_2, inner_2) = seen
    assert (outer_1, inner_1) == (outer_2, inner_2)
    assert outer_1[1].split(":")[0] == inner_1[1].split(":")[0]  # one run: the parent's


def test_a_completed_run_leaves_no_checkpoint_of_its_graph_calls(
    client: Client, redis_url: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    env = worker_env(
        redis_url, "tests.workflows.nested", tmp_path, GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION="false"
    )
    run_id = client.enqueue("nested-three", {"items": []}, thread_id="th")
    burst(env)
    client.answer(run_id, "yes")
    burst(env)
    assert client.get_run(run_id).result == {"items": ["one", "done", "two", "done", "answer:yes"]}
    left = {k.decode().split("}:", 1)[1] for k in redis_client.scan_iter(match=keys.thread_pattern("th"))}
    assert sorted(k.split(":", 1)[0] for k in left) == ["events", "requests", "run", "runs"]
