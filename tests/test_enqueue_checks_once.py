"""A run request is checked once, by the client, from ``graphq enqueue``/``graphq run``/``Client.enqueue``
to the MULTI that creates the run: its options are parsed once, a fork's Redis reads are made
once, and an error names the request's field at fault (``param``), which the CLI turns into its option."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import graphcore.backend.client as client_module
from graphcore import keys
from graphcore.backend.client import Client, RunRequest
from graphcore.engine.registry import Registry
from graphcore.errors import CheckpointNotFoundError, ConfigError, InvalidUpdateError, PermanentError
from graphcore.types import Command
from tests.cli_helpers import error_line, invoke, ok, process_state_restored

WORKFLOWS = "tests.workflows.basic"
REGISTRY = Registry.load([WORKFLOWS])


def graphq(url: str, *args: str) -> Any:
    with process_state_restored():  # `graphq run` works in this process (RQ's signal handlers)
        return invoke(WORKFLOWS, url, *args)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every parse of a request's run options by the client (``queue_config``, the heart of its options
    check), one item each."""
    calls: list[object] = []
    parse = client_module.queue_config

    def counted(config: Any) -> Any:
        calls.append(config)
        return parse(config)

    monkeypatch.setattr(client_module, "queue_config", counted)
    yield calls


def finished_thread(url: str, thread: str) -> str:
    """Run ``counter`` to its end on ``thread`` here; returns the thread's head checkpoint id."""
    ok(graphq(url, "run", "counter", "--thread", thread, "--input", '{"limit": 1}'))
    head = json.loads(ok(graphq(url, "state", thread, "-o", "json")).stdout)
    return str(head["checkpoint_id"])


def test_graphq_enqueue_checks_each_run_once(redis_url: str, tmp_path: Path, parses: list[object]) -> None:
    ok(graphq(redis_url, "enqueue", "counter", "--input", '{"limit": 1}', "--config", '{"tags": ["a"]}'))
    assert parses == [{"tags": ["a"]}]  # was 4: the CLI's two checks, its fork check, enqueue_many's
    parses.clear()
    batch = tmp_path / "runs.jsonl"
    batch.write_text("".join(f'{{"input": {{"limit": {n}}}}}\n' for n in (1, 2, 3)))
    ok(graphq(redis_url, "enqueue", "counter", "--input-file", str(batch)))
    assert len(parses) == 3  # was 12


def test_graphq_run_checks_its_run_once(redis_url: str, parses: list[object]) -> None:
    ok(graphq(redis_url, "run", "counter", "--input", '{"limit": 1}'))
    assert parses == [{}]  # was 2: the CLI's check, enqueue_many's


def test_a_command_input_is_checked_once(client: Client, redis_url: str, parses: list[object]) -> None:
    finished_thread(redis_url, "t-cmd")
    parses.clear()
    run_id = client.enqueue("counter", Command(update={"limit": 2}), thread_id="t-cmd")
    assert parses == [{}]  # was 2: the command's own check, enqueue_many's
    assert client.get_run(run_id).thread_id == "t-cmd"


def test_a_fork_reads_the_workers_settings_once(redis_url: str, redis_client: redis.Redis) -> None:
    """The fork check's reads (is history kept by every worker; the checkpoint) are made once: the workers'
    published settings are one ZRANGE of the workers index, nothing else of an enqueue reads it."""
    checkpoint = finished_thread(redis_url, "t-fork")
    redis_client.config_resetstat()
    run_id = ok(graphq(redis_url, "enqueue", "counter", "--thread", "t-fork", "--checkpoint", checkpoint))
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in redis_client.info("commandstats").items()}
    assert calls["zrange"] == 1  # was 2: the CLI's fork check, then enqueue_many's
    record = json.loads(ok(graphq(redis_url, "runs", "show", run_id.stdout.strip(), "-o", "json")).stdout)
    assert record["config"]["checkpoint_id"] == checkpoint


