"""Streaming as tasks finish (G1): a super-step's ``updates`` and ``tasks`` results arrive in the
order its tasks finish, while the slower ones still run; ``values`` and ``checkpoints`` at the step's end; a
resumed step's replayed tasks; the ``tasks`` start events' ``metadata``. The same program, LangGraph's imports
or graphq's, gives LangGraph's chunks (random ids compared by relation)."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports
from tests.workers import wait_for


class State(TypedDict):
    items: Annotated[list[str], operator.add]


class Doc(TypedDict):
    doc: str
    items: Annotated[list[str], operator.add]


class Docs(TypedDict):
    docs: list[str]
    items: Annotated[list[str], operator.add]


def sleeping(name: str, seconds: float) -> Any:
    def node(state: State) -> dict[str, Any]:
        time.sleep(seconds)
        return {"items": [name]}

    return node


def fan_out(lg: Imports, *nodes: tuple[str, Any], then: str | None = None, saver: bool = False) -> Any:
    """START → each node (added in name order, LangGraph's task order) → ``then`` when given."""
    builder = lg.StateGraph(State)
    for name, fn in nodes:
        builder.add_node(name, fn)
        builder.add_edge(lg.START, name)
    if then is not None:
        builder.add_node(then, lambda s: {"items": [then]})
        builder.add_edge([name for name, _ in nodes], then)
    return builder.compile(checkpointer=lg.InMemorySaver() if saver else None)


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_the_faster_task_s_update_comes_first_while_the_slower_runs(lg: Imports) -> None:
    """LangGraph: of two parallel tasks, the one that finishes first is yielded first, before the other
    finishes: the slower one waits (up to 10 s) until the caller has the faster one's update."""
    received = threading.Event()

    def slow(state: State) -> dict[str, Any]:
        return {"items": [f"slow, fast seen first: {received.wait(10)}"]}

    graph = fan_out(lg, ("fast", sleeping("fast", 0)), ("slow", slow))
    chunks = []
    for chunk in graph.stream({"items": []}):
        chunks.append(chunk)
        received.set()
    assert chunks == [{"fast": {"items": ["fast"]}}, {"slow": {"items": ["slow, fast seen first: True"]}}]


def test_task_results_as_they_finish_values_at_the_step_s_end(lg: Imports) -> None:
    """LangGraph: a step's tasks start together; each task's ``updates`` and ``tasks`` result come as it
    finishes; the step's ``values`` after them, then the next step's start."""
    graph = fan_out(lg, ("a_slow", sleeping("slow", 0.25)), ("b_fast", sleeping("fast", 0.01)), then="join")
    chunks = list(graph.stream({"items": []}, stream_mode=["updates", "tasks", "values"]))
    shapes = [(m, c.get("name", c) if m == "tasks" else c, "result" in c) for m, c in chunks]
    assert shapes == [
        ("values", {"items": []}, False),
        ("tasks", "a_slow", False),
        ("tasks", "b_fast", False),
        ("updates", {"b_fast": {"items": ["fast"]}}, False),
        ("tasks", "b_fast", True),
        ("updates", {"a_slow": {"items": ["slow"]}}, False),
        ("tasks", "a_slow", True),
        ("values", {"items": ["slow", "fast"]}, False),
        ("tasks", "join", False),
        ("updates", {"join": {"items": ["join"]}}, False),
        ("tasks", "join", True),
        ("values", {"items": ["slow", "fast", "join"]}, False),
    ]


@pytest.mark.parametrize("subgraphs", [False, True])
def test_async_nodes_under_astream_as_they_finish(lg: Imports, subgraphs: bool) -> None:
    """LangGraph: under ``astream`` the async task that finishes first is yielded first."""

    async def slow(state: State) -> dict[str, Any]:
        await asyncio.sleep(0.25)
        return {"items": ["a"]}

    async def fast(state: State) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"items": ["b"]}

    graph = fan_out(lg, ("a", slow), ("b", fast), then="c")

    async def run() -> list[Any]:
        return [c async for c in graph.astream({"items": []}, subgraphs=subgraphs)]

    chunks = [{"b": {"items": ["b"]}}, {"a": {"items": ["a"]}}, {"c": {"items": ["c"]}}]
    assert asyncio.run(run()) == ([((), c) for c in chunks] if subgraphs else chunks)


