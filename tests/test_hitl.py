"""Human-in-the-loop, multi-turn threads and continuations on the queue (G6, R16, C1, C2, R14)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunStatus
from graphcore.backend.threads import ThreadBusyError
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from tests.workers import work
from tests.workflows import hitl
from tests.workflows.hitl import Order

REGISTRY = Registry.load(["tests.workflows.hitl"])


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    hitl.CALLS.clear()


def test_interrupts_in_one_node_are_answered_in_call_order(client: Client) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.AWAITING_INPUT
    [first] = client.requests(run_id)
    assert (first.node, first.value, first.index) == ("ask_twice", {"question": "first about tea?"}, 0)
    assert client.answer(run_id, "yes") == [first.id]
    work(client)
    [second] = client.requests(run_id)
    assert (second.value, second.index) == ({"question": "second?"}, 1)
    assert second.id != first.id
    client.answer(run_id, "no")
    work(client)
    done = client.get_run(run_id)
    assert done.status == RunStatus.COMPLETED
    assert done.result == {"topic": "tea", "answers": ["yes", "no"], "done": True}
    assert hitl.CALLS == {"ask_twice": 3, "finish": 1}  # the node re-runs from its start on each resume
    assert [c.step for c in client.get_history(done.thread_id)] == [2, 1, 0, -1]


def test_parallel_interrupts_need_keyed_answers(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("reviewing", {"items": ["a", "b"]})
    work(client)
    pending = client.requests(run_id)
    assert [r.value for r in pending] == ["approve a?", "approve b?"]
    assert len({r.id for r in pending}) == 2
    with pytest.raises(InvalidUpdateError, match="2 requests are pending") as info:
        client.answer(run_id, "ok")
    assert pending[0].id in str(info.value) and pending[1].id in str(info.value)
    run = client.get_run(run_id)
    assert run.status == RunStatus.AWAITING_INPUT
    assert redis_client.exists(keys.answers(run.thread_id, "", run.head or "")) == 0

    client.answer(run_id, {pending[0].id: "yes-a"})
    work(client)
    assert [r.id for r in client.requests(run_id)] == [pending[1].id]
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    assert hitl.CALLS["join"] == 0

    client.answer(run_id, {pending[1].id: "yes-b"})
    work(client)
    done = client.get_run(run_id)
    assert done.status == RunStatus.COMPLETED
    assert done.result is not None
    assert done.result["approvals"] == [["a", "yes-a"], ["b", "yes-b"]]
    assert done.result["joined"] == 2
    assert hitl.CALLS == {"approve:a": 2, "approve:b": 2, "join": 1}  # b waited, unanswered, once


def test_answering_a_run_that_is_not_waiting_is_refused(client: Client) -> None:
    run_id = client.enqueue("looping", {"until": 1})
    work(client)
    with pytest.raises(InvalidUpdateError, match="is completed, not awaiting input"):
        client.answer(run_id, "x")


def test_failed_run_continues_from_its_thread(client: Client) -> None:
    run_id = client.enqueue("flaky", {})
    work(client)
    failed = client.get_run(run_id)
    assert failed.status == RunStatus.FAILED
    assert [t.node for t in client.get_state(failed.thread_id).next_tasks] == ["produce"]
    again = client.resume(run_id)
    work(client)
    done = client.get_run(again)
    assert done.status == RunStatus.COMPLETED
    assert done.continued_from_run_id == run_id
    assert done.thread_id == failed.thread_id
    assert done.result == {"value": 1, "sunk": 1}
    assert hitl.CALLS == {"produce": 2, "router": 2, "sink": 1}


def test_step_budget_is_per_run_on_a_multi_turn_thread(client: Client) -> None:
    """C1/C2: limit 5 (set by the workflow); 3 steps per turn pass twice, a turn needing 6 fails."""
    first = client.enqueue("looping", {"until": 3, "turns": [1]}, thread_id="chat")
    work(client)
    second = client.enqueue("looping", {"until": 6, "turns": [2]}, thread_id="chat")
    work(client)
    too_long = client.enqueue("looping", {"until": 12, "turns": [3]}, thread_id="chat")
    work(client)
    assert client.get_run(first).result == {"until": 3, "turns": [1], "count": 3}
    two = client.get_run(second)
    assert (two.status, two.step) == (RunStatus.COMPLETED, 3)
    assert two.result == {"until": 6, "turns": [1, 2], "count": 6}
    three = client.get_run(too_long)
    assert three.status == RunStatus.FAILED
    assert three.error is not None and "max_super_steps=5" in three.error.message
    assert three.step == 5


def test_new_thread_without_a_checkpoint_starts_fresh(client: Client) -> None:
    run_id = client.enqueue("looping", {"until": 2}, thread_id="brand-new")
    work(client)
    assert client.get_run(run_id).result == {"until": 2, "count": 2, "turns": []}


def test_pydantic_state_with_a_nested_enum_survives_interrupt_and_resume(client: Client) -> None:
    run_id = client.enqueue("ordering", {"order": Order(id=7)})
    work(client)
    [request] = client.requests(run_id)
    assert request.value == {"order": 7, "status": Order.Status.OPEN}
    assert type(request.value["status"]) is Order.Status
    client.answer(run_id, "looks good")
    work(client)
    result: Any = client.get_run(run_id).result
    assert result["order"] == Order(id=7, status=Order.Status.APPROVED)
    assert result["order"].status is Order.Status.APPROVED
    assert result["note"] == "looks good"


def test_agent_tool_approval_runs_each_step_once(client: Client) -> None:
    run_id = client.enqueue("chat", {"messages": [{"id": "h1", "role": "human", "content": "weather"}]})
    work(client)
    [request] = client.requests(run_id)
    assert request.node == "tools"
    assert request.value == {"approve": {"name": "lookup", "args": {"q": "weather"}}}
    assert hitl.CALLS == {"agent": 1, "tools": 1}
    client.answer(run_id, "yes")
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED
    assert hitl.CALLS == {"agent": 2, "tools": 2}  # the entry step never ran again; tools re-ran on resume
    assert run.result is not None
    assert [(m.id, m.type) for m in run.result["messages"]] == [
        ("h1", "human"),
        ("ai-call", "ai"),
        ("tool-1", "tool"),
        ("ai-final", "ai"),
    ]
    assert run.result["messages"][3].content == "done: lookup(weather) approved=yes"


def test_fork_from_an_earlier_checkpoint_is_recorded(client: Client) -> None:
    first = client.enqueue("looping", {"until": 3}, thread_id="forky")
    work(client)
    history = client.get_history("forky")
    assert [c.step for c in history] == [3, 2, 1, 0, -1]
    middle = history[2]  # after the first tick: count 1, next task tick
    assert middle.channel_values["count"] == 1
    forked = client.enqueue("looping", None, thread_id="forky", config={"checkpoint_id": middle.id})
    work(client)
    run = client.get_run(forked)
    assert run.status == RunStatus.COMPLETED
    assert run.result == {"until": 3, "turns": [], "count": 3}
    branch = client.get_history("forky")
    fork_cp = next(c for c in branch if c.source == "fork")
    assert (fork_cp.parent_id, fork_cp.step, fork_cp.metadata["forked_from"]) == (middle.id, 2, middle.id)
    assert fork_cp.channel_values == middle.channel_values
    assert [c.step for c in branch][:3] == [4, 3, 2]  # the new branch: two ticks after the fork
    assert branch[0].parent_id == branch[1].id and branch[1].parent_id == fork_cp.id
    assert client.get_run(first).result == {"until": 3, "turns": [], "count": 3}


def test_resuming_with_the_head_checkpoint_id_is_like_resuming_by_thread(client: Client) -> None:
    client.enqueue("looping", {"until": 2}, thread_id="same")
    work(client)
    head = client.get_state("same")
    again = client.enqueue("looping", None, thread_id="same", config={"checkpoint_id": head.id})
    work(client)
    run = client.get_run(again)
    assert run.status == RunStatus.COMPLETED
    assert run.result == {"until": 2, "turns": [], "count": 2}
    assert client.get_state("same").id == head.id  # nothing to run, no fork, no new checkpoint


def test_update_state_as_a_node_then_continue(client: Client) -> None:
    client.enqueue("looping", {"until": 2}, thread_id="edit")
    work(client)
    cp = client.update_state("looping", "edit", {"until": 4}, as_node="tick")
    assert (cp.source, cp.metadata["writes"], [t.node for t in cp.next_tasks]) == (
        "update",
        ["tick"],
        ["tick"],
    )
    again = client.enqueue("looping", None, thread_id="edit")
    work(client)
    assert client.get_run(again).result == {"until": 4, "turns": [], "count": 4}
    with pytest.raises(InvalidUpdateError, match="no node 'nope'"):
        client.update_state("looping", "edit", {"until": 9}, as_node="nope")


def test_update_state_naming_another_workflow_than_the_threads_is_refused(client: Client) -> None:
    """It wrote a checkpoint whose next task the thread's workflow lacks (only a later fork refused it)."""
    run_id = client.enqueue("looping", {"until": 2}, thread_id="cross")
    work(client)
    history = [cp.id for cp in client.get_history("cross")]
    with pytest.raises(InvalidUpdateError) as refused:
        client.update_state("pair", "cross", {"items": ["u"]}, as_node="right")
    assert str(refused.value) == (
        f"update_state: thread 'cross' is a thread of workflow 'looping' (its newest run {run_id}), not of "
        "'pair'; nothing written"
    )
    assert [cp.id for cp in client.get_history("cross")] == history


