"""Human in the loop, cancel and resume from the ``graphq`` CLI (``graphq runs requests | answer | cancel |
resume``, ``graphq run`` pausing with exit 3), and the ``approval`` example workflow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import Result

from graphcore import Command, NodeError, keys
from graphcore.backend.client import Client
from graphcore.checkpoints import InMemoryCheckpointStore
from graphcore.engine.executor import INTERRUPT_KEY
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.examples.approval import build_graph, format_result, parse_answer
from graphq.worker.process.rq_worker import run_worker
from tests.cli_helpers import error_line, invoke, ok, process_state_restored
from tests.envs import clean_env
from tests.workflows import hitl

WORKFLOWS = "tests.workflows.hitl"
REGISTRY = Registry.load([WORKFLOWS])
RUN_ID = re.compile(r"^[0-9a-f]{32}$")
SCRIPT = Path(sys.executable).with_name("graphq")


@pytest.fixture(autouse=True)
def _isolate_process_state() -> Iterator[None]:
    with process_state_restored():
        hitl.CALLS.clear()
        yield


def graphq(*args: str, url: str) -> Result:
    """``graphq`` with this file's test workflows."""
    return invoke(WORKFLOWS, url, *args)


def work(url: str) -> None:
    """An in-process burst worker on the test workflows' queues."""
    run_worker(Settings(redis_url=url), burst=True, registry=REGISTRY)


def enqueue(url: str, workflow: str, payload: dict[str, Any]) -> str:
    run_id = ok(graphq("enqueue", workflow, "--input", json.dumps(payload), url=url)).stdout.strip()
    assert RUN_ID.match(run_id)
    return run_id


def show(url: str, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok(graphq("runs", "show", run_id, "-o", "json", url=url)).stdout)
    return data


def requests_json(url: str, run_id: str) -> list[dict[str, Any]]:
    listed = ok(graphq("runs", "requests", run_id, "-o", "json", url=url))
    data: list[dict[str, Any]] = json.loads(listed.stdout)
    return data


@pytest.fixture
def client(redis_client: redis.Redis) -> Client:
    """A read-only client, to check what the CLI wrote."""
    return Client(redis_client, REGISTRY)


# -- answer --------------------------------------------------------------------------------------------------


def test_two_sequential_requests_are_answered_one_after_the_other(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "asking", {"topic": "tea"})
    work(redis_url)
    [first] = client.requests(run_id)
    assert requests_json(redis_url, run_id) == [
        {
            "id": first.id,
            "value": {"question": "first about tea?"},
            "node": "ask_twice",
            "task_id": first.task_id,
            "index": 0,
            "created_at": first.created_at,
            "deadline_ms": None,
            "response_schema": None,
            "deadline": None,
        }
    ]
    answered = ok(graphq("runs", "answer", run_id, "--value", '"yes"', url=redis_url))
    assert answered.stdout == f"{first.id}\n"
    # no worker is live: of the version the run is pinned to neither
    assert f"run {run_id} continues once a worker serving its version " in answered.stderr
    assert show(redis_url, run_id)["status"] == "queued"  # until a worker takes the step again
    work(redis_url)
    [second] = requests_json(redis_url, run_id)
    assert (second["value"], second["index"], second["node"]) == ({"question": "second?"}, 1, "ask_twice")
    assert second["id"] != first.id
    no = ok(graphq("runs", "answer", run_id, "--value", '"no"', url=redis_url))
    assert no.stdout == f"{second['id']}\n"
    work(redis_url)
    record = show(redis_url, run_id)
    assert record["status"] == "completed"
    assert record["result"] == {"topic": "tea", "answers": ["yes", "no"], "done": True}
    assert "requests" not in record
    assert requests_json(redis_url, run_id) == []


def test_several_open_requests_need_answers_keyed_by_their_ids(
    redis_url: str, client: Client, redis_client: redis.Redis
) -> None:
    run_id = enqueue(redis_url, "reviewing", {"items": ["a", "b"]})
    work(redis_url)
    a, b = (r["id"] for r in requests_json(redis_url, run_id))
    refused = ok(graphq("runs", "answer", run_id, "--value", '"ok"', url=redis_url), 2)
    assert error_line(refused) == (
        "error: When there are multiple pending interrupts, you must specify the interrupt id when resuming: "
        "2 requests are pending; answer with a map of request id to value, or name one with "
        f"--request: ['{a}', '{b}']"
    )
    run = client.get_run(run_id)
    assert run.status == "awaiting_input"
    assert redis_client.exists(keys.answers(run.thread_id, "", run.head or "")) == 0  # nothing changed
    unknown = ok(graphq("runs", "answer", run_id, "--request", "0" * 16, "--value", '"x"', url=redis_url), 2)
    assert error_line(unknown) == (
        f"error: no pending request '{'0' * 16}'; pending: ['{a}', '{b}'] "
        "(an answered request is answered again on a new branch: answer_again / --again)"
    )
    keyed = json.dumps({a: "yes-a", b: "yes-b"})
    assert ok(graphq("runs", "answer", run_id, "--value", keyed, url=redis_url)).stdout == f"{a}\n{b}\n"
    work(redis_url)
    record = show(redis_url, run_id)
    assert record["status"] == "completed"
    assert record["result"] == {
        "items": ["a", "b"],
        "approvals": [["a", "yes-a"], ["b", "yes-b"]],
        "joined": 2,
    }


