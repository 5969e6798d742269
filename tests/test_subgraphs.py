"""Subgraphs on the queue (G7, X3): namespaces, interrupts surfacing on the parent, explicit child threads,
cancellation reaching a running subgraph."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.store import RedisCheckpointStore
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from graphq.worker.step.substore import FencedStore
from tests.test_store import SCHEMA, child
from tests.workers import Procs, burst, line_count, wait_for, work, worker_env
from tests.workflows import subgraphs

REGISTRY = Registry.load(["tests.workflows.subgraphs"])


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    subgraphs.CALLS.clear()


def test_parallel_subgraphs_interrupt_separately_and_join_once(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("batch-review", {"items": ["a", "b"]})
    work(client)
    pending = client.requests(run_id)
    assert [(r.node, r.value) for r in pending] == [("review", "ok a?"), ("review", "ok b?")]
    assert len({r.id for r in pending}) == 2
    with pytest.raises(InvalidUpdateError, match="2 requests are pending"):
        client.answer(run_id, "yes")

    client.answer(run_id, {pending[0].id: "yes"})
    work(client)
    assert [r.id for r in client.requests(run_id)] == [pending[1].id]
    assert subgraphs.CALLS["join"] == 0

    client.answer(run_id, {pending[1].id: "no"})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result == {"items": ["a", "b"], "notes": ["a:yes", "b:no"], "joined": 2}
    assert subgraphs.CALLS == {"review:a": 2, "review:b": 2, "join": 1}
    namespaces = {k.decode().split(":cp:")[1] for k in client.kv.scan_iter(match="graphq:*:cp:*")}
    assert len([ns for ns in namespaces if ns.startswith("reviewer:")]) == 2  # one namespace per instance


def test_answering_both_subgraph_requests_at_once(client: Client, redis_url: str) -> None:
    run_id = client.enqueue("batch-review", {"items": ["x", "y"]})
    work(client)
    first, second = client.requests(run_id)
    assert sorted(client.answer(run_id, {first.id: "1", second.id: "2"})) == sorted([first.id, second.id])
    work(client)
    run = client.get_run(run_id)
    assert run.result == {"items": ["x", "y"], "notes": ["x:1", "y:2"], "joined": 2}
    assert subgraphs.CALLS["join"] == 1


def test_child_graph_with_its_own_thread_keeps_its_lineage(client: Client, redis_url: str) -> None:
    for _ in range(2):
        client.enqueue("outer", {})
        work(client)
    runs = [client.get_run(r.id) for r in client.list_runs()]
    assert [r.result for r in runs] == [{"seen": 2}, {"seen": 1}]
    child = client.get_state("child-thread")
    assert child.channel_values == {"counter": 2}
    assert [c.step for c in client.get_history("child-thread")] == [4, 3, 2, 1, 0, -1]  # 3 per call


def test_interrupting_cancel_reaches_a_running_subgraph(
    client: Client, redis_url: str, tmp_path: Path, procs: Procs
) -> None:
    """The subgraph ticks 1 s at a time, 20 times: the run is canceled within 10 s, no tick starts once
    the cancel token is set (each tick logs whether it was) or after the run is canceled."""
    procs.start("worker", env=worker_env(redis_url, "tests.workflows.subgraphs", tmp_path))
    run_id = client.enqueue("slow-parent", {})
    starts = tmp_path / "starts.log"
    wait_for(lambda: line_count(starts) >= 2, timeout_s=30, what="the subgraph's second tick to start")
    client.cancel(run_id, interrupt=True)
    wait_for(lambda: client.get_run(run_id).status == RunStatus.CANCELED, timeout_s=10, what="the cancel")
    canceled_by = time.time()
    time.sleep(1.5)  # a subgraph node that started after the cancel would show up by now
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    started = [line.split() for line in starts.read_text().splitlines()]
    assert 2 <= len(started) <= 4
    assert [token_set for _, token_set in started] == ["0"] * len(started)  # none once the cancel is seen
    assert all(float(at) < canceled_by for at, _ in started)
    parent_history = client.get_history(run.thread_id)
    assert [c.source for c in parent_history] == ["loop", "input"]  # the input applied: its last checkpoint
    child_ns = next(k.decode().split(":cp:")[1] for k in client.kv.scan_iter(match="graphq:*:cp:child:*"))
    child_history = client.checkpoints.list(run.thread_id, ns=child_ns)
    assert len(child_history) >= 3  # the child kept its committed steps
    # one tick per step after its input checkpoint and the input applied
    assert child_history[0].channel_values["ticks"] == list(range(1, len(child_history) - 1))


def test_a_subgraph_checkpoint_retried_after_its_reply_was_lost_is_written_once(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subgraph's fenced checkpoint write (put_checkpoint.lua) applied before an outage swallowed its
    reply, retried: written once — one history entry, its log grown in place — not a second history entry
    and a copy of the whole log in a new generation (the retry's append guard found the log grown by the
    write itself)."""
    kv = redis_client
    kv.set("lease", "token")
    store = FencedStore(RedisCheckpointStore(kv, SCHEMA), "lease", "token", "run", ("run", 0))
    parent = child(None, {"log": ["a"], "title": "t"}, ["log", "title"])
    store.put("t", parent, ns="sub:1")
    put_plan = store.put_plan
    lost: list[bool] = []

    def reply_lost(*args: Any) -> str:
        verdict = put_plan(*args)
        if not lost:
            lost.append(True)
            raise redis.ConnectionError("the reply was lost")
        return verdict

    monkeypatch.setattr(store, "put_plan", reply_lost)
    cp = child(parent, {"log": ["a", "b"], "title": "t"}, ["log"])
    store.put("t", cp, ns="sub:1")
    assert kv.lrange(keys.history("t", "sub:1"), 0, -1) == [parent.id.encode(), cp.id.encode()]
    assert [k for k in kv.scan_iter(match=keys.thread_pattern("t")) if b":log:" in k] == [
        keys.channel_log("t", "sub:1", "log", parent.id).encode()
    ]
    got = store.get("t", ns="sub:1")
    assert (lost, got and got.channel_values) == ([True], {"log": ["a", "b"], "title": "t"})


def test_a_worker_writes_a_subgraphs_whole_output_through_the_parents_reducer(
    client: Client, redis_url: str, tmp_path: Path
) -> None:
    """A worker subprocess runs the subgraph node as LangGraph does: paused on interrupt(), answered, its
    whole output list goes through the parent's operator.add (LangGraph's value, checked by hand)."""
    env = worker_env(redis_url, "tests.workflows.subgraphs", tmp_path)
    run_id = client.enqueue("shared-list", {"items": ["in"]})
    burst(env)
    [request] = client.requests(run_id)
    assert (request.node, request.value) == ("x", "ok?")
    client.answer(run_id, "yes")
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result == {"items": ["in", "pre", "in", "pre", "x:yes"], "n": 1}