def test_update_state_with_keys_outside_the_schema_is_refused_on_the_queue(client: Client) -> None:
    """In process they are ignored with a warning (LangGraph ignores them); the queue's update refuses them
    (as node or as START), naming them, and writes nothing."""
    client.enqueue("looping", {"until": 2}, thread_id="keys")
    work(client)
    head = client.get_state("keys").id
    with pytest.raises(InvalidUpdateError) as as_node:
        client.update_state("looping", "keys", {"until": 4, "untill": 5}, as_node="tick")
    with pytest.raises(InvalidUpdateError) as as_input:
        client.update_state("looping", "keys", {"untill": 5}, as_node="__start__")
    known = "known keys: ['turns', 'count', 'until']"
    assert (str(as_node.value), str(as_input.value)) == (
        f"node 'tick' wrote unknown state key(s) ['untill']; {known}",
        f"the input has unknown state key(s) ['untill']; {known}",
    )
    assert client.get_state("keys").id == head


def test_update_state_without_as_node_takes_the_last_writer(client: Client) -> None:
    """As in process (LangGraph's rule): the node that wrote last, here the looping run's last tick."""
    client.enqueue("looping", {"until": 2}, thread_id="last")
    work(client)
    cp = client.update_state("looping", "last", {"until": 3})
    assert (cp.source, cp.metadata["writes"], [t.node for t in cp.next_tasks]) == (
        "update",
        ["tick"],
        ["tick"],
    )
    again = client.enqueue("looping", None, thread_id="last")
    work(client)
    assert client.get_run(again).result == {"until": 3, "turns": [], "count": 3}


