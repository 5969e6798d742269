"""Node error handlers, ``add_node(..., error_handler=...)`` and ``set_node_defaults(error_handler=...)``:
LangGraph 1.x's result is the expected value, in process on both sides and on the
queue (a burst worker in this process and a ``graphq worker`` subprocess).

The handler runs once the node's tries are spent, as node ``__error_handler__<node>``; it gets the node's
input and, as ``error``, the node's name and exception; its update (or ``Command``) is the task's writes and
the node's edges are not followed. The graphs are in :mod:`tests.workflows.error_handlers`.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
import redis

from graphcore import NodeError, keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import burst, work, worker_env
from tests.workflows import error_handlers
from tests.workflows.error_handlers import CASES, GRAPHS, build

REGISTRY = Registry({g.name: g for g in GRAPHS.values()})

EXPECTED: dict[str, dict[str, Any]] = {
    "handled": {"log": ["a: KeyError('boom'); saw []"]},
    "goto": {"log": ["to c after a", "c"]},
    "defaults": {"log": ["a: KeyError('boom'); saw []", "b", "c"]},
}
"""LangGraph 1.x's results (``test_the_cases_give_langgraphs_results`` checks them on both sides)."""


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_the_cases_give_langgraphs_results(lg: Imports, case: str) -> None:
    assert build(lg, case).invoke({"log": []}) == EXPECTED[case]


def test_a_handlers_writes_apply_in_its_nodes_place(lg: Imports) -> None:
    """A step's writes apply in node-name order (LangGraph's); a handled task's in its failed node's place
    (``z``: last), not first as the task that started first."""

    def z(state: State) -> dict[str, Any]:
        raise KeyError("z")

    builder = lg.StateGraph(State)
    builder.add_node("z", z, error_handler=lambda state: {"log": ["handled z"]})
    builder.add_node("b", error_handlers.b)
    builder.add_node("a", lambda state: {"log": ["a"]})
    for node in ("z", "b", "a"):
        builder.add_edge(lg.START, node)
    assert builder.compile().invoke({"log": []}) == {"log": ["a", "b", "handled z"]}


def test_the_handlers_are_nodes_of_the_graph(lg: Imports) -> None:
    """``get_graph()`` shows each handler as a node without edges: a node's own just before it, the default
    one after the others (LangGraph's order, and its mermaid text)."""
    handled = build(lg, "handled").get_graph()
    assert list(handled.nodes) == ["__start__", "__error_handler__a", "a", "b", "c", "__end__"]
    assert "\t__error_handler__a(__error_handler__a)\n\ta(a)\n" in handled.draw_mermaid()
    defaults = build(lg, "defaults").get_graph()
    assert list(defaults.nodes) == ["__start__", "a", "b", "c", "__default_error_handler__", "__end__"]


def test_a_failing_handler_fails_the_run_with_its_error(lg: Imports) -> None:
    with pytest.raises(ValueError, match="handler failed") as raised:
        build(lg, "failing").invoke({"log": []})
    assert not isinstance(raised.value, KeyError)


def test_the_handler_streams_as_its_own_node(lg: Imports) -> None:
    assert list(build(lg, "goto").stream({"log": []}, stream_mode="updates")) == [
        {"__error_handler__a": {"log": ["to c after a"]}},
        {"c": {"log": ["c"]}},
    ]


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def test_the_handler_runs_after_the_nodes_retries(lg: Imports) -> None:
    """Three tries of the node (its retry policy), then one call of its handler; a handler's own error is
    not handled by set_node_defaults' handler (none handles a handler)."""
    calls: list[str] = []

    def flaky(state: State) -> dict[str, Any]:
        calls.append("a")
        raise ConnectionError(f"try {len(calls)}")

    def handler(state: State, error: NodeError) -> dict[str, Any]:
        calls.append("handler")
        return {"log": [repr(error.error)]}

    builder = lg.StateGraph(State)
    policy = lg.RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False)
    builder.add_node("a", flaky, retry_policy=policy, error_handler=handler)
    builder.add_edge(lg.START, "a")
    assert builder.compile().invoke({"log": []}) == {"log": ["ConnectionError('try 3')"]}
    assert calls == ["a", "a", "a", "handler"]


def test_an_async_node_and_handler_under_ainvoke(lg: Imports) -> None:

    async def fails(state: State) -> dict[str, Any]:
        raise RuntimeError("async boom")

    async def handler(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"{error.node} {error.error}"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", fails, error_handler=handler)
    builder.add_edge(lg.START, "a")
    assert asyncio.run(builder.compile().ainvoke({"log": []})) == {"log": ["a async boom"]}


def test_the_handled_step_is_in_the_threads_state(lg: Imports) -> None:
    """The handler's writes are committed as the step's (the state after the run holds them; nothing is
    left to run)."""
    builder = lg.StateGraph(State)
    builder.add_node("a", error_handlers.boom, error_handler=lambda state: {"log": ["handled"]})
    builder.add_node("b", error_handlers.b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"log": []}, config) == {"log": ["handled"]}
    snapshot = graph.get_state(config)
    assert (snapshot.values, snapshot.next) == ({"log": ["handled"]}, ())


