"""Waiting stops at a run that waits for input: ``Client.wait`` and ``graphq enqueue --wait`` (exit 3, with
the open requests and how to answer them, as ``graphq run`` prints them), with one ``graphq worker`` process
that the tests share."""

from __future__ import annotations

import json
import subprocess

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import graphq, worker_env

WORKFLOWS = "tests.workflows.hitl"
REGISTRY = Registry.load([WORKFLOWS])


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    return worker_env(redis_url, WORKFLOWS)


def test_client_wait_returns_at_each_pause_and_at_the_end(
    client: Client, module_worker: subprocess.Popen[bytes]
) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"})
    [paused] = client.wait([run_id], timeout_s=20)
    assert (paused.status, paused.result) == (RunStatus.AWAITING_INPUT, None)
    assert [r.value for r in client.requests(run_id)] == [{"question": "first about tea?"}]
    client.answer(run_id, "green")
    [again] = client.wait([run_id], timeout_s=20)
    assert again.status == RunStatus.AWAITING_INPUT
    assert [r.value for r in client.requests(run_id)] == [{"question": "second?"}]
    client.answer(run_id, "hot")
    [done] = client.wait([run_id], timeout_s=20)
    assert (done.status, done.result) == (
        RunStatus.COMPLETED,
        {"topic": "tea", "answers": ["green", "hot"], "done": True},
    )


def test_enqueue_wait_exits_3_with_the_open_request_and_the_answer_command(
    client: Client, env: dict[str, str], module_worker: subprocess.Popen[bytes]
) -> None:
    done = graphq("enqueue", "asking", "--input", '{"topic": "tea"}', "--wait", env=env, timeout=30)
    assert done.returncode == 3, done.stderr
    run_id = done.stdout.splitlines()[0]
    [request] = client.requests(run_id)
    assert done.stdout.splitlines() == [
        run_id,
        f"run {run_id} is waiting for input at step 1 (1 open request):",
        f'  {request.id}  ask_twice  {{"question": "first about tea?"}}',
        "answer with:",
        f"  graphq runs answer {run_id} --value '<JSON>'",
    ]
    assert "error:" not in done.stderr and "Traceback" not in done.stderr


def test_enqueue_wait_on_a_run_with_two_requests_lists_both(
    client: Client, env: dict[str, str], module_worker: subprocess.Popen[bytes]
) -> None:
    done = graphq("enqueue", "reviewing", "--input", '{"items": ["a", "b"]}', "--wait", env=env, timeout=30)
    assert done.returncode == 3, done.stderr
    run_id = done.stdout.splitlines()[0]
    first, second = client.requests(run_id)
    answer = f"graphq runs answer {run_id}"
    assert done.stdout.splitlines() == [
        run_id,
        f"run {run_id} is waiting for input at step 1 (2 open requests):",
        f'  {first.id}  approve  "approve a?"',
        f'  {second.id}  approve  "approve b?"',
        "answer all with (or one by one, with --request):",
        f'  {answer} --value \'{{"{first.id}": <JSON>, "{second.id}": <JSON>}}\'',
        f"  {answer} --request {first.id} --value '<JSON>'",
        f"  {answer} --request {second.id} --value '<JSON>'",
    ]


def test_enqueue_wait_json_gives_the_record_with_its_requests(
    client: Client, env: dict[str, str], module_worker: subprocess.Popen[bytes]
) -> None:
    done = graphq(
        "enqueue", "asking", "--input", '{"topic": "tea"}', "--wait", "--output", "json", env=env, timeout=30
    )
    assert done.returncode == 3, done.stderr
    [record] = json.loads(done.stdout)
    [request] = client.requests(record["id"])
    assert (record["status"], record["workflow"]) == ("awaiting_input", "asking")
    assert [(r["id"], r["node"], r["value"]) for r in record["requests"]] == [
        (request.id, "ask_twice", {"question": "first about tea?"})
    ]
    client.answer(record["id"], "green")  # answered: the next wait goes on to the second question
    [again] = client.wait([record["id"]], timeout_s=20)
    assert again.status == RunStatus.AWAITING_INPUT