def test_update_state_without_as_node_after_a_parallel_step_is_refused(client: Client) -> None:
    """As in process (LangGraph's rule): the last step ran two nodes, so the update names one."""
    client.enqueue("pair", {"items": []}, thread_id="both")
    work(client)
    head = client.get_state("both")
    with pytest.raises(InvalidUpdateError) as refused:
        client.update_state("pair", "both", {"items": ["u"]})
    assert str(refused.value) == (
        "update_state: ambiguous update, the last step ran ['left', 'right']: specify as_node"
    )
    assert client.get_state("both").id == head.id  # nothing written
    cp = client.update_state("pair", "both", {"items": ["u"]}, as_node="right")
    assert cp.channel_values["items"] == ["left", "right", "u"]


def test_second_run_on_a_busy_thread_waits_behind_the_active_one(client: Client) -> None:
    """I3 with multitask=enqueue (the default): one active run per thread; the next starts when it ends."""
    first, second = client.enqueue_many(
        [
            RunRequest("looping", {"until": 2}, thread_id="busy"),
            RunRequest("looping", {"until": 4}, thread_id="busy"),
        ]
    )
    assert client.kv.llen("rq:queue:graphq:looping") == 1  # only the active run has a job
    work(client)
    assert client.get_run(first).status == RunStatus.COMPLETED
    done = client.get_run(second)
    assert (done.status, done.step) == (RunStatus.COMPLETED, 2)  # it continued the thread: count 2 -> 4
    assert done.result == {"until": 4, "turns": [], "count": 4}
    assert client.kv.exists(keys.thread_active("busy"), keys.thread_waiting("busy")) == 0