def test_one_request_at_a_time_with_request_and_output_json(redis_url: str) -> None:
    run_id = enqueue(redis_url, "reviewing", {"items": ["a", "b"]})
    work(redis_url)
    a, b = (r["id"] for r in requests_json(redis_url, run_id))
    done = ok(
        graphq("runs", "answer", run_id, "--request", b, "--value", '"yes-b"', "-o", "json", url=redis_url)
    )
    assert json.loads(done.stdout) == [b]
    work(redis_url)
    assert [r["id"] for r in requests_json(redis_url, run_id)] == [a]
    ok(graphq("runs", "answer", run_id, "--value", '"yes-a"', url=redis_url))
    work(redis_url)
    assert show(redis_url, run_id)["result"]["approvals"] == [["a", "yes-a"], ["b", "yes-b"]]


def test_bad_answers_are_refused_with_exit_2(redis_url: str) -> None:
    done_id = enqueue(redis_url, "looping", {"until": 1})
    work(redis_url)
    refused = ok(graphq("runs", "answer", done_id, "--value", '"x"', url=redis_url), 2)
    assert error_line(refused) == f"error: run {done_id} is completed, not awaiting input; nothing to answer"
    # (it made no requests: there is nothing to answer again either; see test_cli_requests.py)
    malformed = ok(graphq("runs", "answer", done_id, "--value", "{yes", url=redis_url), 2)
    assert error_line(malformed).startswith("error: --value: Expecting property name")
    missing = ok(graphq("runs", "answer", "f" * 32, "--value", '"x"', url=redis_url), 2)
    assert error_line(missing) == f"error: no run with id '{'f' * 32}'"


def test_requests_of_a_run_that_is_not_waiting(redis_url: str) -> None:
    run_id = enqueue(redis_url, "looping", {"until": 1})
    assert requests_json(redis_url, run_id) == []
    table = ok(graphq("runs", "requests", run_id, url=redis_url))
    every = f"graphq --redis-url {redis_url} --workflows {WORKFLOWS} runs requests {run_id} --all"
    assert (table.stdout, table.stderr) == (
        "",
        f"run {run_id} is queued: no open requests (every request it made: `{every}`)\n",
    )


def test_show_lists_the_open_requests_of_a_waiting_run(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "reviewing", {"items": ["a", "b"]})
    work(redis_url)
    a, b = client.requests(run_id)
    record = show(redis_url, run_id)
    assert record["status"] == "awaiting_input"
    assert [(r["id"], r["node"], r["value"]) for r in record["requests"]] == [
        (a.id, "approve", "approve a?"),
        (b.id, "approve", "approve b?"),
    ]
    table = ok(graphq("runs", "show", run_id, url=redis_url)).stdout
    assert "\nrequests:\n" in table
    assert re.search(rf"{a.id} .*approve .*open .*\"approve a\?\"", table)
    assert f"--request {b.id} --value '<JSON>'" in table


# -- answer --wait and graphq run ----------------------------------------------------------------------------


def test_run_pauses_with_exit_3_and_answer_wait_continues_it_here(redis_url: str, client: Client) -> None:
    paused = ok(graphq("run", "asking", "--input", '{"topic": "tea"}', url=redis_url), 3)
    run_id = re.findall(r"^run ([0-9a-f]{32}):", paused.stderr, re.MULTILINE)[0]
    [first] = client.requests(run_id)
    assert paused.stdout == (
        f"run {run_id} is waiting for input at step 1 (1 open request):\n"
        f'  {first.id}  ask_twice  {{"question": "first about tea?"}}\n'
        "answer with:\n"
        f"  graphq --redis-url {redis_url} --workflows {WORKFLOWS} runs answer {run_id} --value '<JSON>'\n"
    )
    assert "waiting for input after" in paused.stderr and "error:" not in paused.stderr
    again = ok(graphq("runs", "answer", run_id, "--value", '"yes"', "--wait", url=redis_url), 3)
    [second] = client.requests(run_id)
    assert f'  {second.id}  ask_twice  {{"question": "second?"}}\n' in again.stdout
    assert f"answered {first.id}; continuing run {run_id} here" in again.stderr
    done = ok(graphq("runs", "answer", run_id, "--value", '"no"', "--wait", url=redis_url))
    assert json.loads(done.stdout) == {"topic": "tea", "answers": ["yes", "no"], "done": True}
    assert "completed after" in done.stderr
    assert hitl.CALLS == {"ask_twice": 3, "finish": 1}


