"""What ``resume`` refuses: a second resume of one breakpoint stop
(also two racing: one goes on, the other gets the refusal, no extra run), a stale resume reaching a later
stop, a run waiting in ``interrupt()`` (answer continues it), a completed run whose thread has nothing left
to run; and the hints ``graphq runs watch`` / ``requests`` give at a breakpoint. Real Redis; the CLI
(in-process) against a ``graphq worker`` subprocess."""

from __future__ import annotations

import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from tests.cli_helpers import run_in_process
from tests.workers import ended, wait_for, work, worker_env

REGISTRY = Registry.load(["tests.workflows.breakpoints"])


def gone_on(run_id: str, nodes: str, status: str) -> str:
    return (
        f"run {run_id} went on past its breakpoint (before {nodes}) already (another resume); it is {status} "
        "now"
    )


def resume_or_refusal(client: Client, run_id: str, barrier: threading.Barrier) -> str:
    barrier.wait()
    try:
        return client.resume(run_id)
    except InvalidUpdateError as exc:
        return str(exc)


@pytest.mark.parametrize("round_", range(3))
def test_two_racing_resumes_of_one_stop_let_it_go_on_once(client: Client, round_: int) -> None:
    """Before: one 'went on' and one extra empty run (or a misleading 'nothing to answer')."""
    run_id = client.enqueue("stops_before", {"items": ["x"]}, thread_id=f"race-{round_}")
    work(client)
    barrier = threading.Barrier(2)
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: resume_or_refusal(client, run_id, barrier), range(2)))
    assert sorted(outcomes, key=lambda o: o != run_id) == [run_id, gone_on(run_id, "['b']", "queued")]
    assert [r.id for r in client.thread_runs(f"race-{round_}")] == [run_id]
    work(client)
    assert ended(client, run_id).result == {"items": ["x", "a", "b", "c"]}


@pytest.mark.parametrize("round_", range(3))
def test_two_racing_resumes_of_one_ended_run_continue_it_once(client: Client, round_: int) -> None:
    """Before: both returned a new run id (two continuations of one run, the second unlinked)."""
    thread = f"ended-{round_}"
    run_id = client.enqueue("stops_before", {"items": ["x"]}, thread_id=thread)
    work(client)
    assert client.cancel(run_id) == "canceled"
    barrier = threading.Barrier(2)
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: resume_or_refusal(client, run_id, barrier), range(2)))
    new_id = client.get_run(run_id).continued_by_run_id
    assert sorted(outcomes, key=lambda o: o != new_id) == [
        new_id,
        f"run {run_id} was continued by run {new_id} already; its chain goes on from its last run, {new_id} "
        "(queued): resume that one",
    ]
    assert [r.id for r in client.thread_runs(thread)] == [run_id, new_id]
    work(client)
    assert ended(client, str(new_id)).result == {"items": ["x", "a", "b", "c"]}


def test_a_resume_that_read_one_stop_does_not_pass_the_next(client: Client) -> None:
    """The check is on the stop read, not only the status: a racing resume that read the stop before b
    and commits after the run stopped again before c is refused, and the run stays at c."""
    run_id = client.enqueue("stops_twice", {"items": []}, thread_id="t")
    work(client)
    first = client.get_run(run_id)
    assert client.resume(run_id) == run_id
    work(client)
    assert (client.get_run(run_id).breakpoint or {})["nodes"] == ["c"]
    with pytest.raises(InvalidUpdateError) as caught:
        client._pass_breakpoint(first)  # the transaction of a resume that read the run at its first stop
    assert str(caught.value) == gone_on(run_id, "['b']", "awaiting_input")
    now = client.get_run(run_id)
    assert (now.status, now.breakpoint and now.breakpoint["continued"]) == (RunStatus.AWAITING_INPUT, False)
    assert client.resume(run_id) == run_id
    work(client)
    assert ended(client, run_id).result == {"items": ["a", "b", "c"]}


def test_a_run_waiting_for_an_answer_is_not_resumed(client: Client) -> None:
    run_id = client.enqueue("asks_after_a_stop", {"items": []})
    work(client)
    client.resume(run_id)
    work(client)
    with pytest.raises(InvalidUpdateError) as caught:
        client.resume(run_id)
    assert str(caught.value) == (
        f"run {run_id} is awaiting_input: it waits for an answer to its request, not a resume; answer it "
        f"(graphq runs answer {run_id} --value JSON; its requests: graphq runs requests {run_id})"
    )


