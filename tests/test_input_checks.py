"""What the client refuses before anything is stored: inputs of the wrong type for the state schema (with
the path of the value), inputs and answers above GRAPHQ_MAX_INPUT_BYTES; the same through the CLI (exit 2,
one line), and `graphq run` refusing before it starts an embedded Redis."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner, Result

from graphcore.backend.client import Client
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.checkpoints import serde
from graphcore.engine.inputs import InputTooLargeError, InputTypeError
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, InvalidUpdateError, SerializationError
from graphcore.settings import Settings, load_settings
from graphq.cli.main import main
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import connect_client
from tests.cli_helpers import error_line, invoke, ok
from tests.workflows.typed import Color

WORKFLOWS = "tests.workflows.typed,tests.workflows.hitl"
REGISTRY = Registry.load(WORKFLOWS.split(","))


@pytest.fixture
def client(redis_url: str, redis_client: redis.Redis) -> Client:
    return connect_client(redis_url, registry=REGISTRY)


def work(url: str) -> None:
    run_worker(Settings(redis_url=url), burst=True, registry=REGISTRY)


def graphq(url: str, *args: str) -> Result:
    return invoke(WORKFLOWS, url, *args)


def limit_bytes(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setenv("GRAPHQ_MAX_INPUT_BYTES", str(limit))
    from graphcore.settings import get_settings

    get_settings.cache_clear()


# -- types -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"amount": "x"}, "input.amount: Input should be a valid integer (got 'x')"),
        ({"amount": "120"}, "input.amount: Input should be a valid integer (got '120')"),
        ({"amount": 1.5}, "input.amount: Input should be a valid integer (got 1.5)"),
        ({"ratio": "1.5"}, "input.ratio: Input should be a valid number (got '1.5')"),
        ({"flag": 1}, "input.flag: Input should be a valid boolean (got 1)"),
        ({"tags": ["a", 3]}, "input.tags[1]: Input should be a valid string (got 3)"),
        ({"tags": "a"}, "input.tags: Input should be a valid list (got 'a')"),
        ({"nested": {"k": [1, "x"]}}, "input.nested.k[1]: Input should be a valid integer (got 'x')"),
        ({"color": "blue"}, "input.color: Input should be 'red' or 'green' (got 'blue')"),
        ({"when": "soon"}, "input.when: Input should be a valid datetime, input is too short (got 'soon')"),
    ],
)
def test_an_input_of_the_wrong_type_is_refused_naming_its_path(
    client: Client, payload: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputTypeError) as info:
        client.enqueue("typed", payload)
    assert str(info.value) == message
    assert isinstance(info.value, InvalidUpdateError)  # the CLI's exit 2
    assert client.list_runs() == []


def test_a_valid_input_is_stored_as_given(client: Client, redis_url: str) -> None:
    payload = {"amount": 3, "ratio": 2, "flag": False, "tags": ["a"], "anything": [1]}
    run_id = client.enqueue("typed", payload)
    record = client.get_run(run_id)
    assert record.input == payload
    assert type(record.input["ratio"]) is int  # an int is a float, and is not turned into one
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None
    assert result["seen"] == "amount=int, anything=list, best=int, flag=bool, ratio=int, tags=list"
    # A reducer other than operator.add is not type-checked, but it folds the input onto its empty value.
    with pytest.raises(InputTypeError) as info:
        client.enqueue("typed", {"best": "x"})
    refusal = "max refused it: '>' not supported between instances of 'str' and 'int'"
    assert str(info.value) == f"input.best: {refusal}"
    assert client.get_run(client.enqueue("typed", {"best": 2.5})).input == {"best": 2.5}


def test_json_forms_of_datetimes_and_enums_are_stored_as_their_types(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("typed", {"when": "2024-05-01T12:00:00+02:00", "color": "red", "amount": 1})
    record = client.get_run(run_id)
    assert record.input == {
        "when": datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=2))),
        "color": Color.RED,
        "amount": 1,
    }
    work(redis_url)
    result = client.get_run(run_id).result
    assert (
        result is not None and result["seen"] == "amount=int, best=int, color=Color, tags=list, when=datetime"
    )


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"amount": "x"},
            "input.amount: Input should be a valid integer, unable to parse string as an integer (got 'x')",
        ),
        ({"currency": "euro"}, "input.currency: Value error, a currency is three letters (got 'euro')"),
    ],
)
def test_a_pydantic_state_validates_the_keys_an_input_sets(
    client: Client, payload: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputTypeError) as info:
        client.enqueue("priced", payload)
    assert str(info.value) == message


def test_a_pydantic_state_takes_a_partial_input_as_given(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("priced", {"amount": "12"})  # lax, like the model nodes receive
    assert client.get_run(run_id).input == {"amount": "12"}
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None and result["note"] == "12 EUR"


def test_check_refuses_like_enqueue(client: Client) -> None:
    from graphcore.backend.client import RunRequest, check_request

    request = RunRequest("typed", {"amount": "x"})
    with pytest.raises(InputTypeError, match=r"^input\.amount: "):
        check_request(REGISTRY, request)
    with pytest.raises(InputTypeError, match=r"^input\.amount: "):
        client.check(request)


# -- nesting ---------------------------------------------------------------------------------------------

DEEP = "nested more than 200 levels deep (lists, dicts, tuples or sets one inside another)"


def nested(levels: int) -> Any:
    """``levels`` lists one inside another around a 1 (``[[1]]`` is two)."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [201, 5000])
