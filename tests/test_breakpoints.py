"""Static breakpoints (interrupt_before / interrupt_after), LangGraph's run config and durability: what the
compat suite (tests/compat/test_breakpoints.py, test_config.py) cannot see from outside — the checkpoints
written, graphq's refusals — in process, and the same on the queue (burst workers in this process, and a
``graphq worker`` subprocess with the CLI)."""

from __future__ import annotations

import json
import operator
import subprocess
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import END, START, StateGraph, interrupt
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, now_iso
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.engine.config import RunConfig, merge_config
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, InvalidUpdateError, StepLimitError
from graphcore.settings import Settings
from graphcore.types import Command
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.step.lease import Lease
from tests.cli_helpers import run_in_process
from tests.test_reaper import lapse
from tests.workers import ended, wait_for, work, worker_env

REGISTRY = Registry.load(["tests.workflows.breakpoints"])


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def chain(*nodes: str) -> StateGraph:
    builder = StateGraph(State)
    previous = START
    for name in nodes:
        builder.add_node(name, lambda s, name=name: {"items": [name]})
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


def test_a_stop_before_saves_the_checkpoint_whose_next_task_is_the_node() -> None:
    store = InMemoryCheckpointStore()
    app = chain("a", "b", "c").compile(store, interrupt_before=["b"])
    app.invoke({"items": ["x"]}, {"configurable": {"thread_id": "t"}})
    head = store.get("t")
    assert head is not None
    assert ([t.node for t in head.next_tasks], head.channel_values, head.source) == (
        ["b"],
        {"items": ["x", "a"]},
        "loop",
    )
    assert store.get_writes("t", head.id) == {}  # nothing of b ran


def test_a_stop_after_saves_the_step_that_ran_the_node() -> None:
    store = InMemoryCheckpointStore()
    app = chain("a", "b").compile(store, interrupt_after=["a"])
    app.invoke({"items": []}, {"configurable": {"thread_id": "t"}})
    head = store.get("t")
    assert head is not None
    assert (head.metadata["writes"], [t.node for t in head.next_tasks]) == (["a"], ["b"])


def test_durability_exit_parents_the_last_checkpoint_to_where_the_run_started() -> None:
    store = InMemoryCheckpointStore()
    app = chain("a", "b").compile(store)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"items": ["x"]}, config)
    before = store.get("t")
    assert before is not None
    app.invoke({"items": ["y"]}, config, durability="exit")
    cps = store.list("t")
    assert len(cps) == 5  # 4 from the first run (input, the input applied, a, b), 1 from the second
    assert (cps[0].parent_id, cps[0].channel_values) == (before.id, {"items": ["x", "a", "b", "y", "a", "b"]})


def test_durability_exit_keeps_a_paused_step_and_resumes() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"items": [str(interrupt("ok?"))]}

    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("ask", ask)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    store = InMemoryCheckpointStore()
    app = builder.compile(store)
    config = {"configurable": {"thread_id": "t"}}
    paused = app.invoke({"items": []}, config, durability="exit")
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    head = store.get("t")
    assert head is not None
    assert (len(store.list("t")), head.parent_id, [t.node for t in head.next_tasks]) == (1, None, ["ask"])
    assert app.invoke(Command(resume="yes"), config, durability="exit") == {"items": ["a", "yes"]}