def test_a_completed_thread_is_resumed_only_with_next_tasks(client: Client) -> None:
    """Before: a resume of a completed run made a run of 0 steps. After an update with as_node the
    thread has next tasks, and a resume runs them."""
    run_id = client.enqueue("three_steps", {"items": []}, thread_id="done")
    work(client)
    assert ended(client, run_id).result == {"items": ["a", "b", "c"]}
    with pytest.raises(InvalidUpdateError) as caught:
        client.resume(run_id)
    assert str(caught.value) == (
        f"run {run_id} is completed and thread 'done' has nothing left to run (its latest checkpoint, step "
        "3, has no next tasks): a resume would be an empty run; start a run with input on the thread "
        "(graphq enqueue three_steps --thread done --input JSON)"
    )
    assert [r.id for r in client.thread_runs("done")] == [run_id]
    client.update_state("three_steps", "done", {"items": ["u"]}, as_node="a")
    again = client.resume(run_id)
    work(client)
    assert ended(client, again).result == {"items": ["a", "b", "c", "u", "b", "c"]}


def test_a_run_canceled_before_it_began_is_resumed_with_its_input(client: Client) -> None:
    """It was resumed without input: its input never applied, the new run started from an empty state (from
    a new-user trial: an approval's resume failed on a missing amount)."""
    run_id = client.enqueue("three_steps", {"items": ["x"]}, thread_id="early")
    assert client.cancel(run_id) == "canceled"
    again = client.resume(run_id)
    assert client.get_run(again).input == {"items": ["x"]}
    work(client)
    assert ended(client, again).result == {"items": ["x", "a", "b", "c"]}


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.breakpoints", tmp_path)


def test_the_cli_points_a_breakpoint_to_resume_and_a_request_to_answer(
    client: Client, worker: subprocess.Popen[bytes], env: dict[str, str]
) -> None:
    run_id = run_in_process(
        "enqueue", "asks_after_a_stop", "--input", '{"items": []}', env=env
    ).stdout.strip()
    wait_for(lambda: client.get_run(run_id).status == RunStatus.AWAITING_INPUT, what="the stop")
    watched = run_in_process("runs", "watch", run_id, "-o", "json", env=env)
    after = json.loads(watched.stdout.splitlines()[-1])["id"]
    assert (watched.returncode, watched.stderr.splitlines()[-1]) == (
        3,
        f"run {run_id} stopped at a breakpoint (before ['b']); let it go on with `graphq runs resume "
        f"{run_id}`, then follow it with `graphq runs watch {run_id} --after {after}`",
    )
    listed = run_in_process("runs", "requests", run_id, env=env)
    assert (listed.returncode, listed.stdout, listed.stderr) == (
        0,
        "",
        f"run {run_id} stopped at a breakpoint (before ['b']), with no open requests; let it go on with "
        f"`graphq runs resume {run_id}`\n",
    )
    assert run_in_process("runs", "resume", run_id, env=env).stdout == f"{run_id}\n"
    wait_for(lambda: client.requests(run_id), what="the request")
    refused = run_in_process("runs", "resume", run_id, env=env)
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        2,
        "",
        f"error: run {run_id} is awaiting_input: it waits for an answer to its request, not a resume; answer "
        f"it (graphq runs answer {run_id} --value JSON; its requests: graphq runs requests {run_id})\n",
    )
    assert run_in_process("runs", "answer", run_id, "--value", '"yes"', env=env).returncode == 0
    assert ended(client, run_id).result == {"items": ["a", "b:yes"]}
    empty = run_in_process("runs", "resume", run_id, env=env)
    thread = client.get_run(run_id).thread_id
    assert (empty.returncode, empty.stdout, empty.stderr) == (
        2,
        "",
        f"error: run {run_id} is completed and thread {thread!r} has nothing left to run (its latest "
        "checkpoint, step 2, has no next tasks): a resume would be an empty run; start a run with input on "
        f"the thread (graphq enqueue asks_after_a_stop --thread {thread} --input JSON)\n",
    )
