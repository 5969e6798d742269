"""Engine bugs the LangGraph comparison found: each case shows LangGraph's value, which graphq now
gives too (or, where graphq deliberately refuses, each side's own result)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import operator
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


# -- Overwrite wins its super-step --------------------------------------------------------------------------


@pytest.mark.parametrize("first", ["reset", "append"])
def test_an_overwrite_wins_over_a_sibling_append_in_its_step(lg: Imports, first: str) -> None:
    """LangGraph: an ``Overwrite`` replaces the channel's value for its super-step; a parallel node's reducer
    write to the same channel in that step is dropped, whichever task comes first."""
    nodes = {
        "reset": lambda s: {"items": lg.Overwrite(["reset"])},
        "append": lambda s: {"items": ["appended"]},
    }
    builder = lg.StateGraph(State)
    for name in (first, *(n for n in nodes if n != first)):
        builder.add_node(name, nodes[name])
        builder.add_edge(lg.START, name)
    assert builder.compile().invoke({"items": ["in"]}) == {"items": ["reset"]}


def test_writes_after_an_overwrite_step_are_reduced_again(lg: Imports) -> None:
    """LangGraph: the ``Overwrite`` only governs its own super-step; the next step's writes go through the
    reducer onto the overwritten value."""
    builder = lg.StateGraph(State)
    builder.add_node("reset", lambda s: {"items": lg.Overwrite(["reset"])})
    builder.add_node("more", lambda s: {"items": ["more"]})
    builder.add_edge(lg.START, "reset")
    builder.add_edge("reset", "more")
    assert builder.compile().invoke({"items": ["in"]}) == {"items": ["reset", "more"]}


def test_two_overwrites_of_one_channel_in_one_step_are_refused(lg: Imports) -> None:
    """LangGraph: two ``Overwrite`` writes to one channel in one super-step raise ``InvalidUpdateError``."""
    builder = lg.StateGraph(State)
    for name in ("x", "y"):
        builder.add_node(name, lambda s, n=name: {"items": lg.Overwrite([n])})
        builder.add_edge(lg.START, name)
    with pytest.raises(lg.InvalidUpdateError):
        builder.compile().invoke({"items": []})


def test_a_node_returning_an_overwrite_and_routing_sees_the_new_value(lg: Imports) -> None:
    """LangGraph: a conditional edge after a node that wrote an ``Overwrite`` reads the overwritten value."""
    seen: list[Any] = []
    builder = lg.StateGraph(State)
    builder.add_node("reset", lambda s: {"items": lg.Overwrite(["only"])})
    builder.add_node("done", lambda s: seen.append(list(s["items"])) or {})
    builder.add_edge(lg.START, "reset")
    builder.add_conditional_edges("reset", lambda s: "done" if s["items"] == ["only"] else lg.END)
    builder.add_edge("done", lg.END)
    assert builder.compile().invoke({"items": ["a", "b"]}) == {"items": ["only"]}
    assert seen == [["only"]]


# -- interrupt() inside a graph a node invokes --------------------------------------------------------------


def _saver(lg: Imports) -> Any:
    return lg.InMemorySaver()


def _thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _asks(lg: Imports, *questions: str) -> Any:
    """A graph whose one node asks ``questions`` in turn and writes the answers."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [lg.interrupt(q) for q in questions]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    return builder.compile()


def _one_node(lg: Imports, fn: Any, saver: bool = True) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("n", fn)
    builder.add_edge(lg.START, "n")
    return builder.compile(checkpointer=_saver(lg) if saver else None)


def _values(result: dict[str, Any]) -> list[Any]:
    return [i.value for i in result["__interrupt__"]]


def test_an_interrupt_in_a_graph_a_node_invokes_pauses_the_parent(lg: Imports) -> None:
    """LangGraph: ``interrupt()`` in a graph that a node invokes (``inner.invoke`` in its body) pauses the
    parent run with the question; ``Command(resume=...)`` re-runs the node and the answer reaches the inner
    graph."""
    inner = _asks(lg, "q?")
    entered: list[int] = []

    def node(state: State) -> dict[str, Any]:
        entered.append(1)
        return {"items": [f"after:{inner.invoke({'items': ['x']})['items']}"]}

    graph = _one_node(lg, node)
    paused = graph.invoke({"items": []}, _thread())
    assert paused["items"] == []
    assert _values(paused) == ["q?"]
    assert graph.invoke(lg.Command(resume="yes"), _thread()) == {"items": ["after:['x', 'yes']"]}
    assert len(entered) == 2  # the node runs again from its start