def test_a_pause_comes_before_a_slower_sibling_s_update(lg: Imports) -> None:
    """LangGraph: a task that pauses at once yields its ``__interrupt__`` chunk (and its ``values`` with the
    interrupt) before a slower sibling's update; the state with the sibling's writes comes last."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [lg.interrupt("q")]}

    graph = fan_out(lg, ("ask", ask), ("ok", sleeping("ok", 0.25)), saver=True)
    chunks = list(graph.stream({"items": []}, thread(), stream_mode=["updates", "values"]))
    (paused,) = chunks[1][1]["__interrupt__"]
    assert paused.value == "q"
    assert chunks == [
        ("values", {"items": []}),
        ("updates", {"__interrupt__": (paused,)}),
        ("values", {"items": [], "__interrupt__": (paused,)}),
        ("updates", {"ok": {"items": ["ok"]}}),
        ("values", {"items": ["ok"]}),
    ]


def test_a_resumed_step_replays_the_finished_sibling_as_cached(lg: Imports) -> None:
    """LangGraph: on ``Command(resume=...)`` the step's tasks all start again; the finished sibling's update
    is replayed from its pending writes as ``{node: update, "__metadata__": {"cached": True}}``, without a
    ``tasks`` result, and the answered task runs."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": ["ask:" + lg.interrupt("q")]}

    graph = fan_out(lg, ("ask", ask), ("ok", sleeping("ok", 0.0)), then="join", saver=True)
    list(graph.stream({"items": []}, thread()))
    chunks = list(graph.stream(lg.Command(resume="A"), thread(), stream_mode=["updates", "tasks"]))
    shapes = [(m, (c["name"], "result" in c) if m == "tasks" else c) for m, c in chunks]
    assert shapes == [
        ("tasks", ("ask", False)),
        ("tasks", ("ok", False)),
        ("updates", {"ok": {"items": ["ok"]}, "__metadata__": {"cached": True}}),
        ("updates", {"ask": {"items": ["ask:A"]}}),
        ("tasks", ("ask", True)),
        ("tasks", ("join", False)),
        ("updates", {"join": {"items": ["join"]}}),
        ("tasks", ("join", True)),
    ]
    assert graph.get_state(thread()).values == {"items": ["ask:A", "ok", "join"]}


@pytest.mark.parametrize("answered", [("a",), ("a", "b")])
def test_a_resumed_step_streams_the_request_still_waiting(lg: Imports, answered: tuple[str, ...]) -> None:
    """LangGraph: a resume that answers some of a step's requests runs the answered tasks and streams the
    unanswered task's ``__interrupt__`` again (it pauses again), after the cached sibling; one task run again
    (graphq emits at the step's end) or two (as they finish); graphq dropped it."""

    def asking(name: str) -> Any:
        return lambda state: {"items": [name + ":" + lg.interrupt(name)]}

    askers = [(name, asking(name)) for name in ("a", "b", "w")]
    graph = fan_out(lg, *askers, ("ok", sleeping("ok", 0.0)), saver=True)
    list(graph.stream({"items": []}, thread()))
    asked = {i.value: i.id for t in graph.get_state(thread()).tasks for i in t.interrupts}
    answers = {asked[name]: name.upper() for name in answered}
    chunks = list(graph.stream(lg.Command(resume=answers), thread()))
    waiting = [name for name in ("a", "b", "w") if name not in answered]
    assert chunks[0] == {"ok": {"items": ["ok"]}, "__metadata__": {"cached": True}}
    assert sorted(chunks[1 : 1 + len(answered)], key=str) == [
        {name: {"items": [f"{name}:{name.upper()}"]}} for name in answered
    ]
    assert sorted(i.value for c in chunks[1 + len(answered) :] for i in c["__interrupt__"]) == waiting
    assert len(chunks) == 1 + len(answered) + len(waiting)
    assert graph.get_state(thread()).next == tuple(waiting)


