"""``ToolRuntime`` on the queue (issue 23; in process: tests/compat/test_tool_runtime.py): a ``graphq
worker`` subprocess runs ``create_react_agent``'s tools task; the tool's runtime has the run's context, the
workers' Redis store and the call's id, and its ``stream_writer`` chunk is one of the run's custom events."""

from __future__ import annotations

import redis
from langchain_core.messages import HumanMessage

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.redis_store import RedisStore
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import burst, worker_env

MODULE = "tests.workflows.lc_runtime"
REGISTRY = Registry.load([MODULE])


def test_a_worker_gives_a_tool_its_runtime(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    store = RedisStore(redis_client)
    store.put(("users", "ann"), "home", {"city": "paris"})
    run_id = client.enqueue(
        "lc-runtime", {"messages": [HumanMessage("hi", id="h1")]}, config={"context": {"user": "ann"}}
    )
    burst(worker_env(redis_url, MODULE))
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    assert [(m.type, m.content) for m in run.result["messages"]] == [
        ("human", "hi"),
        ("ai", ""),
        ("tool", "ann of paris: buy tea (n1)"),
        ("ai", "ok"),
    ]
    note = store.get(("notes", "ann"), "n1")
    assert note is not None and note.value == {"text": "buy tea"}
    custom = [e.data for e in read_events(client.kv, run_id, run_id) if e.mode == "custom"]
    assert custom == [{"node": "tools", "chunk": {"noted": "buy tea", "call": "n1"}}]
