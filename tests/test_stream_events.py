"""A queued run's events use the in-process stream payloads (graphcore.engine.stream): ``updates`` and the
``checkpoints`` lines ``graphq runs watch`` prints."""

from __future__ import annotations

from typing import Any

import redis

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.engine.registry import Registry
from graphcore.engine.stream import checkpoint_payload
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from tests.workflows.streams import quiet

REGISTRY = Registry.load(["tests.workflows.streams"])


def test_a_queued_node_that_writes_nothing_updates_none(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    """As in process (and LangGraph): ``{node: None}`` for a task that wrote nothing."""
    run_id = client.enqueue("quiet", {})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    run = client.get_run(run_id)
    updates = [e.data for e in read_events(redis_client, run.thread_id, run_id) if e.mode == "updates"]
    assert updates == [{"quiet": None}, {"write": {"n": 1}}]
    assert updates == list(quiet.stream({}))


def test_checkpoint_payload_of_a_queued_run(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """LangGraph's checkpoint shape, with the run's thread in its config."""
    run_id = client.enqueue("quiet", {})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    run = client.get_run(run_id)
    head = client.get_state(run.thread_id)
    payload = checkpoint_payload(head, run.thread_id)
    assert payload["config"] == {
        "configurable": {"checkpoint_ns": "", "thread_id": run.thread_id, "checkpoint_id": head.id}
    }
    assert payload["parent_config"] == {
        "configurable": {"checkpoint_ns": "", "thread_id": run.thread_id, "checkpoint_id": head.parent_id}
    }
    assert (payload["values"], payload["next"], payload["tasks"]) == ({"n": 1}, [], [])
    assert payload["metadata"] == {
        "source": "loop",
        "step": 2,
        "parents": {},
    }  # input -1, 0, quiet 1, write 2