def test_a_retried_step_replays_the_sibling_that_finished_as_cached(lg: Imports) -> None:
    """LangGraph: ``stream(None, config)`` after a failed step replays the sibling that finished (cached) and
    runs the failed task again."""
    tries: list[int] = []

    def flaky(state: State) -> dict[str, Any]:
        tries.append(1)
        if len(tries) == 1:
            time.sleep(0.05)
            raise ValueError("once")
        return {"items": ["flaky"]}

    graph = fan_out(lg, ("flaky", flaky), ("ok", sleeping("ok", 0.0)), saver=True)
    with pytest.raises(Exception, match="once"):
        list(graph.stream({"items": []}, thread()))
    assert list(graph.stream(None, thread())) == [
        {"ok": {"items": ["ok"]}, "__metadata__": {"cached": True}},
        {"flaky": {"items": ["flaky"]}},
    ]


def test_a_failing_step_streams_the_sibling_that_finished_then_the_failure(lg: Imports) -> None:
    """LangGraph: a sibling that finished before the failure is streamed first, then the failed task's
    result with its error, then the error is raised."""

    def boom(state: State) -> dict[str, Any]:
        time.sleep(0.2)
        raise ValueError("boom")

    graph = fan_out(lg, ("boom", boom), ("fast", sleeping("fast", 0.0)))
    chunks: list[Any] = []
    with pytest.raises(Exception, match="boom"):
        for chunk in graph.stream({"items": []}, stream_mode=["updates", "tasks"]):
            chunks.append(chunk)
    shapes = [(m, (c["name"], "result" in c) if m == "tasks" else c) for m, c in chunks]
    assert shapes == [
        ("tasks", ("boom", False)),
        ("tasks", ("fast", False)),
        ("updates", {"fast": {"items": ["fast"]}}),
        ("tasks", ("fast", True)),
        ("tasks", ("boom", True)),
    ]
    assert repr(chunks[-1][1]["error"]) == "ValueError('boom')"


def test_subgraph_events_as_each_subgraph_finishes(lg: Imports) -> None:
    """LangGraph: with ``subgraphs=True`` a faster subgraph node's inner and outer updates come before a
    slower one's, and a plain sibling's in between, each as it finishes."""

    def sub(name: str, seconds: float) -> Any:
        builder = lg.StateGraph(State)
        builder.add_node("inner", sleeping(name, seconds))
        builder.add_edge(lg.START, "inner")
        return builder.compile()

    graph = fan_out(lg, ("A", sub("a", 0.4)), ("B", sub("b", 0.02)), ("C", sleeping("c", 0.2)))
    chunks = list(graph.stream({"items": []}, subgraphs=True))
    assert [(ns[0].split(":")[0] if ns else "", c) for ns, c in chunks] == [
        ("B", {"inner": {"items": ["b"]}}),
        ("", {"B": {"items": ["b"]}}),
        ("", {"C": {"items": ["c"]}}),
        ("A", {"inner": {"items": ["a"]}}),
        ("", {"A": {"items": ["a"]}}),
    ]


def test_sends_into_a_subgraph_stream_as_each_finishes(lg: Imports) -> None:
    """LangGraph: ``Send`` tasks into a subgraph node stream, with ``subgraphs=True``, in the order they
    finish: each subgraph's inner update, then its outer one."""
    waits = {"a": 0.3, "b": 0.0}
    inner = lg.StateGraph(Doc)
    inner.add_node("proc", lambda s: (time.sleep(waits[s["doc"]]), {"items": [s["doc"].upper()]})[1])
    inner.add_edge(lg.START, "proc")
    builder = lg.StateGraph(Docs)
    builder.add_node("worker", inner.compile())
    builder.add_conditional_edges(
        lg.START, lambda s: [lg.Send("worker", {"doc": d}) for d in s["docs"]], ["worker"]
    )
    chunks = list(builder.compile().stream({"docs": ["a", "b"], "items": []}, subgraphs=True))
    assert [(len(ns), c) for ns, c in chunks] == [
        (1, {"proc": {"items": ["B"]}}),
        (0, {"worker": {"items": ["B"]}}),
        (1, {"proc": {"items": ["A"]}}),
        (0, {"worker": {"items": ["A"]}}),
    ]
    assert chunks[0][0] != chunks[2][0]  # two subgraph runs, two namespaces


