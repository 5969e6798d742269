"""LangGraph 1.x's runtime APIs: ``Runtime.execution_info``, ``override``, ``merge``,
``patch_execution_info``, ``get_runtime(context_schema)``, and ``RunControl`` / ``GraphDrained`` (drain a
running graph at its next super-step). LangGraph's result is the expected value on both sides; the queue's
side of ``RunControl`` (a worker's SIGTERM drains it) is in tests/test_shutdown.py.
"""

from __future__ import annotations

import asyncio
import operator
import time
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows import run_info

RUN_ID = "00000000-0000-4000-8000-000000000001"
OTHER_RUN_ID = "00000000-0000-4000-8000-000000000002"
REGISTRY = Registry.load(["tests.workflows.run_info"])


class State(TypedDict):
    log: Annotated[list[str], operator.add]


@dataclass
class Context:
    user: str


def _b(state: State) -> dict[str, Any]:
    return {"log": ["b"]}


def test_execution_info_names_the_try_and_where_it_runs(lg: Imports) -> None:
    """Two tries of ``a`` (its retry policy): each sees its number, the first try's start time, the task,
    the checkpoint the step starts from, the thread and the run."""
    seen: list[Any] = []

    def a(state: State, runtime: lg.Runtime) -> dict[str, Any]:  # type: ignore[name-defined]
        seen.append(runtime.execution_info)
        if len(seen) == 1:
            raise ConnectionError("first try")
        return {"log": ["a"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", a, retry_policy=lg.RetryPolicy(initial_interval=0.01, jitter=False))
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "run_id": RUN_ID}
    before = time.time()
    assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    first, second = seen
    [start] = [s for s in graph.get_state_history(config) if s.next == ("a",)]
    assert (
        first.node_first_attempt_time is not None and before <= first.node_first_attempt_time <= time.time()
    )
    assert (first.node_attempt, second.node_attempt) == (1, 2)
    assert second == first.patch(node_attempt=2)
    assert (first.checkpoint_id, first.checkpoint_ns, first.thread_id, first.run_id) == (
        start.config["configurable"]["checkpoint_id"],
        f"a:{first.task_id}",
        "t",
        RUN_ID,
    )


def test_execution_info_has_no_thread_without_a_checkpointer(lg: Imports) -> None:
    seen: list[Any] = []

    def a(state: State, runtime: lg.Runtime) -> dict[str, Any]:  # type: ignore[name-defined]
        seen.append(runtime.execution_info)
        return {}

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_edge(lg.START, "a")
    builder.compile().invoke({"log": []}, {"run_id": RUN_ID})
    assert [(i.thread_id, i.run_id, i.node_attempt) for i in seen] == [(None, RUN_ID, 1)]


def test_get_runtime_with_a_context_schema_is_the_nodes_runtime(lg: Imports) -> None:
    seen: list[Any] = []

    def a(state: State, runtime: lg.Runtime) -> dict[str, Any]:  # type: ignore[name-defined]
        got = lg.get_runtime(Context)
        seen.append((got.context, got is runtime, got.control is runtime.control))
        seen.append((runtime.server_info, runtime.heartbeat(), runtime.drain_requested, runtime.drain_reason))
        return {}

    builder = lg.StateGraph(State, context_schema=Context)
    builder.add_node("a", a)
    builder.add_edge(lg.START, "a")
    builder.compile().invoke({"log": []}, context=Context(user="ann"))
    assert seen == [(Context(user="ann"), True, True), (None, None, False, None)]


def test_override_merge_and_patch_execution_info(lg: Imports) -> None:
    base = lg.Runtime(context={"user": "ann"}, previous=1)
    assert base.override(context={"user": "bob"}).context == {"user": "bob"}
    assert base.override(context={"user": "bob"}).previous == 1
    merged = base.merge(lg.Runtime(context=None, store=None, previous=2))
    assert (merged.context, merged.store, merged.previous) == ({"user": "ann"}, None, 2)
    assert base.merge(lg.Runtime()).context == {"user": "ann"}
    assert base.merge(lg.Runtime(context={"user": "cy"})).context == {"user": "cy"}
    with pytest.raises(RuntimeError, match=r"^Cannot patch execution_info before it has been set$"):
        base.patch_execution_info(node_attempt=2)
    info = lg.ExecutionInfo(checkpoint_id="c", checkpoint_ns="a:t", task_id="t")
    patched = base.override(execution_info=info).patch_execution_info(node_attempt=3)
    assert patched.execution_info == lg.ExecutionInfo(
        checkpoint_id="c", checkpoint_ns="a:t", task_id="t", node_attempt=3
    )
    with pytest.raises(TypeError):
        base.override(nope=1)
    control = lg.RunControl()
    assert (base.override(control=control).drain_requested, control.drain_reason) == (False, None)
    control.request_drain("deploy")
    assert (base.override(control=control).drain_requested, base.override(control=control).drain_reason) == (
        True,
        "deploy",
    )


def _drain_graph(lg: Imports, control: Any) -> Any:
    def a(state: State, runtime: lg.Runtime) -> dict[str, Any]:  # type: ignore[name-defined]
        control.request_drain("deploy")
        return {"log": [f"a saw {runtime.drain_reason}"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", _b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=lg.InMemorySaver())


def test_a_drain_stops_the_run_after_the_step_in_flight(lg: Imports) -> None:
    """``a`` asks for a drain: its step is committed, ``b`` does not start, GraphDrained names the reason;
    ``invoke(None, config)`` goes on from there (with a fresh control)."""
    control = lg.RunControl()
    graph = _drain_graph(lg, control)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(lg.GraphDrained) as drained:
        graph.invoke({"log": []}, config, control=control)
    assert (str(drained.value), drained.value.reason, isinstance(drained.value, Exception)) == (
        "Graph drained: deploy",
        "deploy",
        True,
    )
    snapshot = graph.get_state(config)
    assert (snapshot.values, snapshot.next) == ({"log": ["a saw deploy"]}, ("b",))
    assert graph.invoke(None, config) == {"log": ["a saw deploy", "b"]}


def test_a_drained_stream_yields_the_steps_before_it(lg: Imports) -> None:
    control = lg.RunControl()
    graph = _drain_graph(lg, control)
    chunks: list[Any] = []
    with pytest.raises(lg.GraphDrained, match=r"^Graph drained: deploy$"):
        for chunk in graph.stream({"log": []}, {"configurable": {"thread_id": "t"}}, control=control):
            chunks.append(chunk)
    assert chunks == [{"a": {"log": ["a saw deploy"]}}]


def test_a_control_drained_before_the_run_runs_no_node(lg: Imports) -> None:
    control = lg.RunControl()
    control.request_drain()
    builder = lg.StateGraph(State)
    builder.add_node("b", _b)
    builder.add_edge(lg.START, "b")
    with pytest.raises(lg.GraphDrained, match=r"^Graph drained: shutdown$"):
        builder.compile().invoke({"log": []}, control=control)


def test_ainvoke_drains_too(lg: Imports) -> None:
    control = lg.RunControl()

    async def a(state: State) -> dict[str, Any]:
        control.request_drain("async")
        return {"log": ["a"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", _b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(lg.GraphDrained, match=r"^Graph drained: async$"):
        asyncio.run(graph.ainvoke({"log": []}, config, control=control))
    assert graph.get_state(config).next == ("b",)


def test_execution_info_run_id_is_the_one_the_caller_gave(lg: Imports) -> None:
    """LangGraph: ``runtime.execution_info.run_id`` is the config's ``run_id``, None when the call gives none
    (graphq still names the run in its checkpoints' metadata); a call that answers an interrupt shows its
    own; a graph a node invokes sees none (a child config carries no ``run_id``)."""
    graph = run_info.build(lg).compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"seen": []}, config)
    assert graph.invoke(lg.Command(resume="yes"), config) == {
        "seen": [["a", None], ["b", None], ["inner", None]]
    }
    named = {"configurable": {"thread_id": "u"}, "run_id": RUN_ID}
    graph.invoke({"seen": []}, named)
    assert graph.invoke(lg.Command(resume="yes"), {**named, "run_id": OTHER_RUN_ID}) == {
        "seen": [["a", RUN_ID], ["b", OTHER_RUN_ID], ["inner", None]]
    }


def test_a_queued_runs_nodes_see_its_id(client: Client) -> None:
    """On the queue (docs, "LangGraph differences") the queue names every run: its nodes see that id,
    after an answer too; a graph a node invokes sees none, as in process."""
    run_id = client.enqueue("run_info", {"seen": []})
    work(client)
    client.answer(run_id, "yes")
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": [["a", run_id], ["b", run_id], ["inner", None]]}