def test_reject_policy_refuses_a_run_on_a_busy_thread(client: Client) -> None:
    client.enqueue("looping", {"until": 2}, thread_id="single")
    with pytest.raises(ThreadBusyError, match="'single' already has an active run"):
        client.enqueue("looping", {"until": 3}, thread_id="single", multitask="reject")
    assert len(client.thread_runs("single")) == 1


def test_a_run_awaiting_input_keeps_its_thread_until_it_ends(client: Client) -> None:
    asking = client.enqueue("asking", {"topic": "x"}, thread_id="held")
    work(client)
    assert client.get_run(asking).status == RunStatus.AWAITING_INPUT
    waiting = client.enqueue("asking", {"topic": "y"}, thread_id="held")
    work(client)
    assert client.get_run(waiting).status == RunStatus.QUEUED
    assert client.cancel(asking) == "canceled"
    work(client)
    assert client.get_run(waiting).status == RunStatus.AWAITING_INPUT
    assert [r.value for r in client.requests(waiting)] == [{"question": "first about y?"}]


def test_run_timeout_counts_queue_wait_and_ends_the_run_canceled(client: Client) -> None:
    run_id = client.enqueue("looping", {"until": 3}, config={"run_timeout_s": 0.2})
    time.sleep(0.3)  # waiting in the queue counts (R15)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    assert run.error is not None and run.error.type == "RunTimeout"
    assert run.error.message.startswith("run exceeded run_timeout_s=0.2 s (GRAPHQ_RUN_TIMEOUT_S")
    assert client.get_history(run.thread_id) == []


