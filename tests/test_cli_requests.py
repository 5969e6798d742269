"""Every request a run made (``graphq runs requests RUN --all``, ``runs show``), refusals that point to
``--again``, second answers that replay the node's earlier answers, one step numbering (the thread's
checkpoint steps) in what the CLI prints, and tables that cut long values."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import redis
from click.testing import Result

from graphcore.backend.client import Client
from graphcore.engine.interrupts import NotAwaitingInputError, RequestRecord
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import connect_client
from tests.cli_helpers import error_line, invoke, ok, process_state_restored
from tests.workflows import hitl

WORKFLOWS = "tests.workflows.hitl"
REGISTRY = Registry.load([WORKFLOWS])
STEP_LINE = re.compile(r"^step +(-?\d+)  (.+?)  \((\d+) tasks?\)", re.MULTILINE)


@pytest.fixture(autouse=True)
def _isolate_process_state() -> Iterator[None]:
    with process_state_restored():
        hitl.CALLS.clear()
        yield


@pytest.fixture
def client(redis_client: redis.Redis) -> Client:
    return Client(redis_client, REGISTRY)


def graphq(url: str, *args: str) -> Result:
    return invoke(WORKFLOWS, url, *args)


def prefix(url: str) -> str:
    return f"graphq --redis-url {url} --workflows {WORKFLOWS}"


def work(url: str) -> None:
    run_worker(Settings(redis_url=url), burst=True, registry=REGISTRY)


def enqueue(url: str, workflow: str, payload: dict[str, Any]) -> str:
    return ok(graphq(url, "enqueue", workflow, "--input", json.dumps(payload))).stdout.strip()


def every(url: str, run_id: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(
        ok(graphq(url, "runs", "requests", run_id, "--all", "-o", "json")).stdout
    )
    return data


def asked_twice(url: str, client: Client) -> tuple[str, str, str]:
    """An ``asking`` run answered "yes" then "no", completed; returns (run, first request, second request)."""
    run_id = enqueue(url, "asking", {"topic": "tea"})
    work(url)
    [first] = client.requests(run_id)
    ok(graphq(url, "runs", "answer", run_id, "--value", '"yes"'))
    work(url)
    [second] = client.requests(run_id)
    ok(graphq(url, "runs", "answer", run_id, "--value", '"no"'))
    work(url)
    assert client.get_run(run_id).status == "completed"
    return run_id, first.id, second.id


# -- every request a run made ----------------------------------------------------------------------------


def test_requests_all_lists_open_and_answered_requests_with_their_answers(
    redis_url: str, client: Client
) -> None:
    run_id = enqueue(redis_url, "asking", {"topic": "tea"})
    work(redis_url)
    [first] = client.requests(run_id)
    ok(graphq(redis_url, "runs", "answer", run_id, "--value", '"yes"'))
    work(redis_url)
    [second] = client.requests(run_id)
    input_cp = client.get_history(client.get_run(run_id).thread_id)[-2]
    assert (input_cp.step, input_cp.source) == (0, "loop")  # ask_twice runs (and asks) in step 1, after it
    listed = every(redis_url, run_id)
    answered_at = listed[0]["answered_at"]
    assert datetime.fromisoformat(answered_at) >= datetime.fromisoformat(first.created_at)
    assert listed == [
        {
            "id": first.id,
            "node": "ask_twice",
            "value": {"question": "first about tea?"},
            "status": "answered",
            "answer": "yes",
            "step": 1,
            "checkpoint_id": input_cp.id,
            "created_at": first.created_at,
            "answered_at": answered_at,
            "again_of": None,
            "deadline": None,
            "deadline_ms": None,
            "response_schema": None,
        },
        {
            "id": second.id,
            "node": "ask_twice",
            "value": {"question": "second?"},
            "status": "open",
            "answer": None,
            "step": 1,
            "checkpoint_id": input_cp.id,
            "created_at": second.created_at,
            "answered_at": None,
            "again_of": None,
            "deadline": None,
            "deadline_ms": None,
            "response_schema": None,
        },
    ]
    table = ok(graphq(redis_url, "runs", "requests", run_id, "--all")).stdout.splitlines()
    assert re.fullmatch(r" request +┃ step ┃ node +┃ status +┃ value +┃ answer *", table[0])
    assert re.fullmatch(
        rf" {first.id} │ 1 +│ ask_twice │ answered │ {{\"question\": \"first about tea\?\"}} │ \"yes\" *",
        table[2],
    )
    assert re.fullmatch(
        rf" {second.id} │ 1 +│ ask_twice │ open +│ {{\"question\": \"second\?\"}} +│ *", table[3]
    )
    assert len(table) == 4


def test_show_lists_the_requests_of_an_ended_run_and_how_to_answer_again(
    redis_url: str, client: Client
) -> None:
    run_id, first, second = asked_twice(redis_url, client)
    shown = ok(graphq(redis_url, "runs", "show", run_id)).stdout
    rows = shown[shown.index("\nrequests:\n") :].splitlines()
    assert re.fullmatch(rf" {first} │ 1 +│ ask_twice │ answered │ .* │ \"yes\" *", rows[4])
    assert re.fullmatch(rf" {second} │ 1 +│ ask_twice │ answered │ .* │ \"no\" *", rows[5])
    assert rows[6:] == [
        f"answer one again, on a new branch, with: {prefix(redis_url)} runs answer {run_id} --request ID "
        "--value '<JSON>' --again"
    ]
    record = json.loads(ok(graphq(redis_url, "runs", "show", run_id, "-o", "json")).stdout)
    assert [(r["id"], r["status"], r["answer"]) for r in record["all_requests"]] == [
        (first, "answered", "yes"),
        (second, "answered", "no"),
    ]
    assert "requests" not in record  # the open ones: only while it waits


def test_a_run_that_made_no_requests(redis_url: str) -> None:
    run_id = enqueue(redis_url, "looping", {"until": 1})
    work(redis_url)
    empty = ok(graphq(redis_url, "runs", "requests", run_id, "--all"))
    assert (empty.stdout, empty.stderr) == ("", f"run {run_id} is completed and made no requests\n")
    assert every(redis_url, run_id) == []
    assert "requests:" not in ok(graphq(redis_url, "runs", "show", run_id)).stdout


# -- refusals point to --again ---------------------------------------------------------------------------


def test_answering_an_ended_run_names_the_command_that_answers_again(redis_url: str, client: Client) -> None:
    run_id, first, second = asked_twice(redis_url, client)
    refused = ok(graphq(redis_url, "runs", "answer", run_id, "--value", '"x"'), 2)
    assert error_line(refused) == (
        f"error: run {run_id} is completed, not awaiting input; nothing to answer; to answer one of its "
        f"requests again, on a new branch: {prefix(redis_url)} runs answer {run_id} --request ID --value "
        f"'<JSON>' --again (ids: {first}, {second})"
    )
    no_id = ok(graphq(redis_url, "runs", "answer", run_id, "--value", '"x"', "--again"), 2)
    assert error_line(no_id) == (
        f"error: --again needs --request ID (the request to answer again); run {run_id} made: {first}, "
        f"{second}"
    )
    with pytest.raises(NotAwaitingInputError) as info:
        connect_client(redis_url, registry=REGISTRY).answer(run_id, "x")
    assert str(info.value) == (
        f"run {run_id} is completed, not awaiting input; nothing to answer; answer one of its requests "
        f"again, on a new branch, with answer_again (--again): ['{first}', '{second}']"
    )
    assert info.value.answered == [first, second]


def test_answering_an_ended_run_with_one_request_gives_the_whole_command(
    redis_url: str, client: Client
) -> None:
    run_id = enqueue(redis_url, "chat", {"messages": [{"id": "h1", "role": "human", "content": "maps"}]})
    work(redis_url)
    [request] = client.requests(run_id)
    ok(graphq(redis_url, "runs", "answer", run_id, "--value", '"yes"'))
    work(redis_url)
    refused = ok(graphq(redis_url, "runs", "answer", run_id, "--value", '"no"'), 2)
    assert error_line(refused) == (
        f"error: run {run_id} is completed, not awaiting input; nothing to answer; to answer its request "
        f"again, on a new branch: {prefix(redis_url)} runs answer {run_id} --request {request.id} --value "
        "'<JSON>' --again"
    )


# -- second answers --------------------------------------------------------------------------------------


def test_a_second_answer_replays_the_nodes_earlier_answers(redis_url: str, client: Client) -> None:
    run_id, _, second = asked_twice(redis_url, client)
    branch = ok(
        graphq(redis_url, "runs", "answer", run_id, "--request", second, "--value", '"again"', "--again")
    )
    branch_id = branch.stdout.strip()
    work(redis_url)
    record = client.get_run(branch_id)
    assert (record.status, record.continued_from_run_id) == ("completed", run_id)
    assert record.result == {"topic": "tea", "answers": ["yes", "again"], "done": True}
    [again] = client.run_requests(branch_id)
    assert (again.id, again.status, again.answer, again.step, again.again_of) == (
        second,
        "answered",
        "again",
        1,
        run_id,
    )
    table = ok(graphq(redis_url, "runs", "requests", branch_id, "--all")).stdout.splitlines()
    assert re.fullmatch(rf" {second} │ 1 +│ ask_twice │ answered \(again\) │ .* │ \"again\" *", table[2])
    third = ok(
        graphq(redis_url, "runs", "answer", branch_id, "--request", second, "--value", '"3"', "--again")
    )
    work(redis_url)
    assert client.get_run(third.stdout.strip()).result == {
        "topic": "tea",
        "answers": ["yes", "3"],
        "done": True,
    }
    assert client.run_requests(third.stdout.strip())[0].again_of == run_id
    assert client.get_run(run_id).result == {"topic": "tea", "answers": ["yes", "no"], "done": True}


def test_run_requests_in_the_python_api(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "reviewing", {"items": ["a", "b"]})
    work(redis_url)
    a, b = client.requests(run_id)
    ok(graphq(redis_url, "runs", "answer", run_id, "--request", b.id, "--value", '"yes-b"'))
    work(redis_url)
    made = client.run_requests(run_id)
    assert [(r.id, r.node, r.value, r.status, r.answer, r.step) for r in made] == [
        (a.id, "approve", "approve a?", "open", None, 1),
        (b.id, "approve", "approve b?", "answered", "yes-b", 1),
    ]
    assert all(isinstance(r, RequestRecord) for r in made)
    ok(graphq(redis_url, "runs", "cancel", run_id))
    assert [(r.id, r.status) for r in client.run_requests(run_id)] == [
        (a.id, "unanswered"),
        (b.id, "answered"),
    ]


# -- one step numbering: the thread's checkpoint steps ---------------------------------------------------


def test_a_branch_run_prints_no_empty_step(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "chat", {"messages": [{"id": "h1", "role": "human", "content": "maps"}]})
    work(redis_url)
    [request] = client.requests(run_id)
    ok(graphq(redis_url, "runs", "answer", run_id, "--value", '"yes"'))
    work(redis_url)
    done = ok(
        graphq(
            redis_url,
            "runs",
            "answer",
            run_id,
            "--request",
            request.id,
            "--value",
            '"no"',
            "--again",
            "--wait",
        )
    )
    # The fork checkpoint (step 2, one after the checkpoint it forks, as LangGraph's) is not a step line;
    # tools and agent run in steps 3 and 4, numbered as `graphq state --history` numbers their checkpoints.
    assert STEP_LINE.findall(done.stderr) == [("3", "tools", "1"), ("4", "agent", "1")]
    branch_id = re.findall(r"^run ([0-9a-f]{32}) branches off", done.stderr, re.MULTILINE)[0]
    history = json.loads(
        ok(graphq(redis_url, "state", client.get_run(run_id).thread_id, "--history", "-o", "json")).stdout
    )
    branch = [(h["step"], h["source"], h["writes"]) for h in history if h["branch"] == "b1"]
    assert branch == [(4, "loop", ["agent"]), (3, "loop", ["tools"]), (2, "fork", [])]
    assert client.get_run(branch_id).status == "completed"


def test_a_resumed_run_waits_at_the_threads_step(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "chat", {"messages": [{"id": "h1", "role": "human", "content": "maps"}]})
    work(redis_url)
    ok(graphq(redis_url, "runs", "cancel", run_id))
    resumed = ok(graphq(redis_url, "runs", "resume", run_id, "--wait"), 3)
    new_id = resumed.stdout.split()[1]
    [request] = client.requests(new_id)
    # agent ran in step 1; tools asks in step 2 -- in both runs, whatever the run's own count of steps
    assert resumed.stdout.splitlines()[0] == f"run {new_id} is waiting for input at step 2 (1 open request):"
    [newest, *_] = json.loads(
        ok(graphq(redis_url, "state", client.get_run(new_id).thread_id, "--history", "-o", "json")).stdout
    )
    assert (newest["step"], newest["next"]) == (1, ["tools"])
    assert client.get_run(new_id).step == 0  # the run itself has committed no step yet
    events = ok(graphq(redis_url, "runs", "watch", new_id, "-o", "json"), 3).stdout.splitlines()
    assert [(e["mode"], e["step"]) for e in map(json.loads, events)] == [
        ("status", 2),
        ("interrupt", 2),
        ("status", 2),
    ]
    fields = ok(graphq(redis_url, "runs", "show", new_id)).stdout
    assert re.search(r"^ step +│ 2 +$", fields, re.MULTILINE)
    assert re.search(r"^ steps done +│ 0 +$", fields, re.MULTILINE)
    assert every(redis_url, new_id)[0]["step"] == 2
    ok(graphq(redis_url, "runs", "cancel", new_id))
    canceled = ok(graphq(redis_url, "runs", "watch", new_id), 1)
    assert error_line(canceled) == f"error: run {new_id} canceled at step 2: Canceled: canceled by request"
    assert request.node == "tools"


# -- long values are cut in tables, whole in JSON --------------------------------------------------------


def test_tables_cut_long_values_and_json_keeps_them(redis_url: str, client: Client) -> None:
    topic = "t" * 500_000  # about half a mebibyte: under GRAPHQ_MAX_INPUT_BYTES
    run_id = enqueue(redis_url, "asking", {"topic": topic})
    work(redis_url)
    [request] = client.requests(run_id)
    cell = '{"question": "first about ' + "t" * 54 + "…"
    assert len(cell) == 81
    table = ok(graphq(redis_url, "runs", "requests", run_id)).stdout
    assert f" {cell} " in table and "t" * 55 not in table and len(table) < 1000
    every_table = ok(graphq(redis_url, "runs", "requests", run_id, "--all")).stdout
    assert f" {cell} " in every_table and len(every_table) < 1000
    shown = ok(graphq(redis_url, "runs", "show", run_id)).stdout
    assert re.search(r"^ input +│ \{\"topic\": \"" + "t" * 69 + "… +$", shown, re.MULTILINE)
    assert "t" * 70 not in shown and len(shown) < 5000
    waiting = ok(graphq(redis_url, "run", "asking", "--input", json.dumps({"topic": topic})), 3).stdout
    assert re.search(r"^  [0-9a-f]{16}  ask_twice  " + re.escape(cell) + "$", waiting, re.MULTILINE)
    assert len(waiting) < 1000
    assert json.loads(ok(graphq(redis_url, "runs", "requests", run_id, "-o", "json")).stdout)[0]["value"] == {
        "question": f"first about {topic}?"
    }
    assert request.value == {"question": f"first about {topic}?"}
