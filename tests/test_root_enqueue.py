"""Root-channel state and run options on the queue: ``graphq state`` and ``graphq runs
watch`` show a root-channel state's value (never graphq's channel name ``__root__``); enqueue refuses what a
worker would fail on: an input of the wrong type for a root-channel state, a ``checkpoint_id`` the thread
lacks, a ``run_id`` in the config; each ``--config`` error names ``--config``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from click.testing import Result

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.inputs import InputTypeError
from graphcore.engine.registry import Registry
from graphcore.errors import CheckpointNotFoundError, ConfigError
from tests.cli_helpers import error_line, invoke, ok
from tests.workers import Start, work, worker_env
from tests.workflows import root_join, schemas

WORKFLOWS = "tests.workflows.root_join"
REGISTRY = Registry({g.name: g for g in (root_join.root_join, schemas.root_int)})
FINAL = ["x", "r1", 1, "r3", 1]
KNOWN = (  # the queue's options: no run_id, no checkpoint_ns (tests/test_option_lists.py)
    "['callbacks', 'checkpoint_id', 'configurable', 'context', 'durability', "
    "'max_concurrency', 'max_concurrent_runs', 'max_concurrent_runs_per_tenant', 'max_super_steps', "
    "'metadata', 'recursion_limit', 'request_timeout_s', 'resume_if_exists', 'run_name', "
    "'run_timeout_s', 'shard_min_tasks', 'stream_mode', 'tags', 'thread_id', 'thread_ttl_s', "
    "'version_policy', 'webhook']"
)


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    """Environment of the worker subprocess: the test Redis and the root-join workflow."""
    return worker_env(redis_url, WORKFLOWS)


def graphq(url: str, *args: str) -> Result:
    return invoke(WORKFLOWS, url, *args)


def refused(url: str, *args: str) -> str:
    """The one error line of ``graphq ARGS`` exiting 2."""
    return error_line(ok(graphq(url, *args), 2))


def test_a_root_states_thread_shows_the_value(client: Client, start: Start, redis_url: str) -> None:
    """On a worker subprocess: the run's result, ``graphq state`` (table and JSON) and the ``checkpoints``
    and ``values`` lines of ``graphq runs watch`` hold the list itself; a fork from a checkpoint named in
    the config (LangGraph's ``configurable.checkpoint_id``) runs from there."""
    start()
    run_id = client.enqueue("root-join", ["x"], thread_id="rt1")
    [run] = client.wait([run_id], timeout_s=30)
    assert (run.status, run.result) == (RunStatus.COMPLETED, FINAL)
    assert json.loads(ok(graphq(redis_url, "state", "rt1")).stdout) == FINAL
    shown = json.loads(ok(graphq(redis_url, "state", "rt1", "-o", "json")).stdout)
    assert shown["values"] == FINAL
    watched = ok(
        graphq(redis_url, "runs", "watch", run_id, "-o", "json", "-m", "checkpoints", "-m", "values")
    )
    lines = [json.loads(line) for line in watched.stdout.splitlines()]
    checkpoints = [e["data"]["values"] for e in lines if e["mode"] == "checkpoints"]
    assert checkpoints == [[], ["x"], ["x", "r1", 1], FINAL]  # the input checkpoint's first (LangGraph's)
    assert [e["data"] for e in lines if e["mode"] == "values"] == checkpoints[1:]
    first = client.get_history("rt1")[-1].id  # the input checkpoint: r1 and r2 next
    config = {"configurable": {"thread_id": "rt1", "checkpoint_id": first}}
    [fork] = client.wait([client.enqueue("root-join", None, config=config)], timeout_s=30)
    assert (fork.status, fork.result) == (RunStatus.COMPLETED, FINAL)


def test_a_root_state_reads_without_the_workflows_code(client: Client) -> None:
    """A process without the workflow's code shows a root-channel state's value too."""
    run_id = client.enqueue("root-join", ["x"], thread_id="rt2")
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    bare = Client(client.kv, Registry({}))
    assert bare.shown_values("rt2", bare.get_state("rt2")) == FINAL


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{"a": 1}', "error: --input: input: Input should be a valid list (got {'a': 1})"),
        ('"str"', "error: --input: input: Input should be a valid list (got 'str')"),
        (None, "error: --input: input: Input should be a valid list (got {})"),
    ],
    ids=["dict", "str", "none"],
)
def test_a_wrong_root_input_is_refused_at_enqueue(
    client: Client, redis_url: str, text: str | None, line: str
) -> None:
    """An ``operator.add`` root channel takes a list: anything else is refused before it is stored (the
    worker's reducer would fail the run with a TypeError)."""
    args = ("--input", text) if text is not None else ()
    assert refused(redis_url, "enqueue", "root-join", *args) == line
    assert client.list_runs() == []


@pytest.mark.parametrize(
    ("workflow", "value", "message"),
    [
        ("root-join", {"a": 1}, "input: Input should be a valid list (got {'a': 1})"),
        ("root-int", "x", "input: Input should be a valid integer (got 'x')"),
        ("root-int", True, "input: Input should be a valid integer (got True)"),
    ],
)
def test_the_client_refuses_a_wrong_root_input(
    client: Client, workflow: str, value: Any, message: str
) -> None:
    """``client.enqueue`` checks a root-channel state's input whole, strictly, as a TypedDict key's."""
    with pytest.raises(InputTypeError) as caught:
        client.enqueue(workflow, value)
    assert (str(caught.value), caught.value.path) == (message, "input")
    assert client.list_runs() == []


