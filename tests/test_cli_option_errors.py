"""Bad options name themselves, and a data directory that cannot be made is a one-line error (found by a
fresh-user trial)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from graphq.cli.bounds import FiniteFloatRange
from graphq.cli.main import main
from tests.cli_helpers import error_line, invoke

APPROVAL = '{"amount": 1, "requester": "a"}'
ID_RULE = (
    "is invalid: use 1-200 characters without braces, brackets, ':', '*', '?', spaces or control characters"
)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--tenant", ""], f"error: --tenant: tenant '' {ID_RULE}"),
        (["--thread", "a b"], f"error: --thread: thread id 'a b' {ID_RULE}"),
        (["--tenant", "a\x01b"], f"error: --tenant: tenant 'a\\x01b' {ID_RULE}"),
        (["--thread", "x" * 201], f"error: --thread: thread id '{'x' * 201}' {ID_RULE}"),
    ],
)
def test_enqueue_and_run_name_the_bad_option(redis_url: str, args: list[str], line: str) -> None:
    for command in ("enqueue", "run"):
        result = invoke(
            "graphq.examples.approval", redis_url, command, "approval", "--input", APPROVAL, *args
        )
        assert result.exit_code == 2
        assert error_line(result) == line


def test_a_data_dir_that_cannot_be_made_is_a_one_line_error(tmp_path: Path) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("x")
    result = CliRunner().invoke(
        main,
        ["run", "approval", "--input", APPROVAL],
        env={"GRAPHQ_REDIS_URL": None, "GRAPHQ_DATA_DIR": str(taken)},
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert (
        error_line(result) == f"error: GRAPHQ_DATA_DIR: cannot use {taken} as the data directory: File exists"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"amount": NaN, "requester": "a"}', "NaN is not a JSON number (JSON has no NaN or Infinity)"),
        (
            '{"amount": -Infinity, "requester": "a"}',
            "-Infinity is not a JSON number (JSON has no NaN or Infinity)",
        ),
        ('{"amount": 1e400, "requester": "a"}', "number 1e400 is out of range for a float"),
    ],
)
def test_json_without_nan_or_infinity(redis_url: str, text: str, reason: str) -> None:
    result = invoke("graphq.examples.approval", redis_url, "enqueue", "approval", "--input", text)
    assert result.exit_code == 2
    assert error_line(result) == f"error: --input: {reason}"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["runs", "list", "-n", "0"],
            "error: graphq runs list: Invalid value for '--limit' / '-n': 0 is not in the range "
            "1<=x<=100000 (see graphq runs list --help)",
        ),
        (
            ["runs", "answer", "abc"],
            "error: graphq runs answer: Missing option '--value' (see graphq runs answer --help)",
        ),
        (["nosuch"], "error: graphq: No such command 'nosuch' (see graphq --help)"),
        (  # used the local data without a word ("--redis-url $URL" with URL unset)
            ["--redis-url", "", "runs", "list"],
            "error: --redis-url is empty: give a redis:// URL, or leave the option out to use the local data",
        ),
        (  # was accepted and ignored
            ["state", "t", "-n", "2"],
            "error: graphq state: --limit goes with --history (one checkpoint is shown without it) (see "
            "graphq state --help)",
        ),
        (  # was accepted and ignored
            ["enqueue", "counter", "--timeout", "5"],
            "error: graphq enqueue: --timeout needs --wait (it bounds the wait) (see graphq enqueue --help)",
        ),
        (
            ["--bogus"],  # click's usage, hint and error lines
            "error: graphq: No such option '--bogus'. Did you mean '--verbose'? (see graphq --help)",
        ),
        (  # was "No such option '--redis-url'": a global option given after the command
            ["enqueue", "counter", "--redis-url", "redis://h:6379/0"],
            "error: graphq enqueue: --redis-url is an option of graphq itself: put it before the command "
            "(graphq --redis-url ... enqueue ...)",
        ),
        (
            ["runs", "list", "--workflows", "m"],
            "error: graphq runs list: --workflows is an option of graphq itself: put it before the command "
            "(graphq --workflows ... runs list ...)",
        ),
    ],
)
def test_usage_errors_are_one_line(args: list[str], line: str) -> None:
    result = CliRunner().invoke(
        main, args, prog_name="graphq", env={"GRAPHQ_REDIS_URL": None}, catch_exceptions=False
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == line


@pytest.mark.parametrize("group", [[], ["runs"], ["schedules"]])
def test_a_group_without_its_command_shows_its_help(group: list[str]) -> None:
    """``graphq runs`` printed its help after "error: graphq runs: Usage: ..."; now as click does, exit 2."""
    result = CliRunner().invoke(main, group, prog_name="graphq", env={"GRAPHQ_REDIS_URL": None})
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Usage: {' '.join(['graphq', *group])} [OPTIONS] COMMAND [ARGS]...\n")
    assert "error:" not in result.stderr


def test_runs_list_refuses_a_tenant_no_run_can_have(redis_url: str) -> None:
    result = invoke("graphq.examples.approval", redis_url, "runs", "list", "--tenant", "a b")
    assert result.exit_code == 2
    assert error_line(result) == f"error: --tenant: tenant 'a b' {ID_RULE}"


NO_URL = "error: no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url"
ADD = ["schedules", "add", "s", "--workflow", "counter", "--cron"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["enqueue", "counter", "--input", "[1]"],
            "error: --input: the input is a list; expected a dict of state updates",
        ),
        (
            ["enqueue", "counter", "--input", '{"n": "x"}'],
            "error: --input: input.n: Input should be a valid integer (got 'x')",
        ),
        (
            [*ADD, "5-1 * * * *"],
            "error: cron expression '5-1 * * * *': minute field: range '5-1' is reversed: 5 is after 1",
        ),
        ([*ADD, "61 * * * *"], "error: cron expression '61 * * * *': minute field: 61 is out of range 0-59"),
        (
            [*ADD, "* * * * *", "--input", "[1]"],
            "error: --input: the input is a list; expected a dict of state updates",
        ),
        (
            [*ADD, "* * * * *", "--jitter", "1m"],
            "error: schedule s: --jitter 60 s is not below the shortest time between its fires, 60 s "
            "('* * * * *' in UTC): a fire could start after the next one",
        ),
        (
            ["schedules", "update", "s", "--cron", "0 0 * * FRI-MON"],
            "error: cron expression '0 0 * * FRI-MON': day-of-week field: range 'FRI-MON' is reversed: "
            "FRI is after MON",
        ),
        (
            ["schedules", "update", "s", "--jitter", "5x"],
            "error: --jitter '5x' is invalid: use a number and a unit s, m, h or d (e.g. 90s, 5m, 2h); 0 (no "
            "unit needed) for none",
        ),
        (
            ["schedules", "update", "s", "--start", "tomorrow"],
            "error: --start 'tomorrow' is invalid: use ISO-8601, e.g. 2026-09-10T07:00 or ...+07:00",
        ),
        (
            ["enqueue", "counter", "-t", "t", "--checkpoint", "c1", "--input", "[1]"],  # said --checkpoint:
            "error: --input: the input is a list; expected a dict of state updates",
        ),
        (
            ["schedules", "update", "s"],  # exited 0 (after connecting to Redis) having changed nothing
            "error: schedules update 's': nothing to change: give at least one option (see --help)",
        ),
        (["enqueue", "counter", "--input", '{"n": 1}'], NO_URL),  # good input: now Redis is needed
        ([*ADD, "* * * * *"], NO_URL),
        (["schedules", "update", "s", "--start", "2030-01-01"], NO_URL),  # read in the stored schedule's zone
    ],
)
def test_without_a_redis_url_a_bad_input_is_reported_first(args: list[str], line: str) -> None:
    """Input checked without Redis is checked before the connection: a new user without GRAPHQ_REDIS_URL
    was told "no Redis URL" for a non-object --input or a bad --cron."""
    result = CliRunner().invoke(
        main,
        ["--workflows", "tests.workflows.basic", *args],
        env={"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None},
        catch_exceptions=False,
    )
    assert (result.exit_code, result.stderr) == (2, line + "\n")


DEEP = "nested more than 200 levels deep (lists, dicts, tuples or sets one inside another)"


@pytest.mark.parametrize("levels", [201, 1000, 100_000])
@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["enqueue", "counter", "--input", "{JSON}"], "--input"),
        (["enqueue", "counter", "--input", "@{FILE}"], "--input: {FILE}"),
        (["enqueue", "counter", "--config", "{JSON}"], "--config"),
        (["enqueue", "counter", "--input-file", "{LINES}"], "{LINES}:2"),
        (["run", "counter", "--input", "{JSON}"], "--input"),
        (["runs", "answer", "r1", "--value", "{JSON}"], "--value"),
        ([*ADD, "* * * * *", "--input", "{JSON}"], "--input"),
    ],
    ids=["input", "input-file-at", "config", "input-file", "run", "answer", "schedule"],
)
def test_json_nested_too_deeply_is_one_line(tmp_path: Path, args: list[str], where: str, levels: int) -> None:
    """1000 nested brackets were a RecursionError traceback (exit 1). Now every option that reads JSON
    refuses more than 200 levels, as the client does: exit 2, one line."""
    text = '{"n": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"
    files = {"{FILE}": tmp_path / "input.json", "{LINES}": tmp_path / "runs.jsonl"}
    files["{FILE}"].write_text(text)
    files["{LINES}"].write_text('{"input": {"n": 1}}\n{"input": ' + text + "}\n")

    def filled(arg: str) -> str:
        for mark, path in files.items():
            arg = arg.replace(mark, str(path))
        return arg.replace("{JSON}", text)

    result = CliRunner().invoke(
        main,
        ["--workflows", "tests.workflows.basic", *map(filled, args)],
        env={"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None, "GRAPHQ_DATA_DIR": str(tmp_path / "data")},
        catch_exceptions=False,
    )
    assert (result.exit_code, result.stderr) == (2, f"error: {filled(where)}: {DEEP}\n")


def test_json_of_two_hundred_levels_is_read(tmp_path: Path) -> None:
    """The deepest input taken: 200 levels, also in a batch file's line (whose object is one more); checked,
    it is Redis that is missing."""
    text = '{"answer": ' + "[" * 199 + "]" * 199 + "}"
    lines = tmp_path / "runs.jsonl"
    lines.write_text('{"input": ' + text + "}\n")
    for source in (["--input", text], ["--input-file", str(lines)]):
        result = CliRunner().invoke(
            main,
            ["--workflows", "tests.workflows.admission", "enqueue", "tick", *source],
            env={"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None},
            catch_exceptions=False,
        )
        assert (result.exit_code, result.stderr) == (2, NO_URL + "\n")


def _numeric_options(command: click.Command, path: str = "graphq") -> Iterator[tuple[str, click.Parameter]]:
    """Every parameter of ``command`` and its subcommands whose value is a number, with its command path."""
    for param in command.params:
        if isinstance(param.type, click.types._NumberParamTypeBase):
            yield path, param
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _numeric_options(sub, f"{path} {name}")


def test_every_numeric_option_is_bounded_on_both_sides() -> None:
    """``graphq runs list -n 99999999999999999999`` was a Redis ResponseError traceback, ``--timeout nan``
    waited forever: every number an option takes has a least and a greatest value, and a float option
    refuses NaN (click's FloatRange takes it)."""
    found = {f"{path} {param.name}": param.type for path, param in _numeric_options(main)}
    assert sorted(found) == [
        "graphq enqueue timeout",
        "graphq run processes",
        "graphq runs answer processes",
        "graphq runs list limit",
        "graphq runs resume processes",
        "graphq scheduler metrics_port",
        "graphq schedules history limit",
        "graphq schedules next count",
        "graphq state limit",
        "graphq store namespaces limit",
        "graphq store namespaces max_depth",
        "graphq store put ttl",
        "graphq store search limit",
        "graphq store search offset",
        "graphq ui port",
        "graphq worker concurrency",
        "graphq worker metrics_port",
    ]
    for name, kind in found.items():
        assert isinstance(kind, click.IntRange | FiniteFloatRange), name
        assert kind.min is not None and kind.max is not None, name


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["runs", "list", "-n", "99999999999999999999"],
            "graphq runs list: Invalid value for '--limit' / '-n': 99999999999999999999 is not in the range "
            "1<=x<=100000 (see graphq runs list --help)",
        ),
        (
            ["runs", "list", "-n", "-1"],
            "graphq runs list: Invalid value for '--limit' / '-n': -1 is not in the range 1<=x<=100000 (see "
            "graphq runs list --help)",
        ),
        (
            ["state", "t", "--history", "-n", "100001"],
            "graphq state: Invalid value for '--limit' / '-n': 100001 is not in the range 1<=x<=100000 (see "
            "graphq state --help)",
        ),
        (
            ["schedules", "history", "s", "-n", "0"],
            "graphq schedules history: Invalid value for '--limit' / '-n': 0 is not in the range "
            "1<=x<=100000 (see graphq schedules history --help)",
        ),
        (
            ["schedules", "next", "s", "-n", "1001"],
            "graphq schedules next: Invalid value for '-n': 1001 is not in the range 1<=x<=1000 (see graphq "
            "schedules next --help)",
        ),
        (
            ["enqueue", "counter", "--wait", "--timeout", "nan"],
            "graphq enqueue: Invalid value for '--timeout': nan is not in the range 0<x<=315360000 (see "
            "graphq enqueue --help)",
        ),
        (
            ["enqueue", "counter", "--wait", "--timeout", "1e400"],
            "graphq enqueue: Invalid value for '--timeout': inf is not in the range 0<x<=315360000 (see "
            "graphq enqueue --help)",
        ),
        (
            ["enqueue", "counter", "--wait", "--timeout", "0"],
            "graphq enqueue: Invalid value for '--timeout': 0.0 is not in the range 0<x<=315360000 (see "
            "graphq enqueue --help)",
        ),
        (
            ["worker", "--metrics-port", "65536"],
            "graphq worker: Invalid value for '--metrics-port': 65536 is not in the range 0<=x<=65535 (see "
            "graphq worker --help)",
        ),
        (
            ["scheduler", "--metrics-port", "-1"],
            "graphq scheduler: Invalid value for '--metrics-port': -1 is not in the range 0<=x<=65535 (see "
            "graphq scheduler --help)",
        ),
        (
            ["worker", "-c", "0"],
            "graphq worker: Invalid value for '--concurrency' / '-c': 0 is not in the range 1<=x<=256 (see "
            "graphq worker --help)",
        ),
        (  # a Redis ResponseError traceback ("Invalid stream ID")
            ["runs", "watch", "r1", "--after", "99999999999999999999999-0"],
            "graphq runs watch: Invalid value for '--after' / '-a': '99999999999999999999999-0' is not an "
            "event id: MILLISECONDS and SEQUENCE are at most 18446744073709551615 (see graphq runs watch "
            "--help)",
        ),
        (
            ["runs", "watch", "r1", "--after", "1-18446744073709551616"],
            "graphq runs watch: Invalid value for '--after' / '-a': '1-18446744073709551616' is not an event "
            "id: MILLISECONDS and SEQUENCE are at most 18446744073709551615 (see graphq runs watch --help)",
        ),
        (  # infinite as a float: stored as null, the schedule could not be read, nor removed
            [*ADD, "* * * * *", "--catchup-window", "9" * 400 + "d"],
            f"--catchup-window '{'9' * 400}d' is invalid: use at most 3650d (ten years)",
        ),
        (
            [*ADD, "* * * * *", "--catchup-window", "3650d1s"],
            "--catchup-window '3650d1s' is invalid: use at most 3650d (ten years)",
        ),
        (
            ["schedules", "update", "s", "--jitter", "3651d"],
            "--jitter '3651d' is invalid: use at most 3650d (ten years)",
        ),
    ],
)
def test_numbers_out_of_range_are_one_line(args: list[str], line: str) -> None:
    result = CliRunner().invoke(
        main,
        ["--workflows", "tests.workflows.basic", *args],
        prog_name="graphq",
        env={"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None},
        catch_exceptions=False,
    )
    assert (result.exit_code, result.stderr) == (2, f"error: {line}\n")
