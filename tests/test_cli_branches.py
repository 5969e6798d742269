"""The human-in-the-loop walkthrough of the docs, through the CLI with `graphq worker` subprocesses:
a second answer and a plain fork each start a branch, and the first branch keeps its values."""

from __future__ import annotations

import json
from typing import Any

from click.testing import Result

from tests.cli_helpers import invoke, ok
from tests.envs import clean_env
from tests.workers import burst

APPROVED_LOG = ["assessed 120 for ana", "approved by a human", "paid 120 to ana"]
REJECTED_LOG = ["assessed 120 for ana", "rejected by a human", "told ana no"]


def graphq(url: str, *args: str) -> Result:
    return ok(invoke("graphq.examples.approval", url, *args))


def work(url: str) -> None:
    """One burst of a `graphq worker` subprocess (the approval workflow is an entry point)."""
    burst(clean_env(GRAPHQ_REDIS_URL=url))


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)


def state(url: str, thread: str, checkpoint: str) -> dict[str, Any]:
    values: dict[str, Any] = as_json(graphq(url, "state", thread, "-c", checkpoint, "-o", "json"))["values"]
    return values


def watched_values(url: str, run_id: str) -> list[dict[str, Any]]:
    lines = graphq(url, "runs", "watch", run_id, "--mode", "values", "-o", "json").stdout.splitlines()
    return [json.loads(line)["data"] for line in lines]


def ask(url: str) -> tuple[str, str, str]:
    """Enqueue the walkthrough's run and work it until it asks; returns (run, thread, request id)."""
    run_id = graphq(url, "enqueue", "approval", "--input", '{"amount": 120, "requester": "ana"}').stdout
    run_id = run_id.strip()
    work(url)
    [request] = as_json(graphq(url, "runs", "requests", run_id, "-o", "json"))
    return run_id, as_json(graphq(url, "runs", "show", run_id, "-o", "json"))["thread_id"], request["id"]


def test_a_second_answer_branches_and_the_first_branch_stays_approved(redis_url: str) -> None:
    run_id, thread, request = ask(redis_url)
    graphq(redis_url, "runs", "answer", run_id, "--value", '"yes"')
    work(redis_url)
    first = as_json(graphq(redis_url, "runs", "show", run_id, "-o", "json"))
    assert first["status"] == "completed"
    first_head = as_json(graphq(redis_url, "state", thread, "-o", "json"))["checkpoint_id"]

    branch_id = graphq(
        redis_url, "runs", "answer", run_id, "--request", request, "--value", '"no"', "--again"
    ).stdout.strip()
    work(redis_url)

    approved = {"amount": 120, "requester": "ana", "decision": "approved", "log": APPROVED_LOG}
    rejected = {"amount": 120, "requester": "ana", "decision": "rejected", "log": REJECTED_LOG}
    assert state(redis_url, thread, first_head) == approved
    assert as_json(graphq(redis_url, "runs", "show", run_id, "-o", "json"))["result"] == approved
    branch = as_json(graphq(redis_url, "runs", "show", branch_id, "-o", "json"))
    assert (branch["status"], branch["result"]) == ("completed", rejected)
    assert as_json(graphq(redis_url, "state", thread, "-o", "json"))["values"] == rejected
    assert watched_values(redis_url, run_id)[-1] == approved
    assert watched_values(redis_url, branch_id)[-1] == rejected


def test_a_fork_answered_differently_keeps_the_first_branchs_note(redis_url: str) -> None:
    run_id, thread, _ = ask(redis_url)
    graphq(redis_url, "runs", "answer", run_id, "--value", '{"decision": "yes", "note": "first"}')
    work(redis_url)
    history = as_json(graphq(redis_url, "state", thread, "--history", "-o", "json"))
    first_head = history[0]["checkpoint_id"]
    [step0] = [cp["checkpoint_id"] for cp in history if cp["step"] == 0]

    fork_id = graphq(
        redis_url, "enqueue", "approval", "--thread", thread, "--checkpoint", step0
    ).stdout.strip()
    work(redis_url)
    graphq(redis_url, "runs", "answer", fork_id, "--value", '{"decision": "yes", "note": "second"}')
    work(redis_url)

    first = state(redis_url, thread, first_head)
    assert (first["note"], first["log"][1]) == ("first", "approved by a human: first")
    assert as_json(graphq(redis_url, "runs", "show", run_id, "-o", "json"))["result"]["note"] == "first"
    fork = as_json(graphq(redis_url, "runs", "show", fork_id, "-o", "json"))
    assert (fork["status"], fork["result"]["note"]) == ("completed", "second")
    assert fork["result"]["log"] == ["assessed 120 for ana", "approved by a human: second", "paid 120 to ana"]