@pytest.mark.parametrize(
    ("options", "error", "param", "message"),
    [
        ({"thread_id": "a b"}, ConfigError, "thread_id", "thread id 'a b' is invalid"),
        ({"tenant": "a:b"}, ConfigError, "tenant", "tenant 'a:b' is invalid"),
        ({"config": {"configurable": {"thread_id": "a b"}}}, ConfigError, "config", "thread id 'a b'"),
        (
            {"thread_id": "a", "config": {"configurable": {"thread_id": "b"}}},
            ConfigError,
            "config",
            "the config's thread_id 'b' differs from thread_id 'a'; give one of them",
        ),
        ({"config": {"bogus": 1}}, ConfigError, "config", "unknown run option(s) ['bogus']"),
        ({"run_id": "a b"}, ConfigError, "run_id", "run id 'a b' is invalid"),
        # a run id names its RQ step jobs, and RQ refuses a job id with '.': the worker that met one quit
        (
            {"run_id": "x.y"},
            ConfigError,
            "run_id",
            "run id 'x.y' is invalid: use letters, digits, '_' and '-'",
        ),
        (
            {"run_id": "a/b"},
            ConfigError,
            "run_id",
            "run id 'a/b' is invalid: use letters, digits, '_' and '-'",
        ),
        ({"input": {"limt": 1}}, InvalidUpdateError, "input", "unknown state key(s) ['limt']"),
        ({"workflow": "nope"}, PermanentError, "workflow", "nope"),
        (
            {"thread_id": "t-none", "config": {"checkpoint_id": "c1"}},
            CheckpointNotFoundError,
            "checkpoint_id",
            "thread 't-none' has no checkpoint c1",
        ),
    ],
    ids=[
        "thread",
        "tenant",
        "config-thread",
        "thread-clash",
        "config",
        "run-id",
        "run-id-dot",
        "run-id-slash",
        "input",
        "workflow",
        "fork",
    ],
)
def test_an_error_names_the_field_at_fault(
    client: Client, options: dict[str, Any], error: type[PermanentError], param: str, message: str
) -> None:
    """``Client.enqueue`` called directly checks everything itself; its error carries the field."""
    fields = {"workflow": "counter", "input": {"limit": 1}, **options}
    with pytest.raises(error) as caught:
        client.enqueue_many([RunRequest(**fields)])
    assert (caught.value.param, message in str(caught.value)) == (param, True)
    assert client.list_runs() == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--thread", "a b"), "error: --thread: thread id 'a b' is invalid"),
        (("--tenant", "a:b"), "error: --tenant: tenant 'a:b' is invalid"),
        (
            ("--config", '{"configurable": {"thread_id": "a b"}}'),
            "error: --config: thread id 'a b' is invalid",
        ),
        (
            ("--thread", "t-none", "--checkpoint", "c1"),
            "error: --checkpoint: thread 't-none' has no checkpoint c1",
        ),
        (
            ("--config", '{"configurable": {"thread_id": "t-none", "checkpoint_id": "c1"}}'),
            "error: --config: thread 't-none' has no checkpoint c1",
        ),
        (
            (
                "--input",
                '{"limt": 1}',
            ),
            "error: --input: the input has unknown state key(s) ['limt']",
        ),
        (("--thread", ""), "error: --thread: thread id '' is invalid"),  # was a new thread, silently
        (("--config", '{"configurable": {"thread_id": ""}}'), "error: --config: thread id '' is invalid"),
        (  # named a made-up thread: "thread '7ccea69b...' has no checkpoint nope"
            ("--config", '{"configurable": {"checkpoint_id": "nope"}}'),
            "error: --config: checkpoint_id 'nope' needs its thread's thread_id",
        ),
    ],
    ids=[
        "thread",
        "tenant",
        "config-thread",
        "checkpoint",
        "config-checkpoint",
        "input",
        "empty-thread",
        "empty-config-thread",
        "checkpoint-without-thread",
    ],
)
def test_graphq_enqueue_names_the_option_at_fault(
    redis_url: str, redis_client: redis.Redis, args: tuple[str, ...], line: str
) -> None:
    """The CLI maps the client's ``param`` to its option (one table, ``graphq.cli.inputs.OPTIONS_OF``)."""
    refused = graphq(redis_url, "enqueue", "counter", *args)
    assert refused.exit_code == 2
    assert error_line(refused).startswith(line)
    assert redis_client.zcard(keys.runs_index()) == 0


def test_a_checked_request_enqueued_twice_makes_two_runs(client: Client, redis_client: redis.Redis) -> None:
    """A ValidRun enqueued again (a retry after a lost reply) is a second run under a new id and thread, as a
    RunRequest enqueued again is: it used to keep its checked id and write over the first run's record (its
    status back to queued, its step-0 job enqueued again). Both are created when enqueued, not when
    checked."""
    valid = client_module.check_request(REGISTRY, RunRequest("counter", {"limit": 1}))
    [first] = client.enqueue_many([valid])
    redis_client.hset(keys.run(first, first), "status", "completed")  # the first run ended meanwhile
    [second] = client.enqueue_many([valid])
    assert len({valid.record.id, first, second}) == 3
    runs = [client.get_run(first), client.get_run(second)]
    assert [(r.status.value, r.thread_id) for r in runs] == [("completed", first), ("queued", second)]
    assert all(r.created_at >= valid.record.created_at for r in runs)
    named = client_module.check_request(REGISTRY, RunRequest("counter", {"limit": 1}, run_id="chosen"))
    assert client.enqueue_many([named]) == ["chosen"]
    with pytest.raises(client_module.RunExistsError):
        client.enqueue_many([named])  # a chosen id that names a run is refused, as before


def test_a_batch_names_the_line_and_the_option_at_fault(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """A batch line whose thread clashes with --config's is named with the option (the line's path:LINE was
    dropped), and a malformed --thread is refused even when every line names its own thread (it was let
    through)."""
    batch = tmp_path / "runs.jsonl"
    batch.write_text('{"input": {"limit": 1}}\n{"input": {"limit": 1}, "thread": "tb"}\n')
    config = '{"configurable": {"thread_id": "ta"}}'
    refused = graphq(redis_url, "enqueue", "counter", "--input-file", str(batch), "--config", config)
    assert refused.exit_code == 2
    clash = "the config's thread_id 'ta' differs from thread_id 'tb'; give one of them"
    assert error_line(refused) == f"error: {batch}:2: --config: {clash}"
    batch.write_text('{"input": {"limit": 1}, "thread": "tb"}\n')
    refused = graphq(redis_url, "enqueue", "counter", "--input-file", str(batch), "--thread", "a b")
    assert refused.exit_code == 2
    assert error_line(refused).startswith("error: --thread: thread id 'a b' is invalid: use 1-200 characters")
    assert redis_client.zcard(keys.runs_index()) == 0