def test_run_output_json_of_a_paused_run_holds_its_requests(redis_url: str, client: Client) -> None:
    paused = ok(graphq("run", "reviewing", "--input", '{"items": ["x"]}', "-o", "json", url=redis_url), 3)
    record = json.loads(paused.stdout)
    [request] = client.requests(record["id"])
    assert record["status"] == "awaiting_input"
    assert record["requests"] == [
        {
            "id": request.id,
            "value": "approve x?",
            "node": "approve",
            "task_id": request.task_id,
            "index": 0,
            "created_at": request.created_at,
            "deadline_ms": None,
            "response_schema": None,
            "deadline": None,
        }
    ]


# -- cancel and resume ---------------------------------------------------------------------------------------


def test_cancel_a_queued_run_then_again_and_a_completed_run(redis_url: str) -> None:
    queued = enqueue(redis_url, "looping", {"until": 1})
    assert ok(graphq("runs", "cancel", queued, url=redis_url)).stdout == "canceled\n"
    record = show(redis_url, queued)
    assert (record["status"], record["error"]["message"]) == ("canceled", "canceled by request")
    again = ok(graphq("runs", "cancel", queued, "--interrupt", url=redis_url))
    assert again.stdout == f"run {queued} is already canceled; nothing changed\n"
    done = enqueue(redis_url, "looping", {"until": 1})
    work(redis_url)
    completed = ok(graphq("runs", "cancel", done, url=redis_url))
    assert completed.stdout == f"run {done} is already completed; nothing changed\n"
    assert show(redis_url, done)["status"] == "completed"


def test_cancel_a_waiting_run_then_resume_it(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "asking", {"topic": "tea"})
    work(redis_url)
    [request] = client.requests(run_id)
    assert ok(graphq("runs", "cancel", run_id, "--interrupt", url=redis_url)).stdout == "canceled\n"
    new_id = ok(graphq("runs", "resume", run_id, url=redis_url)).stdout.strip()
    work(redis_url)  # the thread is free again: the new run starts, and asks the same question again
    assert show(redis_url, new_id)["status"] == "awaiting_input"
    assert [r.value for r in client.requests(new_id)] == [request.value]


def test_resume_a_failed_run_completes_in_a_new_run(redis_url: str) -> None:
    failed = enqueue(redis_url, "flaky", {})
    work(redis_url)
    assert show(redis_url, failed)["status"] == "failed"
    new_id = ok(graphq("runs", "resume", failed, url=redis_url)).stdout.strip()
    assert RUN_ID.match(new_id) and new_id != failed
    work(redis_url)
    record = show(redis_url, new_id)
    assert (record["status"], record["continued_from_run_id"]) == ("completed", failed)
    assert record["result"] == {"value": 1, "sunk": 1}
    assert re.search(rf"continued from +│ {failed}", ok(graphq("runs", "show", new_id, url=redis_url)).stdout)
    refused = ok(graphq("runs", "resume", enqueue(redis_url, "looping", {"until": 1}), url=redis_url), 2)
    assert "only an ended run, or one stopped at a breakpoint, can be resumed" in error_line(refused)


def test_resume_wait_and_output_json(redis_url: str) -> None:
    failed = enqueue(redis_url, "flaky", {})
    work(redis_url)
    done = ok(graphq("runs", "resume", failed, "--wait", "-o", "json", url=redis_url))
    record = json.loads(done.stdout)
    assert (record["status"], record["continued_from_run_id"]) == ("completed", failed)
    assert record["result"] == {"value": 1, "sunk": 1}
    again = ok(graphq("runs", "resume", failed, "-o", "json", url=redis_url), 2)  # continued already
    assert error_line(again) == (
        f"error: run {failed} was continued by run {record['id']} already; its chain goes on from its last "
        f"run, {record['id']} (completed): resume that one"
    )
    empty = ok(graphq("runs", "resume", record["id"], "-o", "json", url=redis_url), 2)  # nothing left to run
    assert error_line(empty).startswith(f"error: run {record['id']} is completed and thread ")


