"""The ``graphq`` CLI in-process (click's CliRunner) against the real test Redis."""

from __future__ import annotations

import json
import logging
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import redis
from click.testing import CliRunner, Result
from pydantic import BaseModel

from graphcore import keys
from graphcore.backend.json_forms import jsonable, to_json
from graphq.cli.main import main

WORKFLOWS = "tests.workflows.basic"
RUN_ID = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture(autouse=True)
def _isolate_process_state() -> Iterator[None]:
    """Restore what a command changes process-wide: signal handlers (RQ) and the retry logger's level."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    level = logging.getLogger("graphcore.backend.connection").level
    yield
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    logging.getLogger("graphcore.backend.connection").setLevel(level)


def graphq(*args: str, url: str | None, env: dict[str, str] | None = None) -> Result:
    """``graphq [--redis-url URL] --workflows tests.workflows.basic ARGS``; GRAPHQ_* env restored after."""
    clean = {"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None, "GRAPHQ_DATA_DIR": None}
    prefix = ["--redis-url", url] if url else []
    return CliRunner().invoke(
        main, [*prefix, "--workflows", WORKFLOWS, *args], env={**clean, **(env or {})}, catch_exceptions=False
    )


def error_line(result: Result) -> str:
    """The one ``error:`` line on stderr (asserting there is exactly one and no traceback)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def runs_json(url: str) -> list[dict[str, Any]]:
    result = graphq("runs", "list", "--output", "json", url=url)
    assert result.exit_code == 0, result.stderr
    data: list[dict[str, Any]] = json.loads(result.stdout)
    return data


def run_to_end(url: str, workflow: str, payload: str, *extra: str) -> tuple[Result, str]:
    """``graphq run`` on the test Redis; returns the result and the run id."""
    result = graphq("run", workflow, "--input", payload, *extra, url=url)
    found = re.search(r"^run ([0-9a-f]{32}):", result.stderr, re.MULTILINE)
    assert found, result.stderr
    return result, found.group(1)


# -- enqueue -------------------------------------------------------------------------------------------------


def test_enqueue_prints_a_run_id(redis_url: str) -> None:
    result = graphq("enqueue", "counter", "--input", '{"limit": 2}', url=redis_url)
    assert result.exit_code == 0, result.stderr
    run_id = result.stdout.strip()
    assert RUN_ID.match(run_id)
    [record] = runs_json(redis_url)
    assert (record["id"], record["status"], record["input"]) == (run_id, "queued", {"limit": 2})


