"""A nested graph's finished tasks survive a worker crash (I2), with a real `graphq worker`
subprocess SIGKILLed mid-step: a graph run inside a node (ToolNode's calls, a subgraph node's Send fan-out)
saves each finished task's writes as it finishes, so the continuation's re-run of that node replays them
and runs only the task that had not finished; in process, those writes are in the store while the step is
still running."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import START, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints.layout import decode_writes
from graphcore.engine.registry import Registry
from graphcore.messages import HumanMessage
from graphcore.settings import Settings
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.queue import RQStepQueue
from tests.workers import Procs, line_count, wait_for, worker_env
from tests.workflows import nested_kill

REGISTRY = Registry.load(["tests.workflows.nested_kill"])


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(
        redis_url,
        "tests.workflows.nested_kill",
        tmp_path,
        GRAPHQ_LEASE_TTL_S="1",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.2",
    )


@pytest.fixture
def queue_client(redis_client: redis.Redis, redis_url: str) -> Client:
    return Client(redis_client, REGISTRY, RQStepQueue(redis_client, Settings(redis_url=redis_url)))


@pytest.fixture
def in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A test dir of its own for the in-process invoke giving the expected result (its go file there)."""
    here = tmp_path / "invoke"
    here.mkdir()
    (here / "go").touch()
    monkeypatch.setenv("GRAPHQ_TEST_DIR", str(here))
    yield here


def _inner_writes(kv: redis.Redis, thread: str, node: str) -> int:
    """Entries of node tasks in the pending-writes hashes of the graphs node ``node``'s tasks invoked (their
    namespace starts ``node:``), on ``thread`` (not the input's, kept with their input checkpoints)."""
    pattern = keys.pending_writes(thread, f"{node}:*", "*")
    entries = [decode_writes(blob) for k in kv.scan_iter(match=pattern) for blob in kv.hvals(k)]
    return sum(1 for tw in entries if tw.node != START)


def _kill_mid_step_and_continue(
    client: Client, kv: redis.Redis, procs: Procs, env: dict[str, str], tmp_path: Path, run_id: str, node: str
) -> Any:
    """Start a worker, wait until the slow task (``*-0``) of ``node``'s nested step runs and both its
    siblings' writes are saved, SIGKILL the worker, continue the run (reaper sweep, burst worker) with the
    go file there; the continuation's result."""
    thread = client.get_run(run_id).thread_id
    worker = procs.start("worker", env=env)
    name = "stool" if node == "tools" else "work"
    wait_for(
        lambda: (
            line_count(tmp_path / f"{name}-0.log") == 1
            and [line_count(tmp_path / f"{name}-{i}.end") for i in (1, 2)] == [1, 1]
            and _inner_writes(kv, thread, node) == 2
        ),
        timeout_s=30,
        what="two finished tasks' saved writes beside the slow one",
    )
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)
    assert client.get_run(run_id).status == RunStatus.RUNNING
    wait_for(lambda: kv.exists(keys.lease(thread, run_id)) == 0, timeout_s=5, what="the lease to lapse")
    (tmp_path / "go").touch()
    [(old, outcome)] = Reaper(kv, Settings(redis_url=env["GRAPHQ_REDIS_URL"])).sweep()
    assert (old, outcome.verdict) == (run_id, "continued")
    second = procs.start("worker", "--burst", env=env)
    assert second.wait(60) == 0, procs.logged(second)
    [final] = client.wait([run_id], timeout_s=10)
    assert (final.id, final.status, final.continued_from_run_id) == (
        outcome.detail,
        RunStatus.COMPLETED,
        run_id,
    )
    return final.result


def test_a_toolnodes_finished_calls_do_not_run_again_after_a_sigkill(
    queue_client: Client,
    redis_client: redis.Redis,
    procs: Procs,
    env: dict[str, str],
    tmp_path: Path,
    in_process: Path,
) -> None:
    """The trial's t-toolkill: three tool calls, two finished and the third running when the worker is
    SIGKILLed; after the continuation completes each call ran once more only if it had not finished (the
    slow call twice, the others once) and the result equals invoke's."""
    expected = nested_kill.toolkill.invoke({"messages": [HumanMessage("go", id="h1")]})
    assert expected["messages"][-1].content == "ok s0,s1,s2"
    run_id = queue_client.enqueue("t-toolkill", {"messages": [HumanMessage("go", id="h1")]})
    result = _kill_mid_step_and_continue(queue_client, redis_client, procs, env, tmp_path, run_id, "tools")
    assert [line_count(tmp_path / f"stool-{i}.log") for i in range(3)] == [2, 1, 1]
    assert [line_count(tmp_path / f"stool-{i}.end") for i in range(3)] == [1, 1, 1]
    assert _without_tool_ids(result) == _without_tool_ids(expected)


def _without_tool_ids(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of ``state``, a ToolMessage's id left out (the messages reducer gives it a new uuid)."""
    return [m.model_dump(exclude={"id"} if m.type == "tool" else set()) for m in state["messages"]]


def test_a_subgraph_nodes_finished_send_tasks_do_not_run_again_after_a_sigkill(
    queue_client: Client,
    redis_client: redis.Redis,
    procs: Procs,
    env: dict[str, str],
    tmp_path: Path,
    in_process: Path,
) -> None:
    """t-subsend: a subgraph node whose inner step fans out to three Send tasks, two finished and the third
    running when the worker is SIGKILLed: the continuation runs only the third again; invoke's result."""
    expected = nested_kill.subsend.invoke({"items": [0, 1, 2]})
    assert expected == {"items": [0, 1, 2], "done": [0, 10, 20]}
    run_id = queue_client.enqueue("t-subsend", {"items": [0, 1, 2]})
    result = _kill_mid_step_and_continue(queue_client, redis_client, procs, env, tmp_path, run_id, "sub")
    assert [line_count(tmp_path / f"work-{i}.log") for i in range(3)] == [2, 1, 1]
    assert result == expected


# -- in process ---------------------------------------------------------------------------------------------


def test_an_inner_steps_finished_tasks_are_saved_while_a_sibling_still_runs(
    redis_client: redis.Redis,
) -> None:
    """In process with a Redis checkpointer: a subgraph node's inner step of three Send tasks saves each
    finished task's writes as it finishes (two entries in the inner namespace's pending writes while task 0
    still runs); the run then completes with every task's writes, as invoke without the wait."""
    release, finished = threading.Event(), threading.Semaphore(0)

    def work(i: int) -> dict[str, Any]:
        if i == 0:
            assert release.wait(10)
        else:
            finished.release()
        return {"done": [i * 10]}

    inner = StateGraph(nested_kill.Fan)
    inner.add_node("work", work)
    inner.add_conditional_edges(START, nested_kill.spread, ["work"])
    outer = StateGraph(nested_kill.Fan)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    graph = outer.compile(checkpointer=RedisCheckpointStore(redis_client))
    config = {"configurable": {"thread_id": "m1-inproc"}}
    results: list[Any] = []
    runner = threading.Thread(target=lambda: results.append(graph.invoke({"items": [0, 1, 2]}, config)))
    runner.start()
    try:
        assert finished.acquire(timeout=10) and finished.acquire(timeout=10)
        wait_for(lambda: _inner_writes(redis_client, "m1-inproc", "sub") == 2, timeout_s=5, what="two saves")
        assert not release.is_set() and runner.is_alive()
    finally:
        release.set()
        runner.join(10)
    assert results == [{"items": [0, 1, 2], "done": [0, 10, 20]}]
