"""``ainvoke`` driven on the caller's loop (graphcore.engine.aio.drive): which runs take that path, and that
they behave as the threaded path does (results, errors, pending writes, cancellation, a loop never blocked
by a sync node). The threaded path runs the step loop in a thread named ``graphq-aio``; a node sees
whether one is alive."""

from __future__ import annotations

import asyncio
import contextvars
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
import redis

from graphcore import END, START, InMemorySaver, StateGraph
from graphcore.backend.store import RedisCheckpointStore
from graphcore.errors import NodeError
from tests.test_async_nodes import ticks_during, until


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _join_step_loop_threads() -> None:
    """Wait for the threads of earlier threaded runs to end (each ends just after handing its result)."""
    for thread in threading.enumerate():
        if thread.name == "graphq-aio":
            thread.join(5)


@pytest.fixture(autouse=True)
def _no_step_loop_thread_left() -> None:
    _join_step_loop_threads()


def _threaded() -> bool:
    """Whether a step loop runs in a thread of its own now (the threaded ``ainvoke``)."""
    return any(t.name == "graphq-aio" for t in threading.enumerate())


def _chain(*nodes: tuple[str, Any], checkpointer: Any = None) -> Any:
    g = StateGraph(State)
    names = [name for name, _ in nodes]
    for name, fn in nodes:
        g.add_node(name, fn)
    for source, target in zip([START, *names], [*names, END], strict=True):
        g.add_edge(source, target)
    return g.compile(checkpointer=checkpointer)


def _recorder(name: str, seen: list[bool]) -> Any:
    async def node(state: State) -> dict[str, Any]:
        seen.append(_threaded())
        return {"items": [name]}

    return node


def test_a_chain_of_async_nodes_runs_on_the_callers_loop_without_a_thread() -> None:
    seen: list[bool] = []
    graph = _chain(*((n, _recorder(n, seen)) for n in "abc"))
    assert asyncio.run(graph.ainvoke({"items": []})) == {"items": ["a", "b", "c"]}
    assert seen == [False, False, False]