def test_an_inner_graph_asking_twice_pauses_the_parent_twice(lg: Imports) -> None:
    """LangGraph: each ``interrupt()`` of the invoked graph pauses the parent in turn; the answers reach the
    inner node's calls in order."""
    inner = _asks(lg, "first", "second")
    graph = _one_node(lg, lambda s: {"items": inner.invoke({"items": ["x"]})["items"]})
    assert _values(graph.invoke({"items": []}, _thread())) == ["first"]
    assert _values(graph.invoke(lg.Command(resume="A"), _thread())) == ["second"]
    assert graph.invoke(lg.Command(resume="B"), _thread()) == {"items": ["x", "A", "B"]}


def test_parallel_questions_of_an_invoked_graph_surface_together(lg: Imports) -> None:
    """LangGraph: two parallel nodes of the invoked graph that ask both surface on the parent; a map of
    interrupt id to answer answers both at once."""
    builder = lg.StateGraph(State)
    builder.add_node("p", lambda s: {"items": [f"p:{lg.interrupt('qp')}"]})
    builder.add_node("q", lambda s: {"items": [f"q:{lg.interrupt('qq')}"]})
    builder.add_edge(lg.START, "p")
    builder.add_edge(lg.START, "q")
    inner = builder.compile()
    graph = _one_node(lg, lambda s: {"items": inner.invoke({"items": []})["items"]})
    paused = graph.invoke({"items": []}, _thread())
    assert sorted(_values(paused)) == ["qp", "qq"]
    ids = {i.value: i.id for i in paused["__interrupt__"]}
    answer = lg.Command(resume={ids["qp"]: "P", ids["qq"]: "Q"})
    assert graph.invoke(answer, _thread()) == {"items": ["p:P", "q:Q"]}


def test_a_graph_invoked_inside_a_subgraph_node_pauses_the_root(lg: Imports) -> None:
    """LangGraph: a graph invoked by a node of a subgraph (a compiled graph added as a node) pauses the
    root run through both levels; its answers go back down to it."""
    inner = _asks(lg, "first", "second")
    mid = lg.StateGraph(State)
    mid.add_node("m", lambda s: {"items": inner.invoke({"items": []})["items"]})
    mid.add_edge(lg.START, "m")
    root = lg.StateGraph(State)
    root.add_node("sub", mid.compile())
    root.add_edge(lg.START, "sub")
    graph = root.compile(checkpointer=_saver(lg))
    assert _values(graph.invoke({"items": []}, _thread())) == ["first"]
    assert _values(graph.invoke(lg.Command(resume="A"), _thread())) == ["second"]
    assert graph.invoke(lg.Command(resume="B"), _thread()) == {"items": ["A", "B"]}


def test_except_exception_around_an_inner_call_and_its_pause(lg: Imports) -> None:
    """LangGraph: its interrupt is an ``Exception``, so ``except Exception`` around the inner call swallows
    the pause and the node carries on. graphq (a deliberate difference): its interrupt is a
    ``BaseException``, so the node pauses and the question is not lost."""
    inner = _asks(lg, "q?")

    def node(state: State) -> dict[str, Any]:
        try:
            return {"items": inner.invoke({"items": []})["items"]}
        except Exception:
            return {"items": ["swallowed"]}

    graph = _one_node(lg, node)
    if lg.is_langgraph:
        assert graph.invoke({"items": []}, _thread()) == {"items": ["swallowed"]}
        return
    assert _values(graph.invoke({"items": []}, _thread())) == ["q?"]
    assert graph.invoke(lg.Command(resume="yes"), _thread()) == {"items": ["yes"]}