def test_enqueue_reads_input_from_a_file(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text('{"items": [1, 2]}')
    result = graphq(
        "enqueue",
        "fanout",
        "--input",
        f"@{tmp_path / 'in.json'}",
        "--thread",
        "t-file",
        "--tenant",
        "acme",
        url=redis_url,
    )
    assert result.exit_code == 0, result.stderr
    [record] = runs_json(redis_url)
    assert (record["input"], record["thread_id"], record["tenant"]) == ({"items": [1, 2]}, "t-file", "acme")


def test_batch_file_enqueues_every_line(redis_url: str, tmp_path: Path) -> None:
    batch = tmp_path / "runs.jsonl"
    batch.write_text(
        '{"input": {"limit": 1}}\n\n{"input": {"limit": 2}, "thread": "t-2"}\n'
        '{"input": {"limit": 3}, "tenant": "acme"}\n'
    )
    result = graphq("enqueue", "counter", "--input-file", str(batch), "--tenant", "base", url=redis_url)
    assert result.exit_code == 0, result.stderr
    ids = result.stdout.split()
    assert len(ids) == 3 and all(RUN_ID.match(i) for i in ids)
    records = {r["id"]: r for r in runs_json(redis_url)}
    assert set(records) == set(ids)
    assert all(r["status"] == "queued" for r in records.values())
    first, second, third = (records[i] for i in ids)
    assert (first["input"], first["tenant"]) == ({"limit": 1}, "base")
    assert (second["thread_id"], second["tenant"]) == ("t-2", "base")
    assert third["tenant"] == "acme"


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"input": {"limit": 2} "x": 1}', "runs.jsonl:2:24: Expecting ',' delimiter"),
        ('{"limit": 2}', "runs.jsonl:2:1: unknown key(s) ['limit']"),
        ('{"input": {}, "thread": "a b"}', "runs.jsonl:2: thread id 'a b' is invalid"),
        ("[1, 2]", "runs.jsonl:2:1: expected a JSON object"),
        ('{"input": {"limt": 2}}', "runs.jsonl:2: the input has unknown state key(s) ['limt']"),
        ('{"input": [1]}', "runs.jsonl:2: the input is a list; expected a dict of state updates"),
    ],
)
def test_a_bad_batch_line_enqueues_nothing(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, bad_line: str, message: str
) -> None:
    batch = tmp_path / "runs.jsonl"
    batch.write_text(f'{{"input": {{"limit": 1}}}}\n{bad_line}\n{{"input": {{"limit": 3}}}}\n')
    result = graphq("enqueue", "counter", "--input-file", str(batch), url=redis_url)
    assert result.exit_code == 2
    line = error_line(result)
    assert message in line and f"{batch}:2:" in line
    assert result.stdout == ""
    assert redis_client.zcard(keys.runs_index()) == 0
    assert redis_client.llen("rq:queue:graphq:counter") == 0
    assert runs_json(redis_url) == []


def test_input_and_input_file_exclude_each_other(redis_url: str, tmp_path: Path) -> None:
    batch = tmp_path / "runs.jsonl"
    batch.write_text('{"input": {}}\n')
    result = graphq("enqueue", "counter", "--input", "{}", "--input-file", str(batch), url=redis_url)
    assert result.exit_code == 2
    assert "either --input or --input-file" in error_line(result)


def test_unknown_workflow_lists_the_known_ones(redis_url: str) -> None:
    result = graphq("enqueue", "nope", "--input", "{}", url=redis_url)
    assert result.exit_code == 2
    line = error_line(result)
    assert "unknown workflow 'nope'" in line and "counter" in line and "fanout" in line
    assert runs_json(redis_url) == []


def test_malformed_input_json_names_the_position(redis_url: str) -> None:
    result = graphq("enqueue", "counter", "--input", '{"a": 1 "b": 2}', url=redis_url)
    assert result.exit_code == 2
    assert error_line(result) == "error: --input: Expecting ',' delimiter: line 1 column 9 (char 8)"