@pytest.mark.parametrize(
    ("workflow", "payload"),
    [
        ("typed", lambda v: {"anything": v}),  # Any: serde got it (a RecursionError from 1024 levels)
        ("typed", lambda v: {"nested": {"k": v}}),  # checked type: RecursionError in the error's repr
        ("typed", lambda v: {"tags": v}),  # operator.add reducer
        ("priced", lambda v: {"amount": v}),  # a pydantic-model state
        ("typed", lambda v: {"anything": {"k": (v,)}}),  # a tuple, inside a dict
    ],
    ids=["any", "typed", "reducer", "model", "tuple"],
)
def test_an_input_nested_too_deeply_is_refused(
    client: Client, workflow: str, payload: Any, levels: int
) -> None:
    """A deep input raised RecursionError (with its traceback) from the type checks; now one
    SerializationError, whatever the state's types, and nothing is stored."""
    with pytest.raises(SerializationError) as info:
        client.enqueue(workflow, payload(nested(levels)))
    assert str(info.value) == f"input: {DEEP}"
    assert client.list_runs() == []


def test_two_hundred_levels_are_stored_and_read_back(client: Client, redis_url: str) -> None:
    deepest = {"anything": nested(199)}  # the dict is the 200th level
    run_id = client.enqueue("typed", deepest)
    assert client.get_run(run_id).input == deepest
    work(redis_url)
    result = client.get_run(run_id).result
    assert result is not None and result["anything"] == nested(199)


def test_options_and_answers_nested_too_deeply_are_refused(client: Client, redis_url: str) -> None:
    with pytest.raises(SerializationError) as info:
        client.enqueue("typed", {"amount": 1}, config={"configurable": {"k": nested(199)}})
    assert str(info.value) == f"config: {DEEP}"
    run_id = client.enqueue("asking", {"topic": "tea"})
    work(redis_url)
    with pytest.raises(SerializationError) as info:
        client.answer(run_id, nested(201))
    assert str(info.value) == f"answer: {DEEP}"
    [request] = client.requests(run_id)
    client.answer(run_id, "yes")
    work(redis_url)
    with pytest.raises(SerializationError) as info:
        client.answer_again(run_id, request.id, nested(201))
    assert str(info.value) == f"answer: {DEEP}"
    assert len(client.list_runs()) == 1


def test_an_input_that_contains_itself_is_refused(client: Client) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SerializationError) as info:
        client.enqueue("typed", {"anything": [loop]})
    assert str(info.value) == "input: cyclic reference: the value contains itself"


# -- sizes -----------------------------------------------------------------------------------------------


def test_the_input_size_limit_defaults_to_one_mebibyte_and_is_at_least_one() -> None:
    assert Settings().max_input_bytes == 1_048_576


def test_a_zero_input_size_limit_fails_at_startup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_MAX_INPUT_BYTES", "0")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(info.value) == "GRAPHQ_MAX_INPUT_BYTES: must be 1 ≤ value (got '0')"