def test_a_queued_run_is_handled_as_in_process(client: Client) -> None:
    """On a burst worker in this process: each case's run ends as ``invoke`` (LangGraph) ends."""
    ids = {case: client.enqueue(f"handlers_{case}", {"log": []}) for case in CASES}
    assert work(client)
    runs = {case: client.get_run(run_id) for case, run_id in ids.items()}
    assert {case: (r.status, r.result) for case, r in runs.items() if case in EXPECTED} == {
        case: (RunStatus.COMPLETED, result) for case, result in EXPECTED.items()
    }
    failed = runs["failing"]
    assert failed.status == RunStatus.FAILED and failed.error is not None
    assert (failed.error.type, failed.error.message, failed.error.node, failed.error.step) == (
        "NodeError",
        "node '__error_handler__a' raised ValueError: handler failed",
        "__error_handler__a",
        1,
    )


def test_a_graphq_worker_runs_the_handler(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    """On a ``graphq worker --burst`` subprocess (the handler is code on the worker). The node's failure,
    saved before the handler ran, is dropped with the step's commit (no pending writes are left of it)."""
    run_id = client.enqueue("handlers_goto", {"log": []})
    burst(worker_env(redis_url, "tests.workflows.error_handlers"))
    run = client.get_run(run_id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, EXPECTED["goto"])
    history = client.get_history(run.thread_id)
    kept = [(c.step, redis_client.hlen(keys.pending_writes(run.thread_id, "", c.id))) for c in history]
    assert kept == [(2, 0), (1, 0), (0, 0), (-1, 1)]  # the input checkpoint keeps its input's writes


def test_an_error_handler_that_is_no_function_is_refused_naming_the_node() -> None:
    from graphcore import StateGraph
    from graphcore.errors import ConfigError

    builder = StateGraph(State)
    with pytest.raises(ConfigError, match=r"^node 'a': error_handler must be a function \(got int\)$"):
        builder.add_node("a", error_handlers.b, error_handler=1)
    with pytest.raises(
        ConfigError, match=r"^set_node_defaults: error_handler must be a function \(got str\)$"
    ):
        builder.set_node_defaults(error_handler="h")


def _failing_once(lg: Imports, calls: list[str], kind: str) -> Any:
    """A graph whose node ``a`` always fails (``KeyError('boom')``) and whose handler fails on its first call
    (both ``kind``: sync or async); the handler logs what it was given (``error.node``, the type and text of
    ``error.error``), then ``b`` runs no more (a handler's task does not follow its node's edges)."""

    def fails(state: State) -> dict[str, Any]:
        calls.append("a")
        raise KeyError("boom")

    def handler(state: State, error: NodeError) -> dict[str, Any]:
        calls.append("handler")
        if calls.count("handler") == 1:
            raise ValueError("handler failed once")
        return {"log": [error.node, type(error.error).__name__, str(error.error)]}

    async def afails(state: State) -> dict[str, Any]:
        return fails(state)

    async def ahandler(state: State, error: NodeError) -> dict[str, Any]:
        return handler(state, error)

    builder = lg.StateGraph(State)
    if kind == "sync":
        builder.add_node("a", fails, error_handler=handler)
    else:
        builder.add_node("a", afails, error_handler=ahandler)
    builder.add_node("b", error_handlers.b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=lg.InMemorySaver())


@pytest.mark.parametrize("durability", ["sync", "exit"])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_run_continued_after_its_handler_failed_runs_only_the_handler(
    lg: Imports, kind: str, durability: str
) -> None:
    """LangGraph saves the node's failure before its handler runs (its text, ``repr``): the state shows it
    while the run is failed, and a run continued after the handler failed runs the handler alone, which gets
    that text as ``error.error``. Before, graphq committed the task once, with the handler's result: the
    continued run ran the node again (calls ``a, handler, a, handler``) and its handler got the exception."""
    calls: list[str] = []
    graph = _failing_once(lg, calls, kind)
    config = {"configurable": {"thread_id": "t"}}

    def invoke(given: Any) -> Any:
        if kind == "sync":
            return graph.invoke(given, config, durability=durability)
        return asyncio.run(graph.ainvoke(given, config, durability=durability))

    with pytest.raises(ValueError, match="handler failed once"):
        invoke({"log": []})
    snapshot = graph.get_state(config)  # the node's failure (before: the handler's, ValueError(...))
    assert [(t.name, t.error) for t in snapshot.tasks] == [("a", "KeyError('boom')")]
    assert invoke(None) == {"log": ["a", "str", "KeyError('boom')"]}
    assert calls == ["a", "handler", "handler"]
