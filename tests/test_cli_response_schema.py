"""The answer a request expects (``interrupt(value, response_schema=...)``) in the CLI's human output:
``enqueue --wait`` and ``graphq run`` (under each open request), ``runs requests`` (with
``--all``) and ``runs show`` (an expects column), as one line: the schema's title (else its type) and its
required fields. Only ``-o json`` showed it before."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphq.cli.records import schema_text
from tests.cli_helpers import invoke, ok, process_state_restored
from tests.workers import Procs, worker_env

WORKFLOWS = "tests.workflows.schema_ask"
REGISTRY = Registry.load([WORKFLOWS])
EXPECTS = "Decision (required: ok)"


def rows(table: str, first: str) -> list[list[str]]:
    """The cells of the rows of a printed table whose first cell is ``first``."""
    cells = [[c.strip() for c in re.split("[│┃]", line)] for line in table.splitlines()]
    return [row for row in cells if row[0] == first]


@pytest.fixture(autouse=True)
def _isolate_process_state() -> Iterator[None]:
    with process_state_restored():
        yield


def test_graphq_run_shows_the_answer_a_request_expects(redis_url: str, client: Client) -> None:
    paused = ok(invoke(WORKFLOWS, redis_url, "run", "schema-asking", "--input", '{"items": []}'), 3)
    run_id = re.findall(r"^run ([0-9a-f]{32}):", paused.stderr, re.MULTILINE)[0]
    [asked] = client.requests(run_id)
    assert paused.stdout.splitlines()[:3] == [
        f"run {run_id} is waiting for input at step 1 (1 open request):",
        f'  {asked.id}  ask  "ok?"',
        f"    expects: {EXPECTS}",
    ]


def test_enqueue_wait_and_runs_requests_and_show_show_the_answer_expected(
    redis_url: str, client: Client, procs: Procs, tmp_path: Path
) -> None:
    procs.start("worker", env=worker_env(redis_url, WORKFLOWS, tmp_path))
    waited = invoke(WORKFLOWS, redis_url, "enqueue", "schema-asking", "--input", '{"items": []}', "--wait")
    paused = ok(waited, 3)
    run_id = paused.stdout.splitlines()[0]  # the id enqueue prints, then how the run waits
    [asked] = client.requests(run_id)
    assert paused.stdout.splitlines()[1:4] == [
        f"run {run_id} is waiting for input at step 1 (1 open request):",
        f'  {asked.id}  ask  "ok?"',
        f"    expects: {EXPECTS}",
    ]
    table = ok(invoke(WORKFLOWS, redis_url, "runs", "requests", run_id)).stdout
    assert rows(table, "request") == [["request", "node", "created (UTC)", "value", "expects"]]
    [row] = rows(table, asked.id)
    assert row[-2:] == ['"ok?"', EXPECTS]
    for args in (("runs", "requests", run_id, "--all"), ("runs", "show", run_id)):
        out = ok(invoke(WORKFLOWS, redis_url, *args)).stdout
        assert rows(out, "request") == [["request", "step", "node", "status", "value", "expects", "answer"]]
        assert rows(out, asked.id) == [[asked.id, "1", "ask", "open", '"ok?"', EXPECTS, ""]]
    as_json = json.loads(ok(invoke(WORKFLOWS, redis_url, "runs", "requests", run_id, "-o", "json")).stdout)
    assert as_json[0]["response_schema"]["required"] == ["ok"]


def test_a_schema_without_a_title_is_shown_by_its_type() -> None:
    assert schema_text({"type": "object", "required": ["a", "b"]}) == "object (required: a, b)"
    assert schema_text({"type": ["string", "null"]}) == "string or null"
    assert schema_text({"anyOf": [{"type": "integer"}]}) == "JSON Schema"
    assert schema_text(None) == ""