def test_an_input_above_the_limit_is_refused(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    limit_bytes(monkeypatch, 100)
    payload = {"topic": "t" * 200}
    size = len(serde.dumps(payload, path="input"))
    with pytest.raises(InputTooLargeError) as info:
        client.enqueue("asking", payload)
    assert str(info.value) == (
        f"input is {size} bytes serialized, above the limit GRAPHQ_MAX_INPUT_BYTES=100; pass a reference "
        "(a path, a URL, an id) to large data instead"
    )
    assert (info.value.size, info.value.limit) == (size, 100)
    assert client.list_runs() == []
    assert client.get_run(client.enqueue("asking", {"topic": "t" * 10})).input == {"topic": "t" * 10}


def test_an_answer_above_the_limit_is_refused(
    client: Client, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"})
    work(redis_url)
    limit_bytes(monkeypatch, 100)
    answer = "a" * 200
    size = len(serde.dumps(answer, path="answer"))
    with pytest.raises(InputTooLargeError, match=rf"^answer is {size} bytes serialized, above the limit "):
        client.answer(run_id, answer)
    assert client.get_run(run_id).status == "awaiting_input"
    [request] = client.requests(run_id)
    client.answer(run_id, "yes")
    work(redis_url)
    with pytest.raises(InputTooLargeError, match=r"^answer is \d+ bytes serialized, above the limit "):
        client.answer_again(run_id, request.id, answer)
    assert len(client.list_runs()) == 1


# -- through the CLI -------------------------------------------------------------------------------------


def test_enqueue_refuses_a_wrong_type_with_exit_2(redis_url: str) -> None:
    refused = ok(graphq(redis_url, "enqueue", "typed", "--input", '{"amount": "x"}'), 2)
    assert error_line(refused) == "error: --input: input.amount: Input should be a valid integer (got 'x')"
    assert json.loads(ok(graphq(redis_url, "runs", "list", "-o", "json")).stdout) == []


def test_a_batch_line_of_the_wrong_type_is_named_by_its_line(redis_url: str, tmp_path: Path) -> None:
    batch = tmp_path / "runs.jsonl"
    batch.write_text('{"input": {"amount": 1}}\n{"input": {"amount": 2, "color": "blue"}}\n')
    refused = ok(graphq(redis_url, "enqueue", "typed", "--input-file", str(batch)), 2)
    assert (
        error_line(refused) == f"error: {batch}:2: input.color: Input should be 'red' or 'green' (got 'blue')"
    )
    assert json.loads(ok(graphq(redis_url, "runs", "list", "-o", "json")).stdout) == []


def graphq_env(env: dict[str, str], url: str, *args: str) -> Result:
    """``graphq`` with these ``GRAPHQ_*`` variables set."""
    clean: dict[str, str | None] = {"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None, **env}
    argv = ["--redis-url", url, "--workflows", WORKFLOWS, *args]
    return CliRunner().invoke(main, argv, env=clean, catch_exceptions=False)


def test_inputs_and_answers_above_the_limit_exit_2(redis_url: str, tmp_path: Path) -> None:
    env = {"GRAPHQ_MAX_INPUT_BYTES": "64"}
    payload = {"topic": "t" * 100}
    size = len(serde.dumps(payload, path="input"))
    result = ok(graphq_env(env, redis_url, "enqueue", "asking", "--input", json.dumps(payload)), 2)
    too_large = (
        "bytes serialized, above the limit GRAPHQ_MAX_INPUT_BYTES=64; pass a reference (a path, a URL, "
    )
    too_large += "an id) "
    assert error_line(result) == f"error: --input: input is {size} {too_large}to large data instead"
    batch = tmp_path / "runs.jsonl"
    batch.write_text(json.dumps({"input": {"topic": "tea"}}) + "\n" + json.dumps({"input": payload}) + "\n")
    lines = ok(graphq_env(env, redis_url, "enqueue", "asking", "--input-file", str(batch)), 2)
    assert error_line(lines) == f"error: {batch}:2: input is {size} {too_large}to large data instead"
    assert json.loads(ok(graphq(redis_url, "runs", "list", "-o", "json")).stdout) == []
    run_id = ok(graphq(redis_url, "enqueue", "asking", "--input", '{"topic": "tea"}')).stdout.strip()
    work(redis_url)
    answer = "a" * 100
    refused = ok(graphq_env(env, redis_url, "runs", "answer", run_id, "--value", json.dumps(answer)), 2)
    answer_size = len(serde.dumps(answer, path="answer"))
    assert error_line(refused) == f"error: --value: answer is {answer_size} {too_large}to large data instead"


def local(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """``graphq`` without a Redis URL, local data in tmp_path/data."""
    clean: dict[str, str | None] = {
        "GRAPHQ_REDIS_URL": None,
        "GRAPHQ_WORKFLOWS": None,
        "GRAPHQ_DATA_DIR": str(tmp_path / "data"),
        **(env or {}),
    }
    return CliRunner().invoke(main, ["--workflows", WORKFLOWS, *args], env=clean, catch_exceptions=False)


@pytest.mark.parametrize(
    ("payload", "env", "message"),
    [
        ('{"amount": "x"}', {}, "error: --input: input.amount: Input should be a valid integer (got 'x')"),
        (
            '{"nope": 1}',
            {},
            "error: --input: the input has unknown state key(s) ['nope']; known keys: ['amount', "
            "'ratio', 'flag', 'when', 'color', 'nested', 'tags', 'best', 'anything', 'seen']",
        ),
        (
            '{"amount": 1}',
            {"GRAPHQ_MAX_INPUT_BYTES": "5"},
            "error: --input: input is 10 bytes serialized, above the limit GRAPHQ_MAX_INPUT_BYTES=5; pass a "
            "reference (a path, a URL, an id) to large data instead",
        ),
    ],
)
def test_run_refuses_a_bad_input_before_starting_an_embedded_redis(
    tmp_path: Path, payload: str, env: dict[str, str], message: str
) -> None:
    result = local(tmp_path, "run", "typed", "--input", payload, env=env)
    assert result.exit_code == 2
    assert error_line(result) == message
    assert "redis:" not in result.stderr  # no server line: none was started
    assert not (tmp_path / "data").exists()


def test_answer_refuses_a_too_large_value_before_starting_an_embedded_redis(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    result = local(
        tmp_path, "runs", "answer", "f" * 32, "--value", '"abcdef"', env={"GRAPHQ_MAX_INPUT_BYTES": "5"}
    )
    assert result.exit_code == 2
    assert error_line(result).startswith("error: --value: answer is 8 bytes serialized, above the limit ")
    assert list((tmp_path / "data").iterdir()) == []  # no server ran on the local data


# -- Redis URLs and passwords through the CLI -------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "variable", "name"),
    [([], "hunter2-secret", "GRAPHQ_REDIS_URL"), (["--redis-url", "hunter2-secret"], None, "--redis-url")],
    ids=["variable", "option"],  # the option's value was reported as GRAPHQ_REDIS_URL's
)
def test_a_redis_url_that_is_no_url_is_never_echoed(
    tmp_path: Path, option: list[str], variable: str | None, name: str
) -> None:
    for args in (("runs", "list"), ("run", "typed"), ("worker", "--burst")):
        result = CliRunner().invoke(
            main,
            [*option, "--workflows", WORKFLOWS, *args],
            env={"GRAPHQ_REDIS_URL": variable, "GRAPHQ_DATA_DIR": str(tmp_path / "d")},
            catch_exceptions=False,
        )
        assert result.exit_code == 2, args
        assert error_line(result) == (
            f"error: {name} is not a redis:// URL (its value is not shown: it may hold a secret); "
            "expected redis://[[user]:password@]host[:port][/db], rediss://... or unix:///path/to/socket"
        )
        assert "hunter2" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("url", "line"),
    [
        (
            "redis://127.0.0.1:notaport/0",
            "error: --redis-url=redis://127.0.0.1:notaport/0 is not a valid Redis URL (Port could not be "
            "cast to integer value as 'notaport'); expected redis://[[user]:password@]host[:port][/db], "
            "rediss://... or unix:///path/to/socket",
        ),
        (  # was accepted: redis-py ignores the path and the run went to db 0
            "redis://:s3cret@127.0.0.1:6379/abc",
            "error: --redis-url=redis://:***@127.0.0.1:6379/abc: its path 'abc' is not a database number; "
            "expected redis://[[user]:password@]host[:port][/db], rediss://... or unix:///path/to/socket",
        ),
    ],
)
def test_a_malformed_redis_url_option_is_named_as_the_option(tmp_path: Path, url: str, line: str) -> None:
    """A malformed --redis-url was reported as GRAPHQ_REDIS_URL=...; nothing is enqueued."""
    result = CliRunner().invoke(
        main,
        ["--redis-url", url, "--workflows", WORKFLOWS, "enqueue", "typed", "--input", "{}"],
        env={"GRAPHQ_REDIS_URL": None, "GRAPHQ_DATA_DIR": str(tmp_path / "d")},
        catch_exceptions=False,
    )
    assert (result.exit_code, error_line(result)) == (2, line)
    assert "s3cret" not in result.stdout + result.stderr


def test_a_server_that_needs_a_password_says_so() -> None:
    server = EmbeddedRedis(appendonly=False, extra_args=["--requirepass", "s3cret-pw"]).start()
    try:
        url = f"redis://127.0.0.1:{server.port}/0"
        missing = graphq(url, "runs", "list")
        assert missing.exit_code == 1
        assert error_line(missing) == (
            f"error: Redis at {url} needs a password: give it in the URL, redis://:PASSWORD@HOST:PORT/DB (or "
            "redis://USER:PASSWORD@... for an ACL user)"
        )
        wrong = graphq(f"redis://:nope@127.0.0.1:{server.port}/0", "runs", "list")
        assert wrong.exit_code == 1
        assert error_line(wrong) == (
            f"error: Redis at redis://:***@127.0.0.1:{server.port}/0 refused the password in the URL "
            "(authentication failed: a wrong password, or a user it does not know)"
        )
        assert "nope" not in wrong.stderr
    finally:
        server.stop()