def test_a_graph_a_node_streams_pauses_the_parent_too(lg: Imports) -> None:
    """LangGraph: ``inner.stream(...)`` in a node pauses the parent like ``inner.invoke`` when the inner
    graph asks; on the answer the node streams it again to the end."""
    inner = _asks(lg, "ok?")

    def node(state: State) -> dict[str, Any]:
        chunks = list(inner.stream({"items": ["x"]}, stream_mode="values"))
        return {"items": [str(chunks[-1]["items"])]}

    graph = _one_node(lg, node)
    assert _values(graph.invoke({"items": []}, _thread())) == ["ok?"]
    assert graph.invoke(lg.Command(resume="yes"), _thread()) == {"items": ["['x', 'yes']"]}


def test_a_graph_an_async_node_awaits_pauses_the_parent(lg: Imports) -> None:
    """LangGraph: ``await inner.ainvoke(...)`` in an async node pauses the parent when the inner graph
    asks, and the answer reaches it."""
    inner = _asks(lg, "ok?")

    async def node(state: State) -> dict[str, Any]:
        return {"items": (await inner.ainvoke({"items": []}))["items"]}

    graph = _one_node(lg, node)

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        first = await graph.ainvoke({"items": []}, _thread())
        return first, await graph.ainvoke(lg.Command(resume="yes"), _thread())

    paused, done = asyncio.run(both())
    assert _values(paused) == ["ok?"]
    assert done == {"items": ["yes"]}


def test_a_graph_invoked_on_a_thread_of_its_own_returns_its_question(lg: Imports) -> None:
    """LangGraph: a graph a node invokes with a ``thread_id`` of its own runs that thread's lineage: its
    pause is returned to the node (``__interrupt__`` in the result), the parent does not pause."""
    inner = _asks(lg, "ok?")

    def node(state: State) -> dict[str, Any]:
        out = inner.invoke({"items": []}, _thread("own"))
        return {"items": [*sorted(out), *_values(out)]}

    graph = _one_node(lg, node)
    assert graph.invoke({"items": []}, _thread()) == {"items": ["__interrupt__", "items", "ok?"]}


def test_a_node_asking_around_the_graph_it_invokes(lg: Imports) -> None:
    """LangGraph: a node that asks, then invokes a graph that asks, then asks again pauses three times; each
    answer reaches its question (the node's own answers are kept across the inner graph's pause)."""
    inner = _asks(lg, "inner?")

    def node(state: State) -> dict[str, Any]:
        first = lg.interrupt("outer?")
        middle = inner.invoke({"items": []})["items"]
        return {"items": [first, *middle, lg.interrupt("last?")]}

    graph = _one_node(lg, node)
    assert _values(graph.invoke({"items": []}, _thread())) == ["outer?"]
    assert _values(graph.invoke(lg.Command(resume="A"), _thread())) == ["inner?"]
    assert _values(graph.invoke(lg.Command(resume="B"), _thread())) == ["last?"]
    assert graph.invoke(lg.Command(resume="C"), _thread()) == {"items": ["A", "B", "C"]}


def test_an_async_node_asking_around_the_graph_it_awaits(lg: Imports) -> None:
    """LangGraph: the same in an async node that awaits ``inner.ainvoke(...)`` between its questions."""
    inner = _asks(lg, "inner?")

    async def node(state: State) -> dict[str, Any]:
        first = lg.interrupt("outer?")
        middle = (await inner.ainvoke({"items": []}))["items"]
        return {"items": [first, *middle, lg.interrupt("last?")]}

    graph = _one_node(lg, node)

    async def answer_all() -> list[Any]:
        seen = [_values(await graph.ainvoke({"items": []}, _thread()))]
        for answer in ("A", "B"):
            seen.append(_values(await graph.ainvoke(lg.Command(resume=answer), _thread())))
        return [*seen, await graph.ainvoke(lg.Command(resume="C"), _thread())]

    assert asyncio.run(answer_all()) == [["outer?"], ["inner?"], ["last?"], {"items": ["A", "B", "C"]}]


# -- each graph call of a node has its own namespace ---------------------------------------------------------