def test_malformed_input_file_names_file_line_and_column(redis_url: str, tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text('{\n  "limit": 3,\n}\n')
    result = graphq("run", "counter", "--input", f"@{path}", url=redis_url)
    assert result.exit_code == 2
    expected = f"error: --input: {path}:3:1: Expecting property name enclosed in double quotes"
    assert error_line(result) == expected


def test_missing_input_file_is_bad_input(redis_url: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    result = graphq("enqueue", "counter", "--input", f"@{missing}", url=redis_url)
    assert result.exit_code == 2
    assert error_line(result) == f"error: --input: cannot read {missing}: No such file or directory"
    result = graphq("enqueue", "counter", "--input-file", str(missing), url=redis_url)
    assert result.exit_code == 2
    assert str(missing) in error_line(result)


def test_invalid_ids_are_bad_input(redis_url: str) -> None:
    result = graphq("enqueue", "counter", "--thread", "a:b", url=redis_url)
    assert result.exit_code == 2
    assert "thread id 'a:b' is invalid" in error_line(result)
    result = graphq("state", "x y", url=redis_url)
    assert result.exit_code == 2
    assert "thread id 'x y' is invalid" in error_line(result)


def test_wait_timeout_fails(redis_url: str) -> None:
    result = graphq("enqueue", "counter", "--wait", "--timeout", "0.2", url=redis_url)
    assert result.exit_code == 1
    run_id = result.stdout.strip()
    assert RUN_ID.match(run_id)
    assert run_id in error_line(result) and "not finished" in error_line(result)


# -- run, runs, state ----------------------------------------------------------------------------------------


def test_run_prints_the_final_state(redis_url: str) -> None:
    result, run_id = run_to_end(redis_url, "counter", '{"limit": 3}')
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"n": 3, "limit": 3, "log": ["bump1", "bump2", "bump3"]}
    assert "step   2" in result.stderr and "completed" in result.stderr
    assert "redis: redis://127.0.0.1:" in result.stderr
    [record] = runs_json(redis_url)
    assert (record["id"], record["status"], record["step"]) == (run_id, "completed", 3)


def test_run_output_json_is_the_record(redis_url: str) -> None:
    result = graphq("run", "fanout", "--input", '{"items": [1, 2, 3]}', "-o", "json", url=redis_url)
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "completed" and record["result"]["total"] == 14


def test_failed_run_exits_1_and_runs_show_has_the_error(redis_url: str) -> None:
    result, run_id = run_to_end(redis_url, "failing", "{}")
    assert result.exit_code == 1
    assert "kaboom" in error_line(result) and run_id in error_line(result)
    shown = graphq("runs", "show", run_id, url=redis_url)
    assert shown.exit_code == 0, shown.stderr
    assert "failed" in shown.stdout and "NodeError" in shown.stdout and "kaboom" in shown.stdout
    assert "RuntimeError: kaboom at node explode" in shown.stdout  # the traceback
    as_json = json.loads(graphq("runs", "show", run_id, "--output", "json", url=redis_url).stdout)
    assert as_json["status"] == "failed"
    assert as_json["error"]["type"] == "NodeError" and "kaboom" in as_json["error"]["message"]
    assert "Traceback" in as_json["error"]["traceback"]


def test_runs_show_of_an_unknown_run(redis_url: str) -> None:
    result = graphq("runs", "show", "0" * 32, url=redis_url)
    assert result.exit_code == 2
    assert "no run with id" in error_line(result)


def test_state_history_has_one_checkpoint_per_super_step(redis_url: str) -> None:
    result, _ = run_to_end(redis_url, "counter", '{"limit": 3}', "--thread", "hist-1")
    assert result.exit_code == 0, result.stderr
    history = graphq("state", "hist-1", "--history", "--output", "json", url=redis_url)
    assert history.exit_code == 0, history.stderr
    rows = json.loads(history.stdout)
    assert [r["step"] for r in rows] == [3, 2, 1, 0, -1]
    assert [r["source"] for r in rows] == ["loop", "loop", "loop", "loop", "input"]
    assert [r["writes"] for r in rows] == [["bump"], ["bump"], ["bump"], ["__start__"], []]
    assert [r["next"] for r in rows] == [[], ["bump"], ["bump"], ["bump"], ["__start__"]]
    assert [r["parent_id"] for r in rows[:-1]] == [r["checkpoint_id"] for r in rows[1:]]
    table = graphq("state", "hist-1", "--history", url=redis_url)
    assert table.exit_code == 0 and "input" in table.stdout and "bump" in table.stdout


def test_state_shows_the_newest_or_a_given_checkpoint(redis_url: str) -> None:
    run_to_end(redis_url, "counter", '{"limit": 2}', "--thread", "st-1")
    newest = json.loads(graphq("state", "st-1", "-o", "json", url=redis_url).stdout)
    assert newest["values"]["n"] == 2 and newest["next"] == []
    rows = json.loads(graphq("state", "st-1", "--history", "-o", "json", url=redis_url).stdout)
    first = graphq("state", "st-1", "--checkpoint", rows[-1]["checkpoint_id"], url=redis_url)
    assert first.exit_code == 0
    assert json.loads(first.stdout) == {"log": []}  # the input checkpoint: the state before the input
    applied = graphq("state", "st-1", "--checkpoint", rows[-2]["checkpoint_id"], url=redis_url)
    assert json.loads(applied.stdout) == {"limit": 2, "log": []}


def test_state_of_an_unknown_thread(redis_url: str) -> None:
    for args in (["state", "nobody"], ["state", "nobody", "--history"]):
        result = graphq(*args, url=redis_url)
        assert result.exit_code == 2
        assert "nobody" in error_line(result)


def test_workflows_list(redis_url: str) -> None:
    result = graphq("workflows", "list", "--output", "json", url=None)
    assert result.exit_code == 0, result.stderr
    by_name = {w["name"]: w["nodes"] for w in json.loads(result.stdout)}
    assert by_name["counter"] == ["bump"] and by_name["fanout"] == ["square", "total"]


# -- configuration and connection errors ---------------------------------------------------------------------


def test_unreachable_redis_hides_the_password() -> None:
    env = {"GRAPHQ_REDIS_RETRY_ATTEMPTS": "2", "GRAPHQ_REDIS_RETRY_MAX_WAIT_S": "0.1"}
    result = graphq("runs", "list", url="redis://:secret@127.0.0.1:1/0", env=env)
    assert result.exit_code == 1
    line = error_line(result)
    assert line.startswith("error: cannot reach Redis at redis://:***@127.0.0.1:1/0: ")
    assert "secret" not in result.stderr + result.stdout


def test_no_redis_url_is_a_config_error() -> None:
    result = graphq("runs", "list", url=None)
    assert result.exit_code == 2
    assert "GRAPHQ_REDIS_URL" in error_line(result)


def test_bad_setting_is_a_config_error(redis_url: str) -> None:
    result = graphq("runs", "list", url=redis_url, env={"GRAPHQ_MAX_SUPER_STEPS": "0"})
    assert result.exit_code == 2
    assert "GRAPHQ_MAX_SUPER_STEPS" in error_line(result)


def test_unimportable_workflow_module(redis_url: str) -> None:
    result = CliRunner().invoke(
        main,
        ["--redis-url", redis_url, "--workflows", "no.such.module", "workflows", "list"],
        env={"GRAPHQ_WORKFLOWS": None, "GRAPHQ_REDIS_URL": None},
    )
    assert result.exit_code == 2
    assert "no.such.module" in error_line(result)


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["run"],
        ["enqueue"],
        ["worker"],
        ["runs"],
        ["runs", "list"],
        ["runs", "show"],
        ["state"],
        ["workflows"],
        ["workflows", "list"],
    ],
)
def test_help(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0
    assert "Usage: " in result.output


# -- JSON output ---------------------------------------------------------------------------------------------


class Color(Enum):
    RED = "red"


class Point(BaseModel):
    x: int


@dataclass
class Pair:
    a: int
    b: bytes


def test_json_output_is_always_valid() -> None:
    value = {
        "when": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        "price": Decimal("1.50"),
        "id": UUID(int=1),
        "raw": b"hi",
        "blob": b"\xff\x00",
        "tags": {"b", "a"},
        "color": Color.RED,
        "point": Point(x=1),
        "pair": Pair(1, b"x"),
        3: float("nan"),
        "tuple": (1, 2),
        "other": object,
    }
    data = json.loads(to_json(value))
    assert data["when"] == "2024-01-02T03:04:05+00:00" and data["price"] == "1.50"
    assert data["id"] == str(UUID(int=1)) and data["raw"] == "hi" and data["blob"] == "base64:/wA="
    assert data["tags"] == ["a", "b"] and data["color"] == "red" and data["point"] == {"x": 1}
    assert data["pair"] == {"a": 1, "b": "x"} and data["3"] == "nan" and data["tuple"] == [1, 2]
    assert data["other"] == repr(object)
    assert jsonable({(1, 2): 1}) == {"[1, 2]": 1}
