"""The durable-semantics cases again, with every step worked by `graphq worker --burst` subprocesses."""

from __future__ import annotations

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from tests.workers import burst, worker_env
from tests.workflows.hitl import Order

MODULES = "tests.workflows.hitl,tests.workflows.subgraphs"
REGISTRY = Registry.load(MODULES.split(","))


def work(redis_url: str) -> None:
    """One burst of a worker subprocess over the test workflows' queues."""
    burst(worker_env(redis_url, MODULES))


def test_parallel_subgraph_requests_in_subprocesses(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("batch-review", {"items": ["a", "b"]})
    work(redis_url)
    first, second = client.requests(run_id)
    with pytest.raises(InvalidUpdateError, match="2 requests are pending"):
        client.answer(run_id, "yes")
    client.answer(run_id, {first.id: "yes"})
    work(redis_url)
    assert [r.id for r in client.requests(run_id)] == [second.id]
    assert "joined" not in client.get_state(client.get_run(run_id).thread_id).channel_values
    client.answer(run_id, {second.id: "no"})
    work(redis_url)
    assert client.get_run(run_id).result == {"items": ["a", "b"], "notes": ["a:yes", "b:no"], "joined": 2}


def test_agent_tool_approval_in_subprocesses(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("chat", {"messages": [{"id": "h1", "role": "human", "content": "q"}]})
    work(redis_url)
    client.answer(run_id, "yes")
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None
    assert [m.id for m in result["messages"]] == ["h1", "ai-call", "tool-1", "ai-final"]


def test_multi_turn_budget_and_continuation_in_subprocesses(client: Client, redis_url: str) -> None:
    runs = [client.enqueue("looping", {"until": u}, thread_id="turns") for u in (3, 6, 12)]
    work(redis_url)
    statuses = [client.get_run(r).status for r in runs]
    assert statuses == [RunStatus.COMPLETED, RunStatus.COMPLETED, RunStatus.FAILED]
    again = client.enqueue("looping", {"until": 9}, thread_id="turns")
    work(redis_url)
    assert client.get_run(again).result == {
        "until": 9,
        "turns": [],
        "count": 12,
    }  # 11 after the failed turn, +1


def test_pydantic_enum_state_in_subprocesses(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("ordering", {"order": Order(id=3)})
    work(redis_url)
    [request] = client.requests(run_id)
    assert request.value["status"] is Order.Status.OPEN
    client.answer(run_id, "fine")
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None and result["order"].status is Order.Status.APPROVED


def test_child_thread_lineage_in_subprocesses(client: Client, redis_url: str) -> None:
    for _ in range(2):
        client.enqueue("outer", {})
        work(redis_url)
    assert client.get_state("child-thread").channel_values == {"counter": 2}