def _counting(lg: Imports, runs: Counter[str]) -> Any:
    """A graph whose node counts its runs by its input's first item and appends ``done``."""

    def work(state: State) -> dict[str, Any]:
        runs[state["items"][0]] += 1
        return {"items": ["done"]}

    builder = lg.StateGraph(State)
    builder.add_node("w", work)
    builder.add_edge(lg.START, "w")
    return builder.compile()


def test_two_calls_of_one_graph_from_a_node_both_run(lg: Imports) -> None:
    """LangGraph: with a checkpointer, two invocations of one graph from one node each run on their own
    input (each call checkpoints in a namespace of its own)."""
    runs: Counter[str] = Counter()
    inner = _counting(lg, runs)

    def node(state: State) -> dict[str, Any]:
        first, second = inner.invoke({"items": ["1"]}), inner.invoke({"items": ["2"]})
        return {"items": [*first["items"], *second["items"]]}

    graph = _one_node(lg, node)
    assert graph.invoke({"items": []}, _thread()) == {"items": ["1", "done", "2", "done"]}
    assert runs == {"1": 1, "2": 1}


def test_a_resumed_node_finds_the_state_of_its_earlier_graph_calls(lg: Imports) -> None:
    """LangGraph: when the node runs again after an answer, its earlier (finished) graph calls return their
    results without running again, and the asking call gets the answer."""
    runs: Counter[str] = Counter()
    inner, asker = _counting(lg, runs), _asks(lg, "ok?")

    def node(state: State) -> dict[str, Any]:
        one, two = inner.invoke({"items": ["one"]}), inner.invoke({"items": ["two"]})
        return {"items": one["items"] + two["items"] + asker.invoke({"items": []})["items"]}

    graph = _one_node(lg, node)
    assert _values(graph.invoke({"items": []}, _thread())) == ["ok?"]
    assert graph.invoke(lg.Command(resume="yes"), _thread()) == {
        "items": ["one", "done", "two", "done", "yes"]
    }
    assert runs == {"one": 1, "two": 1}


def test_two_asking_calls_of_one_graph_are_answered_in_turn(lg: Imports) -> None:
    """LangGraph: two calls of one asking graph from one node pause the parent one after the other; each
    gets its own answer."""
    asker = _asks(lg, "ok?")
    graph = _one_node(
        lg, lambda s: {"items": asker.invoke({"items": []})["items"] + asker.invoke({})["items"]}
    )
    assert len(graph.invoke({"items": []}, _thread())["__interrupt__"]) == 1
    assert len(graph.invoke(lg.Command(resume="A"), _thread())["__interrupt__"]) == 1
    assert graph.invoke(lg.Command(resume="B"), _thread()) == {"items": ["A", "B"]}


def _retried_once(lg: Imports, fn: Any) -> Any:
    """A graph of one node ``fn``, retried once on ValueError without a pause."""
    policy = lg.RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False, retry_on=ValueError)
    builder = lg.StateGraph(State)
    builder.add_node("n", fn, retry_policy=policy)
    builder.add_edge(lg.START, "n")
    return builder.compile(checkpointer=_saver(lg))


def test_a_retried_node_runs_the_graphs_it_invokes_again(lg: Imports) -> None:
    """LangGraph: a node that its retry policy runs again is a new execution: the graph it invoked in the
    failed try runs again on its input (it does not return the failed try's result)."""
    runs: Counter[str] = Counter()
    inner, tries = _counting(lg, runs), []

    def node(state: State) -> dict[str, Any]:
        out = inner.invoke({"items": ["x"]})
        tries.append(1)
        if len(tries) == 1:
            raise ValueError("first try fails")
        return {"items": out["items"]}

    assert _retried_once(lg, node).invoke({"items": []}, _thread()) == {"items": ["x", "done"]}
    assert runs == {"x": 2}


def test_a_retried_async_node_runs_the_graphs_it_awaits_again(lg: Imports) -> None:
    """LangGraph: the same for an async node and ``await inner.ainvoke(...)``."""
    runs: Counter[str] = Counter()
    inner, tries = _counting(lg, runs), []

    async def node(state: State) -> dict[str, Any]:
        out = await inner.ainvoke({"items": ["x"]})
        tries.append(1)
        if len(tries) == 1:
            raise ValueError("first try fails")
        return {"items": out["items"]}

    graph = _retried_once(lg, node)
    assert asyncio.run(graph.ainvoke({"items": []}, _thread())) == {"items": ["x", "done"]}
    assert runs == {"x": 2}