def test_the_enqueuing_process_fixes_the_run_timeout(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """GRAPHQ_RUN_TIMEOUT_S of the process that enqueues (a batch job's) holds on workers without it: it is
    stored with the run (before, the worker applied its own 86400 s and the run completed)."""
    from graphcore.settings import get_settings

    monkeypatch.setenv("GRAPHQ_RUN_TIMEOUT_S", "0.2")
    get_settings.cache_clear()
    run_id = client.enqueue("looping", {"until": 3})
    assert client.get_run(run_id).run_timeout_s == 0.2
    monkeypatch.delenv("GRAPHQ_RUN_TIMEOUT_S")
    get_settings.cache_clear()
    assert get_settings().run_timeout_s == 86_400
    time.sleep(0.3)
    work(client)
    run = client.get_run(run_id)
    assert (run.status, run.error is not None and run.error.type) == (RunStatus.CANCELED, "RunTimeout")
    assert run.error is not None and run.error.message.startswith("run exceeded run_timeout_s=0.2 s")


def test_run_timeout_above_the_ceiling_is_refused(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphcore import START, StateGraph
    from graphcore.errors import ConfigError
    from graphcore.settings import get_settings

    monkeypatch.setenv("GRAPHQ_MAX_RUN_TIMEOUT_S", "60")
    monkeypatch.setenv("GRAPHQ_RUN_TIMEOUT_S", "30")
    get_settings.cache_clear()
    with pytest.raises(
        ConfigError, match=r"run_timeout_s=120\.0 is above the GRAPHQ_MAX_RUN_TIMEOUT_S=60\.0"
    ):
        client.enqueue("looping", {"until": 1}, config={"run_timeout_s": 120})
    g = StateGraph(hitl.Loop)
    g.add_node("tick", hitl.tick)
    g.add_edge(START, "tick")
    too_long = g.compile(name="too-long", config={"run_timeout_s": 120})
    with pytest.raises(ConfigError, match=r"workflow 'too-long': run_timeout_s=120\.0 is above"):
        Registry({}).add(too_long)


def test_answering_a_request_again_starts_a_branch(client: Client) -> None:
    """R16: the first answer's branch completes; a second answer forks at the request's checkpoint."""
    run_id = client.enqueue("chat", {"messages": [{"id": "h1", "role": "human", "content": "news"}]})
    work(client)
    [request] = client.requests(run_id)
    with pytest.raises(InvalidUpdateError) as open_request:  # was accepted: a branch ran beside the answer
        client.answer_again(run_id, request.id, "no")
    assert str(open_request.value) == (
        f"request {request.id} of run {run_id} is open: answer it first; a second answer (a branch) is for a "
        "request already answered"
    )
    assert [r.id for r in client.list_runs()] == [run_id]  # no branch run was enqueued
    client.answer(run_id, "yes")
    work(client)
    first = client.get_run(run_id)
    assert first.status == RunStatus.COMPLETED
    branch = client.answer_again(run_id, request.id, "no")
    work(client)
    second = client.get_run(branch)
    assert second.status == RunStatus.COMPLETED
    assert second.continued_from_run_id == run_id
    assert second.result is not None and first.result is not None
    assert second.result["messages"][-1].content == "done: lookup(news) approved=no"
    assert first.result["messages"][-1].content == "done: lookup(news) approved=yes"
    history = client.get_history(first.thread_id)
    [asked_at] = [c for c in history if c.source == "loop" and [t.node for t in c.next_tasks] == ["tools"]]
    [fork_cp] = [c for c in history if c.source == "fork"]
    assert (fork_cp.parent_id, fork_cp.step) == (asked_at.id, asked_at.step + 1)  # a fork: one step on
    by_id = {c.id: c for c in history}  # both branches stay readable
    assert by_id[first.head or ""].channel_values["messages"][-1].content.endswith("approved=yes")
    assert by_id[second.head or ""].channel_values["messages"][-1].content.endswith("approved=no")
    with pytest.raises(InvalidUpdateError, match="no recorded request 'nope'"):
        client.answer_again(run_id, "nope", "x")


def test_an_answer_keyed_by_an_unknown_request_id_is_refused(client: Client) -> None:
    run_id = client.enqueue("asking", {"topic": "z"})
    work(client)
    with pytest.raises(InvalidUpdateError, match=r"unknown request id\(s\) \['ffffffffffffffff'\]"):
        client.answer(run_id, {"ffffffffffffffff": "yes"})
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT


def test_cancel_ends_a_running_run_whose_lease_lapsed(client: Client) -> None:
    """A worker died mid-step: its lease lapsed, nobody holds the step; cancel ends the run at once."""
    run_id = client.enqueue("looping", {"until": 2}, thread_id="stuck")
    run = client.get_run(run_id)
    client.kv.hset(keys.run(run.thread_id, run_id), "status", "running")  # as the dead worker left it
    assert client.cancel(run_id) == "canceled"
    assert client.get_run(run_id).status == RunStatus.CANCELED
    after = client.enqueue("looping", {"until": 2}, thread_id="stuck")  # the thread is free again
    work(client)
    assert client.get_run(after).status == RunStatus.COMPLETED
