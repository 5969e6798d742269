"""A ``Command``'s update and goto on the queue: ``client.answer(..., update=, goto=)`` is
LangGraph's ``invoke(Command(resume=, update=, goto=))``, ``client.resume(..., update=, goto=)`` its
``update_state`` then ``invoke(None)`` at a static breakpoint, and ``client.enqueue(wf, Command(update=,
goto=))`` on a thread whose run ended its ``invoke(Command(update=, goto=))``. LangGraph's in-process run of
the same graph is the expected value. Burst workers in this process, on the test Redis; the CLI's refusals
through ``graphq`` subprocesses."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.engine.algo import COMMAND_TASK_ID
from graphcore.engine.inputs import InputTooLargeError, InputTypeError
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from graphcore.settings import get_settings
from tests.compat.conftest import Imports
from tests.workers import graphq, work, worker_env

LG = Imports("langgraph")
GQ = Imports("graphq")


class State(TypedDict, total=False):
    amount: int
    log: Annotated[list[str], operator.add]


def _ask(lg: Imports) -> Any:
    def ask(state: State) -> dict[str, Any]:
        answer = lg.interrupt(f"approve {state['amount']}?")
        return {"log": [f"ask {state['amount']}: {answer}"]}

    return ask


def _builder(lg: Imports) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("assess", lambda s: {"log": [f"assess {s['amount']}"]})
    builder.add_node("ask", _ask(lg), destinations=("pay", "audit"))  # audit: a goto's
    builder.add_node("pay", lambda s: {"log": [f"pay {s['amount']}"]})
    builder.add_node("audit", lambda s: {"log": [f"audit {s['amount']}"]})
    builder.add_edge(lg.START, "assess")
    builder.add_edge("assess", "ask")
    builder.add_edge("ask", "pay")
    builder.add_edge("pay", lg.END)
    builder.add_edge("audit", lg.END)
    return builder


APPROVAL = _builder(GQ).compile(name="cmd-approval")
STOPPED = _builder(GQ).compile(name="cmd-approval-bp", interrupt_before=["pay"])
REGISTRY = Registry({APPROVAL.name: APPROVAL, STOPPED.name: STOPPED})
CONFIG = {"configurable": {"thread_id": "t"}}


def _in_process(**compiled: Any) -> Any:
    """The graph compiled by LangGraph, with a checkpointer."""
    return _builder(LG).compile(checkpointer=LG.InMemorySaver(), **compiled)


def _history(snapshots: Any) -> list[tuple[int, tuple[str, ...], dict[str, Any]]]:
    return [(s.metadata["step"], tuple(s.next), s.values) for s in snapshots]


def _worked(client: Client, run_id: str) -> RunRecord:
    work(client)
    [run] = client.wait([run_id], timeout_s=30)
    return run


def _queue_history(client: Client, thread: str) -> list[tuple[int, tuple[str, ...], dict[str, Any]]]:
    return [
        (cp.step, tuple(t.node for t in cp.next_tasks), client.shown_values(thread, cp))
        for cp in client.get_history(thread)
    ]


def test_an_answer_with_update_and_goto_is_langgraphs_command(client: Client) -> None:
    graph = _in_process()
    graph.invoke({"amount": 120, "log": []}, CONFIG)
    expected = graph.invoke(LG.Command(resume="yes", update={"amount": 50}, goto="audit"), CONFIG)
    run = _worked(client, client.enqueue("cmd-approval", {"amount": 120, "log": []}, thread_id="t"))
    assert run.status == RunStatus.AWAITING_INPUT
    assert len(client.answer(run.id, "yes", update={"amount": 50}, goto="audit")) == 1
    done = _worked(client, run.id)
    assert expected == {"amount": 50, "log": ["assess 120", "ask 50: yes", "audit 50", "pay 50"]}
    assert (done.status, done.result) == (RunStatus.COMPLETED, expected)
    history = _history(graph.get_state_history(CONFIG))
    assert history[2] == (1, ("ask",), {"amount": 50, "log": ["assess 120"]})  # the update, pending there
    # The queued commit drops the pending writes of the checkpoint it went on from, the command's too:
    # that checkpoint no longer shows the update (docs: LangGraph differences); the next one holds it.
    history[2] = (1, ("ask",), {"amount": 120, "log": ["assess 120"]})
    assert _queue_history(client, "t") == history


def _paused(client: Client, workflow: str = "cmd-approval") -> RunRecord:
    run = _worked(client, client.enqueue(workflow, {"amount": 120, "log": []}, thread_id="t"))
    assert run.status == RunStatus.AWAITING_INPUT
    return run


def _unchanged(client: Client, run: RunRecord) -> None:
    """Nothing of a refused answer was written: the run waits as it did, its request open, no answer and
    no command entry at its head."""
    again = client.get_run(run.id)
    assert (again.status, again.head) == (RunStatus.AWAITING_INPUT, run.head)
    assert [i.value for i in client.requests(run.id)] == ["approve 120?"]
    assert client.kv.exists(keys.answers("t", "", run.head or "")) == 0
    assert client.kv.hexists(keys.pending_writes("t", "", run.head or ""), COMMAND_TASK_ID) == 0


@pytest.mark.parametrize(
    ("update", "goto", "message"),
    [
        (
            {"amont": 5},
            (),
            "the input Command's update has unknown state key(s) ['amont']; known keys: ['amount', 'log']",
        ),
        (None, "nope", "input Command(goto=...) to unknown node(s) ['nope']"),
        (3, (), "the input Command's update is a int; expected a dict of state updates"),
    ],
)
def test_an_answer_with_a_bad_update_or_goto_is_refused_and_writes_nothing(
    client: Client, update: Any, goto: Any, message: str
) -> None:
    run = _paused(client)
    with pytest.raises(InvalidUpdateError) as refused:
        client.answer(run.id, "yes", update=update, goto=goto)
    assert str(refused.value) == message
    _unchanged(client, run)


def test_runs_answer_update_and_goto(client: Client, redis_url: str) -> None:
    env = worker_env(redis_url, "tests.test_command_queue")
    run = _paused(client)
    bad = graphq("runs", "answer", run.id, "--value", '"yes"', "--goto", "nope", env=env)
    assert (bad.returncode, bad.stderr) == (2, "error: input Command(goto=...) to unknown node(s) ['nope']\n")
    bad = graphq("runs", "answer", run.id, "--value", '"yes"', "--update", '{"amount": ', env=env)
    assert (bad.returncode, bad.stderr.count("\n")) == (2, 1)
    assert bad.stderr.startswith("error: --update: ")
    again = graphq("runs", "answer", run.id, "--value", '"no"', "--goto", "audit", "--again", env=env)
    assert (again.returncode, again.stderr) == (
        2,
        "error: --update and --goto go with a first answer, not with --again (a branch of the thread)\n",
    )
    _unchanged(client, run)
    done = graphq("runs", "answer", run.id, "--value", '"yes"', "--update", '{"amount": 50}', env=env)
    assert done.returncode == 0, done.stderr
    assert _worked(client, run.id).result == {"amount": 50, "log": ["assess 120", "ask 50: yes", "pay 50"]}


def _stopped(client: Client) -> RunRecord:
    """A run of ``cmd-approval-bp`` answered, then stopped at its breakpoint before ``pay``."""
    run = _paused(client, "cmd-approval-bp")
    client.answer(run.id, "ok")
    run = _worked(client, run.id)
    assert (run.status, run.breakpoint) == (
        RunStatus.AWAITING_INPUT,
        {"when": "before", "nodes": ["pay"], "checkpoint_id": run.head, "continued": False},
    )
    return run


def test_a_resume_with_update_and_goto_at_a_breakpoint_is_langgraphs_command(client: Client) -> None:
    graph = _in_process(interrupt_before=["pay"])
    graph.invoke({"amount": 120, "log": []}, CONFIG)
    graph.invoke(LG.Command(resume="ok"), CONFIG)
    expected = graph.invoke(LG.Command(update={"amount": 4}, goto="audit"), CONFIG)
    run = _stopped(client)
    assert client.resume(run.id, update={"amount": 4}, goto="audit") == run.id
    done = _worked(client, run.id)
    assert expected == {"amount": 4, "log": ["assess 120", "ask 120: ok", "audit 4", "pay 4"]}
    assert (done.status, done.result) == (RunStatus.COMPLETED, expected)
    history = _history(graph.get_state_history(CONFIG))
    assert history[1] == (2, ("pay",), {"amount": 4, "log": ["assess 120", "ask 120: ok"]})
    history[1] = (2, ("pay",), {"amount": 120, "log": ["assess 120", "ask 120: ok"]})  # as in the first test
    assert _queue_history(client, "t") == history


def test_runs_resume_update_at_a_breakpoint_and_its_refusals(client: Client, redis_url: str) -> None:
    env = worker_env(redis_url, "tests.test_command_queue")
    run = _stopped(client)
    bad = graphq("runs", "resume", run.id, "--update", '{"amont": 4}', env=env)
    known = "known keys: ['amount', 'log']"
    assert (bad.returncode, bad.stderr) == (
        2,
        f"error: the input Command's update has unknown state key(s) ['amont']; {known}\n",
    )
    assert client.get_run(run.id).breakpoint == run.breakpoint  # not let past
    ok = graphq("runs", "resume", run.id, "--update", '{"amount": 4}', env=env)
    assert ok.returncode == 0, ok.stderr
    done = _worked(client, run.id)
    assert done.result == {"amount": 4, "log": ["assess 120", "ask 120: ok", "pay 4"]}
    ended = graphq("runs", "resume", run.id, "--goto", "audit", env=env)
    assert (ended.returncode, ended.stderr) == (
        2,
        f"error: update/goto: run {run.id} is completed, not stopped at a breakpoint; give them to its "
        "thread as the input of a new run: client.enqueue('cmd-approval-bp', Command(update=..., "
        "goto=...), thread_id='t')\n",
    )


def _ended(client: Client) -> RunRecord:
    run = _paused(client)
    client.answer(run.id, "ok")
    run = _worked(client, run.id)
    assert run.result == {"amount": 120, "log": ["assess 120", "ask 120: ok", "pay 120"]}
    return run


@pytest.mark.parametrize(
    ("command", "result"),
    [
        ({"update": {"amount": 9}}, {"amount": 9, "log": ["assess 120", "ask 120: ok", "pay 120"]}),
        ({"goto": "audit"}, {"amount": 120, "log": ["assess 120", "ask 120: ok", "pay 120", "audit 120"]}),
        (
            {"update": {"amount": 9}, "goto": "audit"},
            {"amount": 9, "log": ["assess 120", "ask 120: ok", "pay 120", "audit 9"]},
        ),
    ],
)
def test_a_command_enqueued_on_an_ended_thread_is_langgraphs(
    client: Client, command: dict[str, Any], result: dict[str, Any]
) -> None:
    graph = _in_process()
    graph.invoke({"amount": 120, "log": []}, CONFIG)
    graph.invoke(LG.Command(resume="ok"), CONFIG)
    expected = graph.invoke(LG.Command(**command), CONFIG)
    first = _ended(client)
    run = client.enqueue("cmd-approval", GQ.Command(**command), thread_id="t")
    done = _worked(client, run)
    assert expected == result
    assert (done.status, done.input, done.result) == (RunStatus.COMPLETED, None, expected)
    history = _history(graph.get_state_history(CONFIG))
    if "goto" not in command:  # nothing ran: the head holds the update as a pending write, shown in process
        assert history[0] == (3, (), result)
        history[0] = (3, (), first.result)
    else:  # the queued commit drops it from the head it went on from (as in the first test)
        assert history[1] == (3, (), {**first.result, **command.get("update", {})})
        history[1] = (3, (), first.result)
    assert _queue_history(client, "t") == history


def _runs_and_head(client: Client, thread: str = "t") -> tuple[list[str], str, bool]:
    head = client.get_state(thread).id
    entry = client.kv.hexists(keys.pending_writes(thread, "", head), COMMAND_TASK_ID)
    return [r.id for r in client.thread_runs(thread)], head, bool(entry)


def test_an_enqueued_command_with_resume_names_client_answer(client: Client) -> None:
    run = _paused(client)
    before = _runs_and_head(client)
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval", GQ.Command(resume="yes", update={"amount": 5}), thread_id="t")
    assert str(refused.value) == (
        "input Command(resume=...): on the queue an answer goes to the run that asked: "
        "client.answer(run_id, value, update=..., goto=...) (graphq runs answer RUN --value JSON)"
    )
    assert _runs_and_head(client) == before == ([run.id], run.head, False)


def test_an_enqueued_command_or_update_state_on_a_paused_thread_names_client_answer(client: Client) -> None:
    run = _paused(client)
    before = _runs_and_head(client)
    told = (
        f"thread 't' has run {run.id} awaiting input; give the update with its answer: "
        f"client.answer({run.id!r}, value, update=..., goto=...) (graphq runs answer {run.id} --value JSON "
        f"--update JSON), or cancel it (graphq runs cancel {run.id})"
    )
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval", GQ.Command(update={"amount": 5}), thread_id="t")
    assert str(refused.value) == f"input Command(update=..., goto=...): {told}"
    with pytest.raises(InvalidUpdateError) as refused:
        client.update_state("cmd-approval", "t", {"amount": 5})
    assert str(refused.value) == told
    assert _runs_and_head(client) == before == ([run.id], run.head, False)


def test_an_enqueued_command_or_update_state_at_a_breakpoint_names_client_resume(client: Client) -> None:
    run = _stopped(client)
    before = _runs_and_head(client)
    told = (
        f"thread 't' has run {run.id} stopped at a breakpoint (before ['pay']); give the update with its "
        f"resume: client.resume({run.id!r}, update=..., goto=...) (graphq runs resume {run.id} --update "
        f"JSON), or cancel it (graphq runs cancel {run.id})"
    )
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval-bp", GQ.Command(goto="audit"), thread_id="t")
    assert str(refused.value) == f"input Command(update=..., goto=...): {told}"
    with pytest.raises(InvalidUpdateError) as refused:
        client.update_state("cmd-approval-bp", "t", {"amount": 5})
    assert str(refused.value) == told
    assert _runs_and_head(client) == before == ([run.id], run.head, False)


def test_an_enqueued_command_on_a_thread_without_a_checkpoint_is_refused(client: Client) -> None:
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval", GQ.Command(update={"amount": 5}), thread_id="new")
    assert str(refused.value) == (
        "input Command(update=..., goto=...): on the queue it goes on from the head of a thread with a "
        "checkpoint, and thread 'new' has none (or a checkpoint_id is given); give the thread_id of such a "
        "thread, and no checkpoint_id"
    )
    assert client.thread_runs("new") == []


def test_an_answers_update_of_the_wrong_type_or_too_large_is_refused_and_writes_nothing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _paused(client)
    with pytest.raises(InputTypeError) as refused:
        client.answer(run.id, "yes", update={"amount": "x"})
    assert str(refused.value) == "update.amount: Input should be a valid integer (got 'x')"
    monkeypatch.setenv("GRAPHQ_MAX_INPUT_BYTES", "1000")
    get_settings.cache_clear()
    try:
        with pytest.raises(InputTooLargeError) as large:
            client.answer(run.id, "yes", update={"log": ["x" * 2000]})
    finally:
        monkeypatch.delenv("GRAPHQ_MAX_INPUT_BYTES")
        get_settings.cache_clear()
    assert str(large.value).startswith("update is ")
    assert (
        str(large.value)
        .split(" bytes serialized, ")[1]
        .startswith("above the limit GRAPHQ_MAX_INPUT_BYTES=1000")
    )
    _unchanged(client, run)


def test_an_enqueued_command_on_a_thread_with_a_queued_run_is_refused(client: Client) -> None:
    _ended(client)
    queued = client.enqueue("cmd-approval", {"amount": 7}, thread_id="t")
    before = _runs_and_head(client)
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval", GQ.Command(goto="audit"), thread_id="t")
    assert str(refused.value) == (
        f"input Command(update=..., goto=...): thread 't' has an active run {queued}; update it once it ends"
    )
    assert _runs_and_head(client) == before
    assert before[0][-1] == queued and not before[2]


def test_an_input_command_on_a_thread_ending_at_an_unapplied_input_is_refused(client: Client) -> None:
    """A thread whose head is a run's input not applied yet (``update_state(..., as_node="__input__")``): the
    worker applies that input first, so an input Command's entry saved there would be lost (it was: the
    update and goto never applied). Refused, naming what to do; nothing written."""
    _ended(client)
    client.update_state("cmd-approval", "t", {"amount": 7}, as_node="__input__")
    before = [cp.id for cp in client.get_history("t")]
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval", GQ.Command(update={"amount": 99}, goto="audit"), thread_id="t")
    assert str(refused.value) == (
        "input Command(update=..., goto=...): thread 't' ends at a run's input not applied yet "
        "(update_state(..., as_node='__input__')); run it first: client.enqueue('cmd-approval', None, "
        "thread_id=...)"
    )
    assert [cp.id for cp in client.get_history("t")] == before
    assert client.checkpoints.get_writes("t", before[0]) == {}


def test_a_command_given_meanwhile_is_not_overwritten(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two clients give a Command at one ended thread's head: the second one's entry merges the commands
    given before it; one given after it read them and before it saves must not be overwritten (it was: the
    entry was read before the transaction watched it). The later save is refused, the other kept."""
    _ended(client)
    head = client.get_state("t")
    pending_key = keys.pending_writes("t", "", head.id)
    write = Client._command_write

    def racing(self: Client, *args: Any) -> dict[str, bytes]:
        mine = write(self, *args)
        client.kv.hset(pending_key, COMMAND_TASK_ID, b"another client's entry")  # lands before the save
        return mine

    monkeypatch.setattr(Client, "_command_write", racing)
    with pytest.raises(InvalidUpdateError) as refused:
        client.enqueue("cmd-approval", GQ.Command(update={"amount": 99}), thread_id="t")
    assert str(refused.value) == (
        "input Command(update=..., goto=...): thread 't' got a run, a checkpoint or another command while "
        "the command was being saved; nothing written, give it again"
    )
    assert client.kv.hget(pending_key, COMMAND_TASK_ID) == b"another client's entry"
    assert client.kv.get(keys.thread_active("t")) is None  # no run enqueued