# -- a failed super-step keeps the writes of its finished tasks ---------------------------------------------


class Pair(TypedDict, total=False):
    side: str
    flaky: str


def test_after_a_failed_step_only_the_failed_task_runs_again(lg: Imports) -> None:
    """LangGraph: when one task of a super-step fails, its finished siblings' writes are kept as pending
    writes; ``invoke(None, config)`` runs only the failed task again."""
    fired: list[str] = []
    failing = [True]
    side_done = threading.Event()

    def side(state: Pair) -> dict[str, Any]:
        fired.append("side")
        side_done.set()
        return {"side": "done"}

    def flaky(state: Pair) -> dict[str, Any]:
        fired.append("flaky")
        if failing.pop() if failing else False:
            side_done.wait(5)  # the sibling has finished when this task fails
            raise RuntimeError("boom")
        return {"flaky": "done"}

    builder = lg.StateGraph(Pair)
    builder.add_node("side", side)
    builder.add_node("flaky", flaky)
    builder.add_edge(lg.START, "side")
    builder.add_edge(lg.START, "flaky")
    graph = builder.compile(checkpointer=_saver(lg))
    with pytest.raises(Exception) as failed:
        graph.invoke({}, _thread())
    cause = failed.value if lg.is_langgraph else failed.value.error  # graphq: NodeError(node, error)
    assert isinstance(cause, RuntimeError)
    assert str(cause) == "boom"
    assert graph.invoke(None, _thread()) == {"side": "done", "flaky": "done"}
    assert sorted(fired) == ["flaky", "flaky", "side"]


def test_after_a_failed_step_in_an_invoked_graph_only_its_failed_task_runs_again(lg: Imports) -> None:
    """LangGraph: a graph a node invokes keeps its own finished tasks' writes when one of its tasks fails;
    the parent's ``invoke(None, config)`` runs only that task of it again."""
    runs: Counter[str] = Counter()
    failing = [True]
    ok_done = threading.Event()

    def ok(state: State) -> dict[str, Any]:
        runs["ok"] += 1
        ok_done.set()
        return {"items": ["ok"]}

    def bad(state: State) -> dict[str, Any]:
        runs["bad"] += 1
        if failing.pop() if failing else False:
            ok_done.wait(5)  # the sibling has finished when this task fails
            raise RuntimeError("boom")
        return {"items": ["bad"]}

    builder = lg.StateGraph(State)
    builder.add_node("ok", ok)
    builder.add_node("bad", bad)
    builder.add_edge(lg.START, "ok")
    builder.add_edge(lg.START, "bad")
    inner = builder.compile()
    graph = _one_node(lg, lambda s: {"items": sorted(inner.invoke({"items": []})["items"])})
    with pytest.raises(Exception):  # noqa: B017 - LangGraph's RuntimeError, graphq's NodeError
        graph.invoke({"items": []}, _thread())
    assert graph.invoke(None, _thread()) == {"items": ["bad", "ok"]}
    assert runs == {"ok": 1, "bad": 2}


# -- interrupt() from threads of one task -------------------------------------------------------------------


def _in_threads(*calls: Any) -> list[Any]:
    """Run each call in a thread of its own, in a copy of this context (as LangGraph's own executor does),
    all started together; their results in order (the first error raised)."""
    start = threading.Barrier(len(calls))

    def run(call: Any) -> Any:
        start.wait(5)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(contextvars.copy_context().run, run, call) for call in calls]
        wait(futures)
    return [f.result() for f in futures]


