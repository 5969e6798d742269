"""A pydantic state's defaults and the result's key order on the queue:
a queued run's result, ``graphq runs show`` and the thread's state hold no unset default and list their
keys in declaration order, as ``invoke`` (and LangGraph) does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import Start, graphq, worker_env
from tests.workflows import defaults

REGISTRY = Registry({g.name: g for g in (defaults.defaults, defaults.jokes)})

CASES: list[tuple[str, dict[str, Any], list[tuple[str, Any]]]] = [
    ("defaults", {"q": "x"}, [("q", "x!dflt"), ("log", ["items=[]"])]),
    ("jokes", {}, [("subjects", ["a", "b"]), ("jokes", ["joke a", "joke b"]), ("best", "joke b")]),
]


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    """Environment of the worker subprocess: the test Redis and these workflows."""
    return worker_env(redis_url, "tests.workflows.defaults")


@pytest.mark.parametrize(("workflow", "input", "expected"), CASES)
def test_in_process(workflow: str, input: dict[str, Any], expected: list[tuple[str, Any]]) -> None:
    assert list(REGISTRY.get(workflow).invoke(input).items()) == expected


def test_a_queued_runs_result_and_runs_show_are_invokes(
    client: Client, start: Start, env: dict[str, str]
) -> None:
    """On a worker subprocess: the run's result and ``graphq runs show -o json`` hold invoke's keys and
    values, in its order; the thread's state holds no default ``extra`` / ``items``."""
    start()
    ids = [client.enqueue(workflow, input) for workflow, input, _ in CASES]
    runs = client.wait(ids, timeout_s=30)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * len(CASES)
    assert [list(r.result.items()) for r in runs if r.result is not None] == [e for *_, e in CASES]
    shown = []
    for run_id in ids:
        done = graphq("runs", "show", run_id, "-o", "json", env=env)
        assert done.returncode == 0, done.stderr
        shown.append(list(json.loads(done.stdout)["result"].items()))
    assert shown == [e for *_, e in CASES]
    assert client.get_state(runs[0].thread_id).channel_values == {"q": "x!dflt", "log": ["items=[]"]}
