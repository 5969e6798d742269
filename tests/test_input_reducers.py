"""The reducer check at enqueue: each reducer channel's input goes through its reducer onto the channel's
empty value, so an input the reducer refuses (add_messages: a message dict without content) is refused
before anything is stored, not by the run's first step; the same through the CLI (exit 2, one line)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from click.testing import Result

from graphcore.backend.client import Client
from graphcore.engine.inputs import InputTypeError
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from graphcore.messages import HumanMessage, RemoveMessage
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import connect_client
from tests.cli_helpers import error_line, invoke, ok
from tests.workflows import reducer_inputs

WORKFLOWS = "tests.workflows.reducer_inputs"
REGISTRY = Registry.load([WORKFLOWS])
NO_CONTENT = "a message dict must have 'role' (or 'type') and 'content' keys; got {'role': 'user'}"


@pytest.fixture
def client(redis_url: str, redis_client: redis.Redis) -> Client:
    return connect_client(redis_url, registry=REGISTRY)


def work(url: str) -> None:
    run_worker(Settings(redis_url=url), burst=True, registry=REGISTRY)


def graphq(url: str, *args: str) -> Result:
    return invoke(WORKFLOWS, url, *args)


@pytest.mark.parametrize(
    ("workflow", "payload", "message"),
    [
        ("echo", {"messages": [{"role": "user"}]}, f"input.messages: add_messages refused it: {NO_CONTENT}"),
        (
            "echo-model",
            {"messages": [{"role": "user"}]},
            f"input.messages: add_messages refused it: {NO_CONTENT}",
        ),
        ("echo-root", [{"role": "user"}], f"input: add_messages refused it: {NO_CONTENT}"),
        (
            "echo",
            {"messages": [("robot", "hi")]},
            "input.messages: add_messages refused it: unexpected message role 'robot'; use one of 'human', "
            "'user', 'ai', 'assistant', 'system', 'developer', 'tool'",
        ),
        (
            "echo",
            {"messages": [{"role": "tool", "content": "4"}]},
            "input.messages: add_messages refused it: a 'tool' message needs a 'tool_call_id' (got {})",
        ),
        (
            "counted",
            {"numbers": "7"},
            "input.numbers: whole_numbers refused it: whole_numbers takes an int, not str",  # one line
        ),
    ],
)
def test_an_input_its_reducer_refuses_is_refused_before_anything_is_stored(
    client: Client, workflow: str, payload: Any, message: str
) -> None:
    with pytest.raises(InputTypeError) as info:
        client.enqueue(workflow, payload)
    assert str(info.value) == message
    assert isinstance(info.value, InvalidUpdateError)  # the CLI's exit 2
    assert client.list_runs() == []


def test_a_custom_reducer_runs_once_more_at_enqueue_on_its_empty_value(
    client: Client, redis_url: str
) -> None:
    reducer_inputs.FOLDS.clear()
    run_id = client.enqueue("counted", {"numbers": 3})
    assert reducer_inputs.FOLDS == [([], 3)]
    assert client.get_run(run_id).input == {"numbers": 3}
    work(redis_url)
    assert reducer_inputs.FOLDS == [([], 3), ([], 3)]  # and once by the worker that applied the input
    assert client.get_run(run_id).result == {"numbers": [3], "note": "numbers=[3]"}


def test_the_check_leaves_the_callers_messages_as_given(client: Client, redis_url: str) -> None:
    given = HumanMessage("hi")
    run_id = client.enqueue("echo", {"messages": [given]}, thread_id="t1")
    assert given.id is None  # add_messages sets ids: it ran on a copy
    assert client.get_run(run_id).input == {"messages": [HumanMessage("hi")]}
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None
    assert [(m.type, m.content) for m in result["messages"]] == [("human", "hi"), ("ai", "1 in")]


def test_a_removal_of_a_message_of_the_thread_is_accepted(client: Client, redis_url: str) -> None:
    client.enqueue("echo", {"messages": [{"role": "user", "content": "hi", "id": "h1"}]}, thread_id="t1")
    work(redis_url)
    run_id = client.enqueue("echo", {"messages": [RemoveMessage(id="h1"), "again"]}, thread_id="t1")
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None
    assert [(m.type, m.content) for m in result["messages"]] == [
        ("ai", "1 in"),
        ("human", "again"),
        ("ai", "2 in"),
    ]


def test_enqueue_and_run_refuse_a_message_without_content_with_exit_2(redis_url: str) -> None:
    bad = '{"messages": [{"role": "user"}]}'
    refused = ok(graphq(redis_url, "enqueue", "echo", "--input", bad), 2)
    assert error_line(refused) == f"error: --input: input.messages: add_messages refused it: {NO_CONTENT}"
    refused = ok(graphq(redis_url, "run", "echo", "--input", bad), 2)
    assert error_line(refused) == f"error: --input: input.messages: add_messages refused it: {NO_CONTENT}"
    assert ok(graphq(redis_url, "runs", "list", "-o", "json")).stdout.strip() == "[]"
