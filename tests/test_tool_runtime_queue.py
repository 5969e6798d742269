"""``ToolRuntime`` on the queue (in process: tests/compat/test_tool_runtime.py): a ``graphq
worker`` subprocess runs the tool; its runtime has the run's context, the workers' Redis store and the
call's id, and its ``stream_writer`` chunk is one of the run's custom events — in ``create_react_agent``'s
per-call ``tools`` task and in a ``ToolNode`` given the messages (its calls run in an inner graph)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from langchain_core.messages import AIMessage, HumanMessage

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.redis_store import RedisStore
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import burst, worker_env
from tests.workflows.lc_runtime import CALLS

MODULE = "tests.workflows.lc_runtime"
REGISTRY = Registry.load([MODULE])


@pytest.mark.parametrize(
    ("workflow", "given", "expected"),
    [
        (
            "lc-runtime",
            [HumanMessage("hi", id="h1")],
            [("human", "hi"), ("ai", ""), ("tool", "ann of paris: buy tea (n1)"), ("ai", "ok")],
        ),
        (
            "lc-runtime-node",
            [AIMessage("", tool_calls=CALLS, id="a1")],
            [("ai", ""), ("tool", "ann of paris: buy tea (n1)")],
        ),
    ],
)
def test_a_worker_gives_a_tool_its_runtime(
    client: Client,
    redis_client: redis.Redis,
    redis_url: str,
    workflow: str,
    given: list[Any],
    expected: list[tuple[str, str]],
) -> None:
    store = RedisStore(redis_client)
    store.put(("users", "ann"), "home", {"city": "paris"})
    run_id = client.enqueue(workflow, {"messages": given}, config={"context": {"user": "ann"}})
    burst(worker_env(redis_url, MODULE))
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    assert [(m.type, m.content) for m in run.result["messages"]] == expected
    note = store.get(("notes", "ann"), "n1")
    assert note is not None and note.value == {"text": "buy tea"}
    custom = [e.data for e in read_events(client.kv, run_id, run_id) if e.mode == "custom"]
    assert custom == [{"node": "tools", "chunk": {"noted": "buy tea", "call": "n1"}}]
