"""LangGraph's ``UntrackedValue`` and ``DeltaChannel`` in state annotations:
LangGraph's result is the expected value on both sides, and on the queue (a burst worker in this process).

An untracked key is never checkpointed: the run sees it in its later super-steps while it runs in one
process; ``get_state`` and a resumed run do not, nor (graphq) a queued run's later step jobs, each of which
loads the run from its checkpoint. A ``DeltaChannel`` folds each step's writes with one batch-reducer call.
The graph is :func:`tests.workflows.channels.build`.
"""

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows import channels
from tests.workflows.channels import build, build_paused

REGISTRY = Registry({"untracked": channels.untracked, "paused": channels.paused})

CONFIG = {"configurable": {"thread_id": "t"}}


def test_an_untracked_value_lives_while_the_run_runs_and_is_never_checkpointed(lg: Imports) -> None:
    graph = build(lg, lg.InMemorySaver())
    paused = graph.invoke({"log": []}, CONFIG)
    assert {k: v for k, v in paused.items() if k != "__interrupt__"} == {
        "log": ["a", "b saw tmp"],
        "scratch": "tmp",
        "d": ["x", "y"],
    }
    assert graph.get_state(CONFIG).values == {"log": ["a", "b saw tmp"], "d": ["x", "y"]}
    assert graph.invoke(lg.Command(resume="ok"), CONFIG) == {
        "log": ["a", "b saw tmp", "c saw None and ok"],
        "d": ["x", "y"],
    }
    assert all("scratch" not in s.values for s in graph.get_state_history(CONFIG))


def test_a_paused_steps_untracked_write_is_not_seen_after_the_answer(lg: Imports) -> None:
    """``a``'s write waits as a pending write while ``b`` asks: saved without its untracked value, so ``c``
    sees none after the answer; a ``Send`` made in the run keeps its argument."""
    graph = build_paused(lg, lg.InMemorySaver())
    paused = graph.invoke({"log": []}, CONFIG)
    assert {k: v for k, v in paused.items() if k != "__interrupt__"} == {"log": ["a"], "scratch": "tmp"}
    assert graph.invoke(lg.Command(resume="ok"), CONFIG) == {"log": ["a", "b ok", "c saw None", "d got sent"]}


def test_values_events_and_a_run_without_checkpointer_hold_it(lg: Imports) -> None:
    graph = build(lg, ask=False)
    assert graph.invoke({"log": []}) == {"log": ["a", "b saw tmp"], "scratch": "tmp", "d": ["x", "y"]}
    assert list(graph.stream({"log": []}, stream_mode="values")) == [
        {"log": [], "d": []},
        {"log": ["a"], "scratch": "tmp", "d": ["x"]},
        {"log": ["a", "b saw tmp"], "scratch": "tmp", "d": ["x", "y"]},
    ]


def test_two_writes_to_a_guarded_untracked_value_in_one_step_are_refused(lg: Imports) -> None:
    class State(TypedDict, total=False):
        strict: Annotated[str, lg.UntrackedValue]
        loose: Annotated[str, lg.UntrackedValue(str, guard=False)]

    def pair(strict: bool) -> Any:
        key = "strict" if strict else "loose"
        builder = lg.StateGraph(State)
        builder.add_node("a", lambda s: {key: "from a"})
        builder.add_node("b", lambda s: {key: "from b"})
        builder.add_edge(lg.START, "a")
        builder.add_edge(lg.START, "b")
        return builder.compile()

    with pytest.raises(
        lg.InvalidUpdateError,
        match=r"^At key 'strict': UntrackedValue\(guard=True\) can receive only one value per step\. Use "
        r"guard=False if you want to store any one of multiple values\.$",
    ):
        pair(strict=True).invoke({})
    assert pair(strict=False).invoke({}) == {"loose": "from b"}


def test_a_delta_channel_folds_each_steps_writes_in_one_call(lg: Imports) -> None:
    calls: list[tuple[list[str], list[list[str]]]] = []

    def batch(value: list[str], writes: list[list[str]]) -> list[str]:
        calls.append((list(value), list(writes)))
        return [*value, *(item for write in writes for item in write)]

    class State(TypedDict, total=False):
        d: Annotated[list[str], lg.DeltaChannel(batch)]
        log: Annotated[list[str], operator.add]

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"d": ["a1", "a2"]})
    builder.add_node("b", lambda s: {"d": ["b"]})
    builder.add_node("c", lambda s: {"d": lg.Overwrite(["reset"])})
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    builder.add_edge(["a", "b"], "c")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    assert graph.invoke({"d": ["in"]}, CONFIG) == {"d": ["reset"], "log": []}
    assert calls == [([], [["in"]]), (["in"], [["a1", "a2"], ["b"]])]
    assert graph.get_state(CONFIG).values == {"d": ["reset"], "log": []}
    with pytest.raises(ValueError, match=r"^snapshot_frequency must be a positive int, got 0$"):
        lg.DeltaChannel(batch, snapshot_frequency=0)


def test_on_the_queue_a_later_step_does_not_see_an_untracked_value(client: Client) -> None:
    """The differences (docs): each step job loads the run from its checkpoint, as a resumed run does
    (LangGraph's ``b`` sees ``tmp`` in one process); the delta channel's result is invoke's."""
    run_id = client.enqueue("untracked", {"log": []})
    assert work(client)
    run = client.get_run(run_id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, {"log": ["a", "b saw None"], "d": ["x", "y"]})
    assert client.get_state(run.thread_id).channel_values == {"log": ["a", "b saw None"], "d": ["x", "y"]}


def test_on_the_queue_an_answered_step_does_not_see_an_untracked_value(client: Client) -> None:
    """As in process for ``c``; ``d``'s ``Send`` argument is stored with the checkpoint, without its
    untracked key, for the next step job (LangGraph, in one process, hands ``d`` the argument whole)."""
    run_id = client.enqueue("paused", {"log": []})
    assert work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    client.answer(run_id, "ok")
    assert work(client)
    run = client.get_run(run_id)
    assert (run.status, run.result) == (
        RunStatus.COMPLETED,
        {"log": ["a", "b ok", "c saw None", "d got None"]},
    )