def test_with_the_in_memory_saver_too_and_the_thread_goes_on() -> None:
    seen: list[bool] = []
    graph = _chain(("a", _recorder("a", seen)), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def twice() -> tuple[Any, Any]:
        return await graph.ainvoke({"items": ["x"]}, config), await graph.ainvoke({"items": ["y"]}, config)

    assert asyncio.run(twice()) == ({"items": ["x", "a"]}, {"items": ["x", "a", "y", "a"]})
    assert seen == [False, False]


@pytest.mark.parametrize(
    "options", [{"debug": True}, {"print_mode": "updates"}, {"stream_mode": "updates"}], ids=str
)
def test_a_run_that_logs_or_streams_runs_in_a_thread(options: dict[str, Any]) -> None:
    seen: list[bool] = []
    graph = _chain(("a", _recorder("a", seen)))
    result = asyncio.run(graph.ainvoke({"items": []}, **options))
    expected = [{"a": {"items": ["a"]}}] if "stream_mode" in options else {"items": ["a"]}
    assert result == expected
    assert seen == [True]


def test_a_redis_checkpointer_runs_in_a_thread(redis_client: redis.Redis) -> None:
    seen: list[bool] = []
    graph = _chain(("a", _recorder("a", seen)), checkpointer=RedisCheckpointStore(redis_client))
    result = asyncio.run(graph.ainvoke({"items": []}, {"configurable": {"thread_id": "t"}}))
    assert result == {"items": ["a"]}
    assert seen == [True]


def test_a_graph_without_async_nodes_runs_in_a_thread() -> None:
    seen: list[bool] = []

    def sync(state: State) -> dict[str, Any]:
        seen.append(_threaded())
        return {"items": ["s"]}

    assert asyncio.run(_chain(("s", sync)).ainvoke({"items": []})) == {"items": ["s"]}
    assert seen == [True]


def test_a_graph_awaited_inside_a_node_runs_in_a_thread() -> None:
    seen: list[bool] = []
    inner = _chain(("i", _recorder("i", seen)))

    async def outer_node(state: State) -> dict[str, Any]:
        return {"items": (await inner.ainvoke({"items": []}))["items"]}

    outer = _chain(("o", outer_node))
    assert asyncio.run(outer.ainvoke({"items": []})) == {"items": ["i"]}
    assert seen == [True]  # inside a task: its store may be the step job's fenced one (Redis)


def test_a_sync_node_of_an_async_graph_does_not_block_the_loop() -> None:
    """The sync node waits (up to 10 s) for ticks of the caller's loop: a blocked loop never ticks."""
    ticked = threading.Event()

    def blocking(state: State) -> dict[str, Any]:
        assert ticked.wait(10), "the caller's loop did not tick while the node ran"
        return {"items": ["slept"]}

    graph = _chain(("a", _recorder("a", [])), ("b", blocking))
    result = asyncio.run(ticks_during(lambda: graph.ainvoke({"items": []}), ticked))
    assert result == {"items": ["a", "slept"]}


def test_a_failed_step_keeps_the_finished_tasks_writes_and_they_do_not_run_again() -> None:
    runs: list[str] = []
    fail = [True]

    async def ok(state: State) -> dict[str, Any]:
        runs.append("ok")
        return {"items": ["ok"]}

    async def flaky(state: State) -> dict[str, Any]:
        runs.append("flaky")
        await asyncio.sleep(0.05)  # ends after ok: ok's writes are saved first
        if fail[0]:
            raise ValueError("boom")
        return {"items": ["flaky"]}

    g = StateGraph(State)
    for name, fn in (("ok", ok), ("flaky", flaky)):
        g.add_node(name, fn)
        g.add_edge(START, name)
        g.add_edge(name, END)
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    with pytest.raises(NodeError) as failed:
        asyncio.run(graph.ainvoke({"items": []}, config))
    assert (failed.value.node, str(failed.value.error)) == ("flaky", "boom")
    fail[0] = False
    assert asyncio.run(graph.ainvoke(None, config)) == {"items": ["flaky", "ok"]}  # task order, as invoke
    assert runs == ["ok", "flaky", "flaky"]


async def _settled(timeout_s: float = 10) -> None:
    """Wait until the running loop's other tasks (a step still in flight) have ended, and their done
    callbacks (the commit of a step whose caller stopped waiting) have run."""
    await until(lambda: asyncio.all_tasks() == {asyncio.current_task()}, timeout_s)
    await asyncio.sleep(0)


def test_cancelling_the_caller_cancels_the_node_and_starts_no_further_step() -> None:
    """The node would sleep 30 s; cancelled once it runs, it sees the cancel and no step follows."""
    events: list[str] = []

    async def waits(state: State) -> dict[str, Any]:
        events.append("started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return {"items": ["never"]}

    async def after(state: State) -> dict[str, Any]:
        events.append("after ran")
        return {"items": ["after"]}

    graph = _chain(("waits", waits), ("after", after))

    async def main() -> None:
        running = asyncio.create_task(graph.ainvoke({"items": []}))
        await until(lambda: events == ["started"])
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await _settled()

    asyncio.run(main())
    assert events == ["started", "cancelled"]


def test_an_unknown_keyword_is_ignored_with_a_warning_as_by_invoke() -> None:
    """An async graph's ``ainvoke`` with an unknown keyword runs as ``invoke`` does (LangGraph ignores it):
    the same warning, the same result."""
    graph = _chain(("a", _recorder("a", [])))
    warned = r"^invoke\(\) ignores unknown keyword argument\(s\) \['stream_modes'\]$"
    with pytest.warns(UserWarning, match=warned):
        assert asyncio.run(graph.ainvoke({"items": []}, stream_modes="values")) == {"items": ["a"]}
    with pytest.warns(UserWarning, match=warned):
        assert graph.invoke({"items": []}, stream_modes="values") == {"items": ["a"]}


def test_debug_none_takes_the_graphs_own_setting() -> None:
    seen: list[bool] = []
    g = StateGraph(State)
    g.add_node("a", _recorder("a", seen))
    g.add_edge(START, "a")
    g.add_edge("a", END)
    logged = g.compile(debug=True)
    assert asyncio.run(logged.ainvoke({"items": []}, debug=None)) == {"items": ["a"]}
    _join_step_loop_threads()
    assert asyncio.run(logged.ainvoke({"items": []}, debug=False)) == {"items": ["a"]}
    assert seen == [True, False]  # logged: in a thread; debug=False overrides the graph's


RAN = contextvars.ContextVar("ran", default="caller")


def test_a_nodes_context_variables_stay_its_own_and_so_does_its_task() -> None:
    seen: list[str] = []
    tasks: list[bool] = []

    async def sets(state: State) -> dict[str, Any]:
        RAN.set("set by a node")
        return {"items": ["sets"]}

    async def reads(state: State) -> dict[str, Any]:
        seen.append(RAN.get())
        return {"items": ["reads"]}

    async def main() -> tuple[Any, str]:
        caller = asyncio.current_task()

        async def which(state: State) -> dict[str, Any]:
            tasks.append(asyncio.current_task() is caller)
            return {}

        graph = _chain(("sets", sets), ("reads", reads), ("which", which))
        return await graph.ainvoke({"items": []}), RAN.get()

    assert asyncio.run(main()) == ({"items": ["sets", "reads"]}, "caller")
    assert (seen, tasks) == (["caller"], [False])  # as LangGraph: each task in a copy of the caller's context


def test_an_async_router_from_start_runs_on_the_callers_loop() -> None:
    """The input's routing happens in the step loop's own code: with an async router from START the run
    takes the threaded way, so that the router runs on the caller's loop, which goes on serving its tasks."""
    loops: list[bool] = []
    ticked = threading.Event()

    async def route(state: State) -> str:
        loops.append(asyncio.get_running_loop() is caller_loop[0])
        await until(ticked.is_set)  # up to 10 s: the caller's loop ticks meanwhile
        return "a"

    g = StateGraph(State)
    g.add_node("a", _recorder("a", []))
    g.add_conditional_edges(START, route, ["a"])
    g.add_edge("a", END)
    graph = g.compile()
    caller_loop: list[asyncio.AbstractEventLoop] = []

    async def main() -> Any:
        caller_loop.append(asyncio.get_running_loop())
        return await ticks_during(lambda: graph.ainvoke({"items": []}), ticked)

    assert asyncio.run(main()) == {"items": ["a"]}
    assert loops == [True]


def test_the_loop_serves_its_other_tasks_between_two_steps() -> None:
    async def inc(state: State) -> dict[str, Any]:
        return {"items": ["x"]}  # never suspends

    graph = _chain(*((f"n{i}", inc) for i in range(50)))

    async def main() -> tuple[int, int]:
        turns = [0]

        async def other() -> None:
            while True:
                await asyncio.sleep(0)
                turns[0] += 1

        task = asyncio.create_task(other())
        await asyncio.sleep(0)
        before = turns[0]
        result = await graph.ainvoke({"items": []})
        task.cancel()
        return len(result["items"]), turns[0] - before

    steps, turns = asyncio.run(main())
    assert steps == 50
    assert turns >= 50  # at least once per super-step


def _cancel_during_a_sync_step(parallel: bool) -> tuple[list[str], Any]:
    """Cancel ``ainvoke`` while a sync node (with an async sibling when ``parallel``) runs: what ran, and
    the thread's state afterwards. The sync node is held (up to 10 s) until the cancel has reached the
    caller: a cancel that waited for the step's end would come only after it gave up (``blocking held
    too long``). The sibling would sleep 30 s."""
    log: list[str] = []
    started = {"blocking": threading.Event(), "sibling": threading.Event()}
    release = threading.Event()

    async def first(state: State) -> dict[str, Any]:
        return {"items": ["first"]}

    def blocking(state: State) -> dict[str, Any]:
        started["blocking"].set()
        log.append("blocking done" if release.wait(10) else "blocking held too long")
        return {"items": ["blocking"]}

    async def sibling(state: State) -> dict[str, Any]:
        started["sibling"].set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("sibling cancelled")
            raise
        return {"items": ["sibling"]}

    async def after(state: State) -> dict[str, Any]:
        log.append("after ran")
        return {"items": ["after"]}

    g = StateGraph(State)
    for name, fn in (("first", first), ("blocking", blocking), ("after", after)):
        g.add_node(name, fn)
    g.add_edge(START, "first")
    g.add_edge("first", "blocking")
    g.add_edge("blocking", "after")
    g.add_edge("after", END)
    if parallel:
        g.add_node("sibling", sibling)
        g.add_edge("first", "sibling")
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def main() -> None:
        running = asyncio.create_task(graph.ainvoke({"items": []}, config))
        await until(lambda: all(started[n].is_set() for n in ("blocking", "sibling")[: 1 + parallel]))
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running  # at once, not at the step's end
        release.set()
        await until(lambda: len(log) == 1 + parallel)  # the sync node's thread is no asyncio task
        await _settled()

    asyncio.run(main())
    state = graph.get_state(config)
    return log, (state.values, state.next)


def test_a_cancel_during_a_step_of_sync_nodes_lets_it_finish_and_commit() -> None:
    log, state = _cancel_during_a_sync_step(parallel=False)
    assert log == ["blocking done"]  # no further super-step
    assert state == ({"items": ["first", "blocking"]}, ("after",))


def test_a_cancel_during_a_step_with_async_nodes_cancels_them_and_keeps_what_finished() -> None:
    """The step is not committed: the cancelled sibling runs again when the thread goes on; the sync node
    that finished keeps its writes as pending writes (I2), shown in the state as get_state shows them."""
    log, state = _cancel_during_a_sync_step(parallel=True)
    assert sorted(log) == ["blocking done", "sibling cancelled"]
    assert state == ({"items": ["first", "blocking"]}, ("sibling",))
