"""The long-term store on the queue: every run of every workflow, on any thread, shares the workers' Redis
store (a burst worker in this process, and a ``graphq worker`` subprocess)."""

from __future__ import annotations

import pytest
import redis

from graphcore.backend.client import Client
from graphcore.backend.redis_store import RedisStore
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import Start, work, worker_env
from tests.workflows import memory

REGISTRY = Registry({g.name: g for g in (memory.remember, memory.recall, memory.lookup)})


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    """Environment of the worker subprocess: the test Redis and these workflows."""
    return worker_env(redis_url, "tests.workflows.memory")


def test_runs_on_other_threads_see_what_a_run_put(client: Client, redis_client: redis.Redis) -> None:
    first = client.enqueue("remember", {"user": "ann", "text": "my cat"})
    second = client.enqueue("remember", {"user": "bob", "text": "dog food"})
    assert work(client)
    assert [r.status for r in client.wait([first, second], timeout_s=30)] == [RunStatus.COMPLETED] * 2
    runs = [
        client.enqueue("recall", {"query": "cat"}),
        client.enqueue("lookup", {"user": "bob"}),  # compiled without a store: gets the workers' one
    ]
    assert work(client)
    recalled, looked_up = client.wait(runs, timeout_s=30)
    assert len({client.get_run(r).thread_id for r in [first, second, *runs]}) == 4  # four threads
    assert recalled.result == {
        "query": "cat",
        "found": ["memories/ann:my cat", "memories/bob:dog food"],
        "scores": [1.0, 0.5],  # embedded when put, with the workflow's index: cosine to "cat"
    }
    assert looked_up.result == {"user": "bob", "found": ["dog food"]}
    # the items are in Redis, for any client of the store
    item = RedisStore(redis_client).get(("memories", "ann"), "note")
    assert item is not None and item.value == {"text": "my cat"}
    assert memory._store.list_namespaces() == []  # the in-process store was not used


def test_a_worker_process_uses_the_redis_store(
    client: Client, start: Start, redis_client: redis.Redis
) -> None:
    RedisStore(redis_client).put(("memories", "cy"), "note", {"text": "fish"})
    start()
    put = client.enqueue("remember", {"user": "dee", "text": "cat and dog"})
    assert client.wait([put], timeout_s=30)[0].status == RunStatus.COMPLETED
    found = client.wait([client.enqueue("recall", {})], timeout_s=30)[0]
    assert found.result is not None
    assert sorted(found.result["found"]) == ["memories/cy:fish", "memories/dee:cat and dog"]
    assert RedisStore(redis_client).list_namespaces() == [("memories", "cy"), ("memories", "dee")]
