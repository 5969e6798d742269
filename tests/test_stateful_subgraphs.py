"""Subgraphs by their checkpointer on real workers: a ``checkpointer=True`` subgraph keeps its
state across runs of its parent's thread (in its namespace without task ids), with and without a pause;
an ``interrupt()`` in a ``checkpointer=False`` subgraph fails the run with graphq's message."""

from __future__ import annotations

import pytest

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import Procs, worker_env

REGISTRY = Registry.load(["tests.workflows.stateful"])


@pytest.fixture(autouse=True)
def _worker(procs: Procs, redis_url: str) -> None:
    procs.start("worker", env=worker_env(redis_url, "tests.workflows.stateful"))


def run(client: Client, workflow: str, thread: str) -> tuple[RunStatus, object]:
    (record,) = client.wait([client.enqueue(workflow, {"out": ""}, thread_id=thread)], timeout_s=30)
    return record.status, record.result


def test_a_stateful_subgraph_keeps_its_state_across_runs_of_a_thread(client: Client) -> None:
    assert [run(client, "stateful-counter", "t1") for _ in range(2)] == [
        (RunStatus.COMPLETED, {"out": "seen 0"}),
        (RunStatus.COMPLETED, {"out": "seen 1"}),
    ]
    assert run(client, "stateful-counter", "t2") == (RunStatus.COMPLETED, {"out": "seen 0"})
    history = client.checkpoints.list("t1", ns="sub")
    assert [cp.channel_values["seen"] for cp in history[:1]] == [["x", "x"]]


def test_a_stateful_subgraph_pauses_and_goes_on_across_runs(client: Client) -> None:
    for answer, out in (("one", "one:0"), ("two", "two:1")):
        run_id = client.enqueue("stateful-asker", {"out": ""}, thread_id="t")
        (paused,) = client.wait([run_id], timeout_s=30)
        assert paused.status == RunStatus.AWAITING_INPUT
        assert [r.value for r in client.requests(run_id)] == ["which?"]
        client.answer(run_id, answer)
        (done,) = client.wait([run_id], timeout_s=30)
        assert (done.status, done.result) == (RunStatus.COMPLETED, {"out": out})


def test_an_interrupt_in_a_subgraph_without_checkpoints_fails_the_run(client: Client) -> None:
    (record,) = client.wait([client.enqueue("stateless-asker", {"out": ""}, thread_id="t")], timeout_s=30)
    assert record.status == RunStatus.FAILED
    assert record.error is not None
    assert record.error.message.startswith(
        "interrupt() in node 'inner' of a subgraph compiled with checkpointer=False: it keeps no checkpoints"
    )


def test_a_run_from_an_earlier_checkpoint_runs_the_subgraph_on_its_state_of_then(client: Client) -> None:
    """A run enqueued from the second turn's checkpoint (a fork) finds the subgraph as it was then (one turn
    seen, LangGraph's replay), not its latest (three); the next turn goes on from that branch."""
    outs = [run(client, "stateful-counter", "t1") for _ in range(3)]
    assert outs == [(RunStatus.COMPLETED, {"out": f"seen {n}"}) for n in range(3)]
    before_sub = [cp for cp in client.checkpoints.list("t1") if [t.node for t in cp.next_tasks] == ["sub"]]
    config = {"checkpoint_id": before_sub[1].id}
    (record,) = client.wait(
        [client.enqueue("stateful-counter", None, thread_id="t1", config=config)], timeout_s=30
    )
    assert (record.status, record.result) == (RunStatus.COMPLETED, {"out": "seen 1"})
    assert run(client, "stateful-counter", "t1") == (RunStatus.COMPLETED, {"out": "seen 2"})


def test_an_answer_resumes_a_subgraph_with_its_own_saver(client: Client) -> None:
    """Its question is answered by id and it goes on at the node that asked, with the state ``first`` left
    (its checkpoints are in the run's thread, not in a saver of the worker's)."""
    run_id = client.enqueue("own-saver-asker", {"out": ""}, thread_id="t")
    (paused,) = client.wait([run_id], timeout_s=30)
    assert paused.status == RunStatus.AWAITING_INPUT
    (request,) = client.requests(run_id)
    assert request.value == "which?"
    client.answer(run_id, {request.id: "yes"})
    (done,) = client.wait([run_id], timeout_s=30)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"out": "yes:1"})


def test_deleting_the_thread_removes_the_stateful_subgraphs_checkpoints(client: Client) -> None:
    run(client, "stateful-counter", "t1")
    assert client.kv.exists(keys.history("t1", "sub"))
    client.delete_thread("t1")
    assert sorted(client.kv.scan_iter(match=keys.thread_pattern("t1"))) == []