def test_two_threads_of_one_node_asking_at_once(lg: Imports) -> None:
    """LangGraph: two threads of one node that call ``interrupt()`` at once surface one question (answers
    are matched by call order, so a later answer may reach either thread). graphq (a deliberate
    difference): the task fails with ``ConcurrentInterruptError`` rather than risk misrouting an answer."""
    graph = _one_node(
        lg, lambda s: {"items": _in_threads(lambda: lg.interrupt("q1"), lambda: lg.interrupt("q2"))}
    )
    if lg.is_langgraph:
        assert len(graph.invoke({"items": []}, _thread())["__interrupt__"]) == 1
        return
    with pytest.raises(RuntimeError, match="paused from 2 threads") as refused:
        graph.invoke({"items": []}, _thread())
    assert str(refused.value) == (
        "node 'n' paused from 2 threads (or asyncio tasks) of one task: interrupt() and the graphs a "
        "node invokes must pause from one thread per task, because answers are matched to questions by "
        "call order, which concurrent threads do not keep; ask once from one thread (one interrupt() with "
        "every question), or give each question a task of its own with Send"
    )


def test_one_helper_thread_of_a_node_may_ask(lg: Imports) -> None:
    """LangGraph: ``interrupt()`` in the one thread a node hands its work to pauses the run, and the answer
    reaches that thread."""
    graph = _one_node(lg, lambda s: {"items": _in_threads(lambda: lg.interrupt("q?"))})
    assert _values(graph.invoke({"items": []}, _thread())) == ["q?"]
    assert graph.invoke(lg.Command(resume="yes"), _thread()) == {"items": ["yes"]}


def test_graphs_invoked_from_parallel_threads_of_a_node_all_run(lg: Imports) -> None:
    """LangGraph: a node may invoke graphs from several threads at once (a parallel map); each call runs on
    its own input when none of them asks."""
    runs: Counter[str] = Counter()
    inner = _counting(lg, runs)

    def node(state: State) -> dict[str, Any]:
        results = _in_threads(*(lambda x=x: inner.invoke({"items": [x]}) for x in ("a", "b", "c")))
        return {"items": [r["items"][0] for r in results]}

    graph = _one_node(lg, node)
    assert graph.invoke({"items": []}, _thread()) == {"items": ["a", "b", "c"]}
    assert runs == {"a": 1, "b": 1, "c": 1}


def test_graphs_invoked_from_parallel_threads_that_ask(lg: Imports) -> None:
    """LangGraph: graphs invoked from parallel threads of one node that each ask surface one question (the
    other is lost until the node runs again, and which call's namespace each thread gets depends on timing).
    graphq (a deliberate difference): the task fails with ``ConcurrentInterruptError``."""
    asker = _asks(lg, "ok?")
    calls = (lambda: asker.invoke({"items": []}), lambda: asker.invoke({"items": []}))
    graph = _one_node(lg, lambda s: {"items": [r["items"][0] for r in _in_threads(*calls)]})
    if lg.is_langgraph:
        assert len(graph.invoke({"items": []}, _thread())["__interrupt__"]) == 1
        return
    with pytest.raises(RuntimeError, match=r"^node 'n' paused from 2 threads"):
        graph.invoke({"items": []}, _thread())


def test_two_asyncio_tasks_of_one_node_asking(lg: Imports) -> None:
    """LangGraph: two coroutines of one async node gathered with ``asyncio.gather`` that both call
    ``interrupt()`` ask one after the other, matched by call order (which awaits before the call can
    change). graphq (a deliberate difference): the task fails with ``ConcurrentInterruptError``."""

    async def node(state: State) -> dict[str, Any]:
        async def ask(question: str) -> Any:
            return lg.interrupt(question)

        return {"items": list(await asyncio.gather(ask("q1"), ask("q2")))}

    graph = _one_node(lg, node)
    if lg.is_langgraph:
        assert _values(asyncio.run(graph.ainvoke({"items": []}, _thread()))) == ["q1"]
        return
    with pytest.raises(RuntimeError, match=r"^node 'n' paused from 2 threads \(or asyncio tasks\)"):
        asyncio.run(graph.ainvoke({"items": []}, _thread()))


# -- the order a super-step's writes apply in ---------------------------------------------------------------