# -- the approval example, end to end without a Redis URL (as in the docs) -----------------------------------


def local_env(tmp_path: Path) -> dict[str, str]:
    """No Redis URL, local data in tmp_path/data, the venv's ``graphq`` first on PATH."""
    base = clean_env()
    path = f"{SCRIPT.parent}{os.pathsep}{base.get('PATH', '')}"
    return {**base, "GRAPHQ_DATA_DIR": str(tmp_path / "data"), "PATH": path, "PYTHONUNBUFFERED": "1"}


def shell(command: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the installed graphq console script")
def test_approval_from_pause_to_completion_with_local_data(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    paused = shell("""graphq run approval --input '{"amount": 120, "requester": "ana"}'""", env, tmp_path)
    assert paused.returncode == 3, paused.stderr
    lines = paused.stdout.splitlines()
    run_id = lines[0].split()[1]
    assert lines[0] == f"run {run_id} is waiting for input at step 2 (1 open request):"
    assert re.fullmatch(
        r'  [0-9a-f]{16}  approve  \{"question": "Approve 120 for ana\?", "amount": 120\}', lines[1]
    )
    assert lines[2:] == ["answer with:", f"  graphq runs answer {run_id} --value '<JSON>'"]
    answer = lines[3].strip().replace("'<JSON>'", "'\"yes\"'")
    done = shell(answer, env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "120 for ana: approved\n  - assessed 120 for ana\n  - approved by a human\n  - paid 120 to ana\n"
    )
    assert "(embedded; data in" in done.stderr and "completed after" in done.stderr
    nothing = shell(f"graphq runs cancel {run_id}", env, tmp_path)
    assert nothing.stdout == f"run {run_id} is already completed; nothing changed\n"
    again = shell(f"graphq runs answer {run_id} --value '\"yes\"'", env, tmp_path)
    assert again.returncode == 2
    assert again.stderr.strip().endswith(
        f"error: run {run_id} is completed, not awaiting input; nothing to answer; to answer its request "
        f"again, on a new branch: graphq runs answer {run_id} --request {lines[1].split()[0]} --value "
        "'<JSON>' --again"
    )


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the installed graphq console script")
def test_approval_cancel_and_resume_with_local_data(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    paused = shell("""graphq run approval --input '{"amount": 5, "requester": "bo"}'""", env, tmp_path)
    assert paused.returncode == 3, paused.stderr
    run_id = paused.stdout.split()[1]
    assert shell(f"graphq runs cancel {run_id} --interrupt", env, tmp_path).stdout == "canceled\n"
    resumed = shell(f"graphq runs resume {run_id}", env, tmp_path)
    assert resumed.returncode == 3, resumed.stderr
    new_id = resumed.stdout.split()[1]
    assert new_id != run_id and f"run {new_id} continues run {run_id}" in resumed.stderr
    done = shell(
        f"""graphq runs answer {new_id} --value '{{"decision": "no", "note": "too small"}}'""", env, tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "5 for bo: rejected (too small)"


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the installed graphq console script")
def test_cancel_a_local_run_from_another_terminal(tmp_path: Path) -> None:
    """While `graphq run` holds the local data, other commands use its server: list, then cancel."""
    env = local_env(tmp_path)
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        payload = '{"amount": 1, "requester": "x", "audit_seconds": 30}'
        proc = subprocess.Popen(
            [str(SCRIPT), "run", "approval", "--input", payload],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while "step   1" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        run_id = re.findall(r"^run ([0-9a-f]{32}):", log.read_text(), re.MULTILINE)[0]
        listed = shell("graphq runs list -o json", env, tmp_path)
        assert [r["status"] for r in json.loads(listed.stdout)] == ["running"], listed.stderr
        canceled = shell(f"graphq runs cancel {run_id} --interrupt", env, tmp_path)
        assert canceled.stdout == (
            "cancel requested: running nodes are signalled and the run stops before its next super-step\n"
        )
        assert proc.wait(10) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (
        f"error: run {run_id} canceled at step 2: Canceled: canceled by request; running nodes were signalled"
        in log.read_text()
    )
    assert not (tmp_path / "data" / "server.url").exists()


# -- the approval example in-process -------------------------------------------------------------------------


def test_approval_yes_path() -> None:
    graph = build_graph(InMemoryCheckpointStore())
    cfg = {"thread_id": "t-yes"}
    paused = graph.invoke({"amount": 120, "requester": "ana"}, cfg)
    [request] = paused.pop(INTERRUPT_KEY)
    assert paused == {"amount": 120, "requester": "ana", "log": ["assessed 120 for ana"]}
    assert (request.node, request.value) == ("approve", {"question": "Approve 120 for ana?", "amount": 120})
    final = graph.invoke(Command(resume="yes"), cfg)
    assert final == {
        "amount": 120,
        "requester": "ana",
        "decision": "approved",
        "log": ["assessed 120 for ana", "approved by a human", "paid 120 to ana"],
    }
    assert format_result(final) == (
        "120 for ana: approved\n  - assessed 120 for ana\n  - approved by a human\n  - paid 120 to ana"
    )


def test_approval_no_path_with_a_note_after_an_unclear_answer() -> None:
    graph = build_graph(InMemoryCheckpointStore())
    cfg = {"thread_id": "t-no"}
    graph.invoke({"amount": 9.5, "requester": "bo"}, cfg)
    [again] = graph.invoke(Command(resume="maybe"), cfg)[INTERRUPT_KEY]
    assert again.index == 1
    assert again.value == {
        "question": "Approve 9.5 for bo? Please answer yes or no (got 'maybe').",
        "amount": 9.5,
    }
    final = graph.invoke(Command(resume={"decision": "No", "note": "over budget"}), cfg)
    assert final == {
        "amount": 9.5,
        "requester": "bo",
        "decision": "rejected",
        "note": "over budget",
        "log": ["assessed 9.5 for bo", "rejected by a human: over budget", "told bo no"],
    }
    assert format_result(final).splitlines()[0] == "9.5 for bo: rejected (over budget)"


def test_approval_audit_and_bad_input() -> None:
    graph = build_graph(InMemoryCheckpointStore())
    paused = graph.invoke({"amount": 1, "requester": "cy", "audit_seconds": 1}, {"thread_id": "t-audit"})
    assert paused["log"] == ["assessed 1 for cy", "audited for 1 s"]
    with pytest.raises(NodeError, match="amount must be a positive number, got 0"):
        build_graph().invoke({"amount": 0, "requester": "cy"})


@pytest.mark.parametrize(
    ("answer", "parsed"),
    [
        ("yes", ("approved", "")),
        (" NO ", ("rejected", "")),
        ({"decision": "yes"}, ("approved", "")),
        ({"decision": "no", "note": "n"}, ("rejected", "n")),
        ("maybe", None),
        (True, None),
        ({"decision": "yes", "note": 3}, None),
        ({}, None),
    ],
)
def test_parse_answer(answer: Any, parsed: tuple[str, str] | None) -> None:
    assert parse_answer(answer) == parsed


def test_answer_again_starts_a_branch_run(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "chat", {"messages": [{"id": "h1", "role": "human", "content": "maps"}]})
    work(redis_url)
    [request] = requests_json(redis_url, run_id)
    early = graphq(
        "runs", "answer", run_id, "--request", request["id"], "--value", '"no"', "--again", url=redis_url
    )
    assert (early.exit_code, error_line(early)) == (
        2,
        f"error: request {request['id']} of run {run_id} is open: answer it first; a second answer (a "
        "branch) is for a request already answered",
    )
    ok(graphq("runs", "answer", run_id, "--value", '"yes"', url=redis_url))
    work(redis_url)
    assert show(redis_url, run_id)["status"] == "completed"
    refused = graphq("runs", "answer", run_id, "--value", '"no"', "--again", url=redis_url)
    assert refused.exit_code == 2 and "--again needs --request ID" in error_line(refused)
    branched = ok(
        graphq(
            "runs", "answer", run_id, "--request", request["id"], "--value", '"no"', "--again", url=redis_url
        )
    )
    branch_id = branched.stdout.strip()
    work(redis_url)
    record = show(redis_url, branch_id)
    assert (record["status"], record["continued_from_run_id"]) == ("completed", run_id)
    assert record["result"]["messages"][-1]["content"] == "done: lookup(maps) approved=no"


def test_an_answer_while_graphq_is_disabled_says_when_it_continues(redis_url: str, client: Client) -> None:
    run_id = enqueue(redis_url, "asking", {"topic": "tea"})
    work(redis_url)
    ok(graphq("disable", "--reason", "maintenance", url=redis_url))
    answered = ok(graphq("runs", "answer", run_id, "--value", '"yes"', url=redis_url))
    assert f"run {run_id} continues once `graphq enable` turns graphq on (it is off since " in answered.stderr
    assert "(reason: maintenance))" in answered.stderr
    ok(graphq("enable", url=redis_url))