def test_a_checkpoint_id_in_the_config_must_exist(client: Client, redis_url: str) -> None:
    """``checkpoint_id`` is checked however it is given: ``--checkpoint``, ``--config`` and
    ``client.enqueue(config=...)`` refuse one the thread lacks; nothing is stored."""
    config = '{"configurable": {"thread_id": "rt9", "checkpoint_id": "nope"}}'
    message = "thread 'rt9' has no checkpoint nope"
    assert (
        refused(redis_url, "enqueue", "root-join", "-i", '["x"]', "--config", config)
        == f"error: --config: {message}"
    )
    assert refused(redis_url, "enqueue", "root-join", "-i", '["x"]', "-t", "rt9", "-c", "nope") == (
        f"error: --checkpoint: {message}"
    )
    with pytest.raises(CheckpointNotFoundError, match=f"^{message}$"):
        client.enqueue("root-join", ["x"], config=json.loads(config))
    with pytest.raises(CheckpointNotFoundError, match=f"^{message}$"):
        client.enqueue("root-join", ["x"], thread_id="rt9", config={"checkpoint_id": "nope"})
    assert client.list_runs() == []


RUN_ID = "0b4f1c5e-9d2a-4c41-8f53-2a7d6c1e9b00"


def test_a_run_id_in_the_config_is_refused(client: Client, redis_url: str) -> None:
    """The queue names each run: a ``run_id`` option (LangGraph's config key) is refused, naming it."""
    message = (
        f"run option run_id '{RUN_ID}': the queue names each run itself (client.enqueue returns the id, "
        "graphq enqueue prints it); give none"
    )
    line = refused(
        redis_url, "enqueue", "root-join", "-i", '["x"]', "--config", json.dumps({"run_id": RUN_ID})
    )
    assert line == f"error: --config: {message}"
    with pytest.raises(ConfigError) as caught:
        client.enqueue("root-join", ["x"], config={"run_id": uuid.UUID(RUN_ID)})
    assert str(caught.value) == message
    assert client.list_runs() == []


def test_an_unknown_durability_is_refused_at_enqueue(client: Client, redis_url: str) -> None:
    """In process an unknown durability acts as "async" (LangGraph's); the queue refuses it at enqueue,
    naming the option and the values it takes."""
    message = "run option durability: Input should be 'sync', 'async' or 'exit' (got 'bogus')"
    line = refused(redis_url, "enqueue", "root-join", "-i", '["x"]', "--config", '{"durability": "bogus"}')
    assert line == f"error: --config: {message}"
    with pytest.raises(ConfigError) as caught:
        client.enqueue("root-join", ["x"], config={"durability": "bogus"})
    assert str(caught.value) == message
    assert client.list_runs() == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--config", '{"bogus": 1}'), f"error: --config: unknown run option(s) ['bogus']; known: {KNOWN}"),
        (
            ("--config", '{"recursion_limit": 0}'),
            "error: --config: run option recursion_limit: must be an integer ≥ 1 (LangGraph's "
            "recursion_limit R allows R - 1 super-steps, graphq's max_super_steps) (got 0)",
        ),
        (
            ("--config", '{"run_timeout_s": 1e9}'),
            "error: --config: run_timeout_s=1000000000.0 is above the GRAPHQ_MAX_RUN_TIMEOUT_S=604800.0",
        ),
        (
            ("-t", "TA", "--config", '{"configurable": {"thread_id": "TB"}}'),
            "error: --config: the config's thread_id 'TB' differs from thread_id 'TA'; give one of them",
        ),
        (
            ("-t", "rt9", "-c", "nope", "--config", '{"tags": ["a"]}'),
            "error: --checkpoint: thread 'rt9' has no checkpoint nope",
        ),
        (  # --checkpoint won without a word
            ("-t", "rt9", "-c", "c1", "--config", '{"configurable": {"checkpoint_id": "c2"}}'),
            "error: --config: checkpoint_id 'c2' differs from --checkpoint 'c1'; give one of them",
        ),
    ],
    ids=["unknown", "recursion-limit", "timeout", "thread-clash", "fork", "checkpoint-clash"],
)
def test_a_config_error_names_config(
    client: Client, redis_url: str, args: tuple[str, ...], line: str
) -> None:
    """An error of the run options names ``--config`` (with ``--checkpoint`` for a fork), not ``--input``."""
    assert refused(redis_url, "enqueue", "root-join", "-i", '["x"]', *args) == line
    assert client.list_runs() == []


def test_an_input_error_with_a_config_names_the_input(client: Client, redis_url: str) -> None:
    """A bad input next to a good ``--config`` names ``--input`` only."""
    line = refused(redis_url, "enqueue", "root-join", "-i", '{"a": 1}', "--config", '{"tags": ["a"]}')
    assert line == "error: --input: input: Input should be a valid list (got {'a': 1})"