def test_parallel_writes_apply_in_node_name_order(lg: Imports) -> None:
    """LangGraph: the writes of the tasks that edges triggered together apply sorted by node name, not in
    the order the edges were added."""
    builder = lg.StateGraph(State)
    for name in ("side", "flaky", "beta", "alpha"):
        builder.add_node(name, lambda s, n=name: {"items": [n]})
        builder.add_edge(lg.START, name)
    assert builder.compile().invoke({"items": []}) == {"items": ["alpha", "beta", "flaky", "side"]}


def test_sent_tasks_apply_in_send_order_after_the_triggered_ones(lg: Imports) -> None:
    """LangGraph: ``Send`` tasks apply in the order they were sent (twelve of them, past one digit), after
    the tasks that edges triggered in the same step."""
    builder = lg.StateGraph(State)
    builder.add_node("w", lambda s: {"items": [s["items"][0]]})
    builder.add_node("zed", lambda s: {"items": ["zed"]})
    sends = [f"s{i}" for i in (11, 3, 7, 0, 1, 2, 4, 5, 6, 8, 9, 10)]
    builder.add_conditional_edges(lg.START, lambda s: [lg.Send("w", {"items": [x]}) for x in sends])
    builder.add_edge(lg.START, "zed")
    assert builder.compile().invoke({"items": []}) == {"items": ["zed", *sends]}


def test_sends_of_parallel_nodes_run_in_their_senders_name_order(lg: Imports) -> None:
    """LangGraph: the sends of two parallel nodes are taken in the order those nodes' writes apply
    (by node name), so the sent tasks' writes follow it too."""
    builder = lg.StateGraph(State)
    builder.add_node("w", lambda s: {"items": [s["items"][0]]})
    for name in ("b", "a"):
        sends = [lg.Send("w", {"items": [f"{name}{i}"]}) for i in (1, 2)]
        builder.add_node(name, lambda s, sends=sends: lg.Command(goto=sends), destinations=("w",))
        builder.add_edge(lg.START, name)
    assert builder.compile().invoke({"items": []}) == {"items": ["a1", "a2", "b1", "b2"]}


# -- answers that nothing waits for -------------------------------------------------------------------------


def dropped(lg: Imports, thread: str, why: str) -> Any:
    """graphq's warning that ``Command(resume=...)`` on ``thread`` answers nothing; LangGraph warns not."""
    if lg.is_langgraph:
        return contextlib.nullcontext()
    text = f"Command(resume=...) on thread '{thread}': no interrupt waits for an answer, the answer is "
    text += "dropped"
    return pytest.warns(UserWarning, match=rf"^{re.escape(text)} \(the thread {why}\)$")


def test_a_resume_on_a_thread_that_waits_for_no_answer(lg: Imports) -> None:
    """LangGraph: ``Command(resume=...)`` on a thread whose run ended runs nothing and returns its state (no
    checkpoint written), and on a fresh thread runs the graph from its start, as an empty input would; the
    answer is dropped. graphq does the same and warns, naming the thread."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=_saver(lg))
    assert graph.invoke({"items": []}, _thread()) == {"items": ["a"]}
    with dropped(lg, "t", "has ended, so nothing runs"):
        assert graph.invoke(lg.Command(resume="late"), _thread()) == {"items": ["a"]}
    modes = ["updates", "values"]
    with dropped(lg, "t", "has ended, so nothing runs"):
        assert list(graph.stream(lg.Command(resume="late"), _thread(), stream_mode=modes)) == [
            ("values", {"items": ["a"]})
        ]
    assert len(list(graph.get_state_history(_thread()))) == 3
    with dropped(lg, "fresh", "has no checkpoint, so the graph runs from its start"):
        assert graph.invoke(lg.Command(resume="late"), _thread("fresh")) == {"items": ["a"]}
    history = graph.get_state_history(_thread("fresh"))
    assert [(s.metadata["source"], s.metadata["step"], s.next) for s in history] == [
        ("loop", 1, ()),
        ("loop", 0, ("a",)),
        ("input", -1, ("__start__",)),
    ]
    with dropped(lg, "fresh2", "has no checkpoint, so the graph runs from its start"):
        chunks = list(graph.stream(lg.Command(resume="late"), _thread("fresh2"), stream_mode=modes))
    assert chunks == [("updates", {"a": {"items": ["a"]}}), ("values", {"items": ["a"]})]