def test_leaving_after_the_first_result_runs_no_further_step(lg: Imports) -> None:
    """LangGraph: leaving the loop at the first task's result ends the stream; the slower sibling of that
    step finishes, the next step does not run."""
    ran: list[str] = []

    def slow(state: State) -> dict[str, Any]:
        time.sleep(0.1)
        ran.append("slow")
        return {"items": ["slow"]}

    builder = lg.StateGraph(State)
    builder.add_node("fast", sleeping("fast", 0.0))
    builder.add_node("slow", slow)
    builder.add_node("join", lambda s: ran.append("join") or {"items": ["join"]})
    builder.add_edge(lg.START, "fast")
    builder.add_edge(lg.START, "slow")
    builder.add_edge(["fast", "slow"], "join")
    for chunk in builder.compile().stream({"items": []}):
        assert chunk == {"fast": {"items": ["fast"]}}
        break
    wait_for(lambda: ran, 10, "the slower sibling to finish")
    time.sleep(0.2)  # a next step would have started by now
    assert ran == ["slow"]


def test_a_graph_streamed_inside_a_node_yields_as_its_tasks_finish(lg: Imports) -> None:
    """LangGraph: a graph a node streams (``inner.stream(...)`` in the node) yields its tasks' updates in
    the order they finish too."""
    inner = fan_out(lg, ("a_slow", sleeping("slow", 0.15)), ("b_fast", sleeping("fast", 0.01)))

    def outer_node(state: State) -> dict[str, Any]:
        return {"items": [next(iter(c)) for c in inner.stream({"items": []})]}

    builder = lg.StateGraph(State)
    builder.add_node("outer", outer_node)
    builder.add_edge(lg.START, "outer")
    assert builder.compile().invoke({"items": []}) == {"items": ["b_fast", "a_slow"]}


# --- the tasks start events' metadata ---


def starts(graph: Any, config: Any, subgraphs: bool = False) -> list[Any]:
    chunks = graph.stream({"items": []}, config, stream_mode="tasks", subgraphs=subgraphs)
    if not subgraphs:
        return [(c["name"], c.get("metadata")) for c in chunks if "input" in c]
    return [(len(ns), c["name"], c.get("metadata")) for ns, c in chunks if "input" in c]


@pytest.mark.parametrize(
    ("config", "metadata"),
    [
        ({}, None),
        ({"metadata": {"user": "u"}, "tags": ["t"]}, {"user": "u", "tags": ["t"]}),
        ({"metadata": {"user": "u", "langgraph_step": 9}}, {"user": "u"}),
        ({"tags": ["seq:step:1"]}, None),
        ({"tags": ["seq:step:1", "t"], "configurable": {"user_id": "x"}}, {"tags": ["t"]}),
    ],
)
def test_a_task_start_carries_the_run_s_metadata_and_tags(lg: Imports, config: Any, metadata: Any) -> None:
    """LangGraph: a ``tasks`` start event has ``metadata``: the run's metadata without LangGraph's own keys,
    then ``"tags"`` (its ``seq:step:*`` tags dropped); none when both are empty (configurable keys are not
    metadata)."""
    graph = fan_out(lg, ("a", sleeping("a", 0.0)))
    assert starts(graph, config) == [("a", metadata)]


def test_a_task_start_carries_the_node_s_metadata_and_a_subgraph_inherits(lg: Imports) -> None:
    """LangGraph: a node's own metadata follows the run's in its task's start event; a subgraph's and an
    invoked graph's tasks carry their parent task's metadata and tags, then their node's."""
    inner = lg.StateGraph(State)
    inner.add_node("inner", sleeping("i", 0.0), metadata={"im": 2})
    inner.add_edge(lg.START, "inner")
    sub = inner.compile()
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: sub.invoke(s), metadata={"nm": 1})
    builder.add_node("s", sub, metadata={"sm": 3})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "s")
    graph = builder.compile()
    assert starts(graph, {"metadata": {"user": "u"}, "tags": ["t"]}, subgraphs=True) == [
        (0, "a", {"user": "u", "nm": 1, "tags": ["t"]}),
        (1, "inner", {"user": "u", "nm": 1, "im": 2, "tags": ["t"]}),
        (0, "s", {"user": "u", "sm": 3, "tags": ["t"]}),
        (1, "inner", {"user": "u", "sm": 3, "im": 2, "tags": ["t"]}),
    ]
    assert starts(graph, {}) == [("a", {"nm": 1}), ("s", {"sm": 3})]
