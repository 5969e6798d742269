"""The options an unknown run option's message lists: in process every key a config may have, on the queue
(client and ``graphq enqueue --config``) those a queued run accepts — not ``run_id`` (the queue names each
run) nor ``checkpoint_ns`` (a queued run is a root run), which is still tolerated as LangGraph's configs
carry it."""

from __future__ import annotations

import pytest
import redis

from graphcore.backend.client import QUEUE_OPTIONS, Client, RunRequest
from graphcore.engine.config import ACCEPTED, merge_config
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphq.worker.queue import connect_client
from tests.cli_helpers import error_line, invoke, ok

WORKFLOWS = "tests.workflows.reducer_inputs"
REGISTRY = Registry.load([WORKFLOWS])
EVERY = [
    "callbacks", "checkpoint_id", "checkpoint_ns", "configurable", "context", "durability", "max_concurrency",
    "max_concurrent_runs", "max_concurrent_runs_per_tenant", "max_super_steps", "metadata", "recursion_limit",
    "request_timeout_s", "resume_if_exists", "run_id", "run_name", "run_timeout_s", "shard_min_tasks",
    "stream_mode", "tags", "thread_id", "thread_ttl_s", "version_policy", "webhook",
]  # fmt: skip
QUEUED = [k for k in EVERY if k not in ("run_id", "checkpoint_ns")]


@pytest.fixture
def client(redis_url: str, redis_client: redis.Redis) -> Client:
    return connect_client(redis_url, registry=REGISTRY)


def test_the_lists() -> None:
    assert list(ACCEPTED) == EVERY
    assert list(QUEUE_OPTIONS) == QUEUED


def test_in_process_an_unknown_option_lists_every_option() -> None:
    with pytest.raises(ConfigError) as info:
        merge_config({"recursion_limt": 5})
    assert str(info.value) == f"unknown run option(s) ['recursion_limt']; known: {EVERY}"
    with pytest.raises(ConfigError) as info:
        REGISTRY.get("echo").invoke({"messages": ["hi"]}, {"recursion_limt": 5})
    assert str(info.value) == f"unknown run option(s) ['recursion_limt']; known: {EVERY}"


def test_on_the_queue_an_unknown_option_lists_the_queue_s_options(client: Client, redis_url: str) -> None:
    with pytest.raises(ConfigError) as info:
        client.enqueue("echo", {"messages": ["hi"]}, config={"recursion_limt": 5})
    assert str(info.value) == f"unknown run option(s) ['recursion_limt']; known: {QUEUED}"
    refused = ok(invoke(WORKFLOWS, redis_url, "enqueue", "echo", "--config", '{"recursion_limt": 5}'), 2)
    assert (
        error_line(refused) == f"error: --config: unknown run option(s) ['recursion_limt']; known: {QUEUED}"
    )
    assert client.list_runs() == []


def test_the_queue_refuses_run_id_and_tolerates_checkpoint_ns(client: Client, redis_url: str) -> None:
    given = (
        "run option run_id 'r1': the queue names each run itself (client.enqueue returns the id, graphq "
        "enqueue prints it); give none"
    )
    with pytest.raises(ConfigError) as info:
        client.check(RunRequest("echo", {"messages": ["hi"]}, config={"run_id": "r1"}))
    assert str(info.value) == given
    refused = ok(invoke(WORKFLOWS, redis_url, "enqueue", "echo", "--config", '{"run_id": "r1"}'), 2)
    assert error_line(refused) == f"error: --config: {given}"
    langgraph = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    assert client.get_run(client.enqueue("echo", {"messages": ["hi"]}, config=langgraph)).thread_id == "t1"