def test_run_config_takes_langgraphs_keys() -> None:
    cfg = merge_config(
        {"configurable": {"thread_id": 3, "checkpoint_id": "c1", "checkpoint_ns": "", "k": 1}},
        {"recursion_limit": 10, "run_name": "r", "max_concurrency": 2},
    )
    assert (cfg.thread_id, cfg.checkpoint_id, cfg.configurable, cfg.max_super_steps) == (
        "3",
        "c1",
        {"k": 1},
        9,
    )
    assert (cfg.run_name, cfg.max_concurrency, cfg.step_limit()) == ("r", 2, 9)
    assert cfg["configurable"] == {"k": 1, "thread_id": "3", "checkpoint_id": "c1", "checkpoint_ns": ""}
    assert (cfg["recursion_limit"], cfg["tags"], cfg.get("callbacks"), cfg.get("nope", 0)) == (
        10,
        [],
        None,
        0,
    )
    assert ("configurable" in cfg, "nope" in cfg, cfg.keys()[:3]) == (
        True,
        False,
        ["configurable", "tags", "metadata"],
    )
    with pytest.raises(KeyError):
        cfg["nope"]


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        (
            [{"thread_id": "a", "configurable": {"thread_id": "b"}}],
            "run option thread_id='a' and configurable thread_id='b' differ; give one",
        ),
        (
            [{"recursion_limit": 5, "max_super_steps": 3}],
            "run options recursion_limit=5 and max_super_steps=3 differ (recursion_limit R is "
            "max_super_steps R - 1); give one",
        ),
        (
            [{"recursion_limit": "5"}],
            "run option recursion_limit: must be an integer ≥ 1 (LangGraph's recursion_limit R allows R - 1 "
            "super-steps, graphq's max_super_steps) (got '5')",
        ),
        (
            [{"durability": "later"}],
            "run option durability: Input should be 'sync', 'async' or 'exit' (got 'later')",
        ),
        ([{"max_concurrency": 0}], "run option max_concurrency: must be 1 ≤ value (got 0)"),
    ],
)
def test_run_config_refusals(layers: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        merge_config(*layers)
    assert str(caught.value) == message


def test_a_later_layers_recursion_limit_wins() -> None:
    assert merge_config({"max_super_steps": 3}, {"recursion_limit": 8}).max_super_steps == 7
    assert merge_config(RunConfig(max_super_steps=3), {"recursion_limit": 8})["recursion_limit"] == 8


# --- on the queue ---------------------------------------------------------------------------------------


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.breakpoints", tmp_path)


def stopped_at(client: Client, run_id: str, when: str, nodes: list[str]) -> str:
    """Assert that the run waits at a breakpoint with no request; returns the checkpoint it stopped at."""
    run = client.get_run(run_id)
    assert run.status == RunStatus.AWAITING_INPUT
    assert run.breakpoint is not None
    assert run.breakpoint == {"when": when, "nodes": nodes, "checkpoint_id": run.head, "continued": False}
    assert client.requests(run_id) == []
    return str(run.head)


def test_a_queued_run_stops_before_the_node_and_resume_lets_it_go_on(client: Client) -> None:
    run_id = client.enqueue("stops_before", {"items": ["x"]}, thread_id="t")
    work(client)
    head = stopped_at(client, run_id, "before", ["b"])
    cp = client.get_state("t")
    assert (cp.id, [t.node for t in cp.next_tasks], cp.channel_values) == (head, ["b"], {"items": ["x", "a"]})
    with pytest.raises(InvalidUpdateError) as caught:
        client.answer(run_id, "yes")
    assert str(caught.value) == (
        f"run {run_id} stopped at a breakpoint (before ['b']) and has no request to answer; let it go on "
        f"with resume (graphq runs resume {run_id})"
    )
    assert client.resume(run_id) == run_id
    work(client)
    done = client.get_run(run_id)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"items": ["x", "a", "b", "c"]})
    assert done.breakpoint == {"when": "before", "nodes": ["b"], "checkpoint_id": head, "continued": True}
    stops = [e.data for e in read_events(client.kv, "t", run_id) if e.mode == "interrupt"]
    assert stops == [{"requests": [], "breakpoint": {"when": "before", "nodes": ["b"]}}]


