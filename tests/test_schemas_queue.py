"""State schemas on the queue: a root-channel state, a dataclass state, input/output schemas
with a private channel, a deferred join, injected ``config`` / ``writer`` parameters and a run context read
through ``runtime`` (given in the run's config, a dict or the context schema's dataclass) give the same
results in process and on a real worker subprocess (the step jobs and the serde go through the same
schema), and the input is checked against the input schema at enqueue."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, InvalidUpdateError
from tests.cli_helpers import run_in_process
from tests.workers import Procs, Start, worker_env
from tests.workflows import schemas

REGISTRY = Registry(
    {
        g.name: g
        for g in (
            schemas.root_list,
            schemas.root_int,
            schemas.narrowed,
            schemas.deferred,
            schemas.injected,
            schemas.contextual,
            schemas.misspelt,
            schemas.undeclared,
            schemas.dataclass_state,
        )
    }
)

CASES: list[tuple[str, Any, dict[str, Any], Any]] = [
    ("root-list", ["x"], {}, ["x", "a", 1, "b", 3]),
    ("root-int", 4, {}, 10),
    ("narrowed", {"question": "abc"}, {}, {"answer": "['secret']:cba"}),
    ("deferred", {"log": []}, {}, {"log": ["a", "b", "a2", "a3", "join:4"]}),
    ("injected", {"log": []}, {"configurable": {"user": "ann"}}, {"log": ["ann", "red"]}),
    (
        "injected",
        {"log": []},
        {"configurable": {"user": "bo", "twice": True}},
        {"log": ["bo", "red", "again"]},
    ),
    ("contextual", {"log": []}, {"context": {"user": "cy", "n": 3}}, {"log": ["cy:3", "Ctx"]}),
    ("contextual", {"log": []}, {"context": schemas.Ctx("di")}, {"log": ["di:1", "Ctx"]}),
    ("misspelt", {"log": []}, {}, {"log": ["typo"]}),
    ("undeclared", {"log": []}, {}, {"log": ["a", "b"]}),
    ("dataclass-state", {"x": 2}, {}, {"trail": ["Point:p:2"], "x": 3}),
    (
        "dataclass-state",
        schemas.Point(trail=["t"], label="q"),
        {},
        {"trail": ["t", "Point:q:0"], "x": 1, "label": "q"},
    ),
]


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    """Environment of the worker subprocess: the test Redis and these workflows."""
    return worker_env(redis_url, "tests.workflows.schemas")


@pytest.mark.parametrize(("workflow", "input", "config", "expected"), CASES)
def test_in_process(workflow: str, input: Any, config: dict[str, Any], expected: Any) -> None:
    assert REGISTRY.get(workflow).invoke(input, config) == expected


def test_on_a_worker(client: Client, start: Start, procs: Procs, env: dict[str, str]) -> None:
    """Every case run by one worker subprocess (one start-up for what five tests checked on five):

    - its result is invoke's (the output schema's keys, the root value);
    - a node key that is no channel: the run completes without it, as in process (and as in LangGraph),
      and the worker logs the warning naming the node and the key;
    - ``graphq runs show RUN -o json`` (the workflows loaded) shows the output schema's keys and a root
      state's value, as ``invoke`` returns them;
    - ``graphq runs watch RUN -m values -o json`` of the root int run: each values line is the value (the
      input's 4, then 5, then 10), as the in-process values stream;
    - the thread's state holds every channel (the private ``secret`` too); the result only ``answer``.
    """
    worker = start()
    ids = [client.enqueue(workflow, input, config=config) for workflow, input, config, _ in CASES]
    runs = client.wait(ids, timeout_s=30)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * len(CASES)
    assert [r.result for r in runs] == [expected for *_, expected in CASES]
    warning = "node 'typo' wrote unknown state key(s) ['lgo']; known keys: ['log']: ignored"
    assert procs.logged(worker).count(warning) == 1  # one misspelt case
    root_int, narrowed = runs[1], runs[2]
    assert (root_int.id, narrowed.id) == (ids[1], ids[2])
    shown = []
    for run in (narrowed, root_int):
        done = run_in_process("runs", "show", run.id, "-o", "json", env=env)
        assert done.returncode == 0, done.stderr
        shown.append(json.loads(done.stdout)["result"])
    assert shown == [{"answer": "['secret']:cba"}, 10]
    done = run_in_process("runs", "watch", root_int.id, "-m", "values", "-o", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["data"] for line in done.stdout.splitlines()] == [4, 5, 10]
    assert list(schemas.root_int.stream(4, stream_mode="values")) == [4, 5, 10]
    assert client.get_state(narrowed.thread_id).channel_values == {
        "question": "abc",
        "notes": "question",
        "secret": "cba",
        "answer": "['secret']:cba",
    }


@pytest.mark.parametrize(
    ("workflow", "input", "message"),
    [
        (
            "narrowed",
            {"question": "q", "answer": "x"},
            "the input has key(s) ['answer'] outside the graph's input schema In; its keys: ['question']",
        ),
        ("narrowed", {"question": 3}, "input.question: Input should be a valid string (got 3)"),
    ],
)
def test_the_input_is_checked_against_the_input_schema_at_enqueue(
    client: Client, workflow: str, input: Any, message: str
) -> None:
    with pytest.raises(InvalidUpdateError) as info:
        client.enqueue(workflow, input)
    assert str(info.value) == message


def test_a_context_that_does_not_fit_its_schema_is_refused_at_enqueue(client: Client) -> None:
    with pytest.raises(ConfigError) as info:
        client.enqueue("contextual", {"log": []}, config={"context": {"nobody": 1}})
    assert str(info.value) == (
        "run option context: does not fit the context schema Ctx: Ctx.__init__() got an unexpected keyword "
        "argument 'nobody'"
    )


def test_invoke_takes_the_context_as_langgraph_does() -> None:
    assert schemas.contextual.invoke({"log": []}, context=schemas.Ctx("ed", 2)) == {"log": ["ed:2", "Ctx"]}
