"""The order a super-step's writes apply in is LangGraph's, on the queue as in-process: the tasks
edges triggered by node name, then the sent ones in send order."""

from __future__ import annotations

from pathlib import Path

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from tests.workers import burst, worker_env
from tests.workflows.order import fan_order

REGISTRY = Registry.load(["tests.workflows.order"])
EXPECTED = {"items": ["alpha", "beta", "flaky", "side", "s2", "s0", "s1"]}


def test_parallel_writes_apply_in_langgraphs_order_on_the_queue(
    client: Client, redis_url: str, tmp_path: Path
) -> None:
    run_id = client.enqueue("fan-order", {"items": []})
    burst(worker_env(redis_url, "tests.workflows.order", tmp_path))
    assert client.get_run(run_id).result == EXPECTED


def test_parallel_writes_apply_in_langgraphs_order_in_process() -> None:
    assert fan_order.invoke({"items": []}) == EXPECTED