def test_a_subgraphs_breakpoint_stops_a_queued_run_and_resume_goes_on_past_it(client: Client) -> None:
    """The subgraph stops before its node ``b``: the run waits at that breakpoint with the parent's step
    uncommitted and nothing of the subgraph node kept; after resume the subgraph goes on past it (``a`` does
    not run again) and the run ends with LangGraph's value."""
    run_id = client.enqueue("subgraph_stops", {"items": []}, thread_id="t")
    work(client)
    head = stopped_at(client, run_id, "before", ["b"])
    cp = client.get_state("t")
    assert ([t.node for t in cp.next_tasks], cp.channel_values) == (["sub"], {"items": ["pre"]})
    assert client.checkpoints.get_writes("t", head) == {}
    client.resume(run_id)
    work(client)
    done = ended(client, run_id)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"items": ["pre", "pre", "a", "b", "post"]})


def test_a_queued_run_stops_after_the_node(client: Client) -> None:
    run_id = client.enqueue("stops_after", {"items": ["x"]}, thread_id="t")
    work(client)
    stopped_at(client, run_id, "after", ["a"])
    assert client.get_state("t").channel_values == {"items": ["x", "a"]}
    client.resume(run_id)
    work(client)
    assert ended(client, run_id).result == {"items": ["x", "a", "b", "c"]}


def test_a_star_breakpoint_stops_before_every_step(client: Client) -> None:
    run_id = client.enqueue("stops_everywhere", {"items": []}, thread_id="t")
    seen = []
    for _ in range(3):
        work(client)
        run = client.get_run(run_id)
        if run.terminal:
            break
        seen.append((run.breakpoint or {}).get("nodes"))
        assert client.resume(run_id) == run_id
    assert seen == [["a"], ["b"]]
    assert ended(client, run_id).result == {"items": ["a", "b"]}


def test_interrupt_after_the_last_node_completes_on_the_queue(client: Client) -> None:
    run_id = client.enqueue("stops_after_last", {"items": []})
    work(client)
    done = client.get_run(run_id)
    assert (done.status, done.result, done.breakpoint) == (RunStatus.COMPLETED, {"items": ["a", "b"]}, None)


def test_a_node_that_asks_after_a_stop_pauses_again_and_is_answered(client: Client) -> None:
    run_id = client.enqueue("asks_after_a_stop", {"items": []})
    work(client)
    stopped_at(client, run_id, "before", ["b"])
    client.resume(run_id)
    work(client)
    [request] = client.requests(run_id)
    assert (request.node, request.value) == ("b", "ok?")
    client.answer(run_id, "yes")  # the answered step has pending writes: it passes its breakpoint
    work(client)
    assert ended(client, run_id).result == {"items": ["a", "b:yes"]}


def test_a_stopped_run_can_be_canceled_and_not_resumed_twice(client: Client) -> None:
    run_id = client.enqueue("stops_before", {"items": []})
    work(client)
    assert client.cancel(run_id) == "canceled"
    assert client.get_run(run_id).status == RunStatus.CANCELED
    again = client.enqueue("stops_before", {"items": []})
    work(client)
    client.resume(again)
    with pytest.raises(InvalidUpdateError) as caught:
        client.resume(again)  # queued again, not stopped: nothing to let go
    assert str(caught.value) == (
        f"run {again} went on past its breakpoint (before ['b']) already (another resume); it is queued now"
    )


def test_a_crashed_step_past_a_breakpoint_is_continued_past_it(client: Client) -> None:
    # The worker running the step a resume let past its breakpoint dies before any task wrote: the
    # reaper's continuation runs that step, it does not stop at the breakpoint again.
    run_id = client.enqueue("stops_before", {"items": ["x"]}, thread_id="t")
    work(client)
    head = stopped_at(client, run_id, "before", ["b"])
    client.resume(run_id)
    run = client.get_run(run_id)
    lease = Lease(client.kv, "t", run_id, 0.2, 0.1)
    assert lease.claim(run.step, now_iso(), CANCEL_ERROR.model_dump_json(), "w-dead")[0] == 3
    lapse(client.kv, "t", run_id)
    [(_, outcome)] = Reaper(client.kv, Settings()).sweep()
    assert outcome.verdict == "continued"
    work(client)
    new = client.get_run(outcome.detail)
    assert (new.status, new.result) == (RunStatus.COMPLETED, {"items": ["x", "a", "b", "c"]})
    assert new.breakpoint == {"when": "before", "nodes": ["b"], "checkpoint_id": head, "continued": True}


def test_the_queue_takes_langgraphs_config(client: Client) -> None:
    config = {"configurable": {"thread_id": "t-9", "user": "ada"}, "recursion_limit": 5, "tags": ["n"]}
    run_id = client.enqueue("reads_config", {"items": []}, config=config)
    work(client)
    done = ended(client, run_id)
    assert (done.thread_id, done.result) == ("t-9", {"items": ["t-9/ada/5/['n']"]})
    assert done.config == {  # thread_id copied into the metadata, as LangGraph's ensure_config does
        "configurable": {"user": "ada"},
        "metadata": {"thread_id": "t-9"},
        "tags": ["n"],
        "max_super_steps": 4,
    }
    limited = client.enqueue("three_steps", {"items": []}, config={"recursion_limit": 3})
    work(client)
    failed = ended(client, limited)
    assert failed.status == RunStatus.FAILED and failed.error is not None
    assert failed.error.type == StepLimitError.__name__
    clash = r"^the config's thread_id 'b' differs from thread_id 'a'; give one of them$"
    with pytest.raises(ConfigError, match=clash):
        client.enqueue("three_steps", {}, thread_id="a", config={"configurable": {"thread_id": "b"}})


def test_a_queued_run_with_recursion_limit_one_fails_at_its_first_super_step(client: Client) -> None:
    """As in process (tests/compat/test_config.py): recursion_limit 1 is accepted at enqueue (max_super_steps
    0) and the run fails with GraphRecursionError (StepLimitError) before its first super-step runs a node:
    its thread holds the input applied, the first node next."""
    run_id = client.enqueue("three_steps", {"items": ["x"]}, thread_id="rl1", config={"recursion_limit": 1})
    assert client.get_run(run_id).config["max_super_steps"] == 0
    work(client)
    failed = ended(client, run_id)
    assert failed.status == RunStatus.FAILED and failed.error is not None
    assert (failed.error.type, failed.error.message) == (
        StepLimitError.__name__,
        "run needs more than max_super_steps=0 super-steps (next tasks: ['a']); raise it with the run option "
        "max_super_steps (or LangGraph's recursion_limit, 1 now) or GRAPHQ_MAX_SUPER_STEPS",
    )
    head = client.get_state("rl1")
    assert (head.channel_values, [t.node for t in head.next_tasks]) == ({"items": ["x"]}, ["a"])


def test_a_worker_stops_at_a_breakpoint_and_graphq_runs_resume_goes_on(
    client: Client, worker: subprocess.Popen[bytes], env: dict[str, str]
) -> None:
    config = json.dumps({"configurable": {"thread_id": "cli-1"}, "recursion_limit": 10})
    done = run_in_process(
        "enqueue", "stops_before", "--input", '{"items": ["x"]}', "--config", config, env=env
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    wait_for(lambda: client.get_run(run_id).status == RunStatus.AWAITING_INPUT, what="the stop")
    stopped_at(client, run_id, "before", ["b"])
    assert client.get_run(run_id).thread_id == "cli-1"
    shown = run_in_process("runs", "show", run_id, env=env)
    hint = f"run {run_id} stopped at a breakpoint (before ['b']); let it go on with:\n"
    hint += f"  graphq runs resume {run_id}\n"
    assert shown.stdout.endswith(hint), shown.stdout
    resumed = run_in_process("runs", "resume", run_id, env=env)
    assert (resumed.returncode, resumed.stdout) == (0, f"{run_id}\n"), resumed.stderr
    assert ended(client, run_id).result == {"items": ["x", "a", "b", "c"]}
    bad = run_in_process("enqueue", "stops_before", "--config", "[1]", env=env)
    assert (bad.returncode, bad.stderr.strip()) == (
        2,
        "error: --config: must be a JSON object of run options (got list)",
    )
