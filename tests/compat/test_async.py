"""Async nodes and routers, ``ainvoke`` and ``astream``: the same program, LangGraph's imports or
graphq's, gives LangGraph's result. Each case runs its coroutine with ``asyncio.run``."""

from __future__ import annotations

import asyncio
import functools
import operator
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


class Counter(TypedDict):
    n: int


def run(coro: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coro

    return asyncio.run(main())


def appender(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
    async def node(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"items": [name]}

    return node


def chain(lg: Imports, *nodes: tuple[str, Callable[..., Any]]) -> Any:
    builder = lg.StateGraph(State)
    names = [name for name, _ in nodes]
    for name, fn in nodes:
        builder.add_node(name, fn)
    for source, target in zip([lg.START, *names], [*names, lg.END], strict=True):
        builder.add_edge(source, target)
    return builder


def fan_out(lg: Imports, nodes: dict[str, Callable[..., Any]], then: Callable[..., Any] | None = None) -> Any:
    builder = lg.StateGraph(State)
    for name, fn in nodes.items():
        builder.add_node(name, fn)
        builder.add_edge(lg.START, name)
    if then is None:
        for name in nodes:
            builder.add_edge(name, lg.END)
    else:
        builder.add_node("join", then)
        builder.add_edge(list(nodes), "join")
        builder.add_edge("join", lg.END)
    return builder


def test_an_async_chain_runs_under_ainvoke(lg: Imports) -> None:
    """LangGraph: ``async def`` nodes are awaited in order by ``ainvoke``, each update through the reducer."""
    graph = chain(lg, ("a", appender("a")), ("b", appender("b")), ("c", appender("c"))).compile()
    assert run(graph.ainvoke({"items": ["in"]})) == {"items": ["in", "a", "b", "c"]}


def test_ainvoke_of_a_sync_graph_gives_invokes_result(lg: Imports) -> None:
    """LangGraph: ``ainvoke`` runs sync nodes too, with the same result as ``invoke``."""
    graph = chain(lg, ("a", lambda s: {"items": ["a"]}), ("b", lambda s: {"items": ["b"]})).compile()
    assert run(graph.ainvoke({"items": []})) == graph.invoke({"items": []}) == {"items": ["a", "b"]}


def test_sync_and_async_nodes_mix_in_one_chain(lg: Imports) -> None:
    """LangGraph: a graph may mix ``def`` and ``async def`` nodes; ``ainvoke`` runs both in edge order."""
    graph = chain(
        lg, ("a", appender("a")), ("b", lambda s: {"items": [f"b{len(s['items'])}"]}), ("c", appender("c"))
    ).compile()
    assert run(graph.ainvoke({"items": []})) == {"items": ["a", "b1", "c"]}


def test_sync_and_async_nodes_mix_in_one_step(lg: Imports) -> None:
    """LangGraph: a super-step may hold sync and async tasks; their writes apply in the step's task order."""
    nodes = {"x": appender("x"), "y": lambda s: {"items": ["y"]}, "z": appender("z")}
    graph = fan_out(lg, nodes, then=lambda s: {"items": [f"join{len(s['items'])}"]}).compile()
    assert run(graph.ainvoke({"items": []})) == {"items": ["x", "y", "z", "join3"]}


def test_async_fan_out_tasks_run_concurrently(lg: Imports) -> None:
    """LangGraph: the async tasks of one super-step run concurrently on the event loop (each waits here until
    all three have started: run one after another, they would time out)."""
    started: list[str] = []

    def meeting(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            started.append(name)
            async with asyncio.timeout(10):
                while len(started) < 3:
                    await asyncio.sleep(0.001)
            return {"items": [name]}

        return node

    graph = fan_out(lg, {name: meeting(name) for name in ("p", "q", "r")}).compile()
    assert run(graph.ainvoke({"items": []})) == {"items": ["p", "q", "r"]}
    assert sorted(started) == ["p", "q", "r"]


def test_async_sleeps_of_one_step_overlap(lg: Imports) -> None:
    """LangGraph: three ``asyncio.sleep(0.1)`` tasks of one step all start before any ends (one after
    another, each would end before the next starts)."""
    events: list[str] = []

    def sleeper(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            events.append("start")
            await asyncio.sleep(0.1)
            events.append("end")
            return {"items": [name]}

        return node

    graph = fan_out(lg, {name: sleeper(name) for name in ("a", "b", "c")}).compile()
    assert run(graph.ainvoke({"items": []})) == {"items": ["a", "b", "c"]}
    assert events == ["start"] * 3 + ["end"] * 3


def test_async_nodes_run_on_the_callers_loop(lg: Imports) -> None:
    """LangGraph: async nodes run on the event loop that awaits ``ainvoke`` (a loop-bound queue works)."""
    seen: list[bool] = []

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str] = asyncio.Queue()
        await queue.put("from the caller")

        async def node(state: State) -> dict[str, Any]:
            seen.append(asyncio.get_running_loop() is loop)
            return {"items": [await queue.get()]}

        return await chain(lg, ("n", node)).compile().ainvoke({"items": []})

    assert asyncio.run(main()) == {"items": ["from the caller"]}
    assert seen == [True]


@pytest.mark.parametrize(("count", "expected"), [(1, "small"), (5, "big")])
def test_an_async_router_picks_the_branch(lg: Imports, count: int, expected: str) -> None:
    """LangGraph: an ``async def`` conditional-edge function is awaited; its result names the next node."""

    async def route(state: State) -> str:
        await asyncio.sleep(0)
        return "big" if len(state["items"]) > 2 else "small"

    builder = lg.StateGraph(State)
    builder.add_node("start", appender("start"))
    builder.add_node("small", appender("small"))
    builder.add_node("big", appender("big"))
    builder.add_edge(lg.START, "start")
    builder.add_conditional_edges("start", route, ["small", "big"])
    builder.add_edge("small", lg.END)
    builder.add_edge("big", lg.END)
    result = run(builder.compile().ainvoke({"items": ["i"] * count}))
    assert result == {"items": ["i"] * count + ["start", expected]}


def test_an_async_router_with_a_path_map_and_end(lg: Imports) -> None:
    """LangGraph: an async router's value goes through ``path_map``; mapping to END finishes the run."""

    async def route(state: State) -> bool:
        return len(state["items"]) < 3

    builder = lg.StateGraph(State)
    builder.add_node("step", appender("s"))
    builder.add_edge(lg.START, "step")
    builder.add_conditional_edges("step", route, {True: "step", False: lg.END})
    assert run(builder.compile().ainvoke({"items": []})) == {"items": ["s", "s", "s"]}


def test_an_async_router_from_start(lg: Imports) -> None:
    """LangGraph: an async conditional entry point (a router from START) chooses the first node."""

    async def entry(state: State) -> str:
        return "b" if state["items"] == ["go b"] else "a"

    builder = lg.StateGraph(State)
    builder.add_node("a", appender("a"))
    builder.add_node("b", appender("b"))
    builder.add_conditional_edges(lg.START, entry, ["a", "b"])
    builder.add_edge("a", lg.END)
    builder.add_edge("b", lg.END)
    assert run(builder.compile().ainvoke({"items": ["go b"]})) == {"items": ["go b", "b"]}


def test_an_async_router_of_a_sync_node(lg: Imports) -> None:
    """LangGraph: a sync node may have an async router; ``ainvoke`` awaits the router after the node."""

    async def route(state: State) -> str:
        return "after" if state["items"][-1] == "sync" else lg.END

    builder = lg.StateGraph(State)
    builder.add_node("first", lambda s: {"items": ["sync"]})
    builder.add_node("after", appender("after"))
    builder.add_edge(lg.START, "first")
    builder.add_conditional_edges("first", route, ["after", lg.END])
    builder.add_edge("after", lg.END)
    assert run(builder.compile().ainvoke({"items": []})) == {"items": ["sync", "after"]}


def test_an_async_router_sends_a_map_step(lg: Imports) -> None:
    """LangGraph: an async router may return ``Send``s; each runs the target with its own argument."""

    class Job(TypedDict):
        word: str

    async def scatter(state: State) -> list[Any]:
        return [lg.Send("shout", {"word": w}) for w in ("a", "b", "c")]

    async def shout(job: Job) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"items": [job["word"].upper()]}

    builder = lg.StateGraph(State)
    builder.add_node("shout", shout)
    builder.add_conditional_edges(lg.START, scatter, ["shout"])
    builder.add_edge("shout", lg.END)
    assert run(builder.compile().ainvoke({"items": []})) == {"items": ["A", "B", "C"]}


def test_an_async_node_returns_a_command_goto(lg: Imports) -> None:
    """LangGraph: an async node's ``Command(update=..., goto=...)`` updates the state and picks the next
    node."""

    async def decide(state: State) -> Any:
        return lg.Command(update={"items": ["decided"]}, goto="right")

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide, destinations=("left", "right"))
    builder.add_node("left", appender("left"))
    builder.add_node("right", appender("right"))
    builder.add_edge(lg.START, "decide")
    builder.add_edge("left", lg.END)
    builder.add_edge("right", lg.END)
    assert run(builder.compile().ainvoke({"items": []})) == {"items": ["decided", "right"]}


def test_async_callable_objects_and_partials_are_async_nodes(lg: Imports) -> None:
    """LangGraph: an object with ``async def __call__`` and a ``functools.partial`` of an ``async def`` are
    awaited as nodes."""

    class Tagger:
        async def __call__(self, state: State) -> dict[str, Any]:
            return {"items": ["object"]}

    async def tag(state: State, label: str) -> dict[str, Any]:
        return {"items": [label]}

    graph = chain(lg, ("obj", Tagger()), ("part", functools.partial(tag, label="partial"))).compile()
    assert run(graph.ainvoke({"items": []})) == {"items": ["object", "partial"]}


def test_get_config_inside_an_async_node(lg: Imports) -> None:
    """LangGraph: ``get_config()`` inside an async node returns the run's config, with its
    ``configurable``."""

    async def node(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"items": [lg.get_config()["configurable"]["user"]]}

    graph = chain(lg, ("n", node), ("m", node)).compile()
    result = run(graph.ainvoke({"items": []}, {"configurable": {"user": "ada"}}))
    assert result == {"items": ["ada", "ada"]}


def test_parallel_async_nodes_each_see_their_own_context(lg: Imports) -> None:
    """LangGraph: each async task has its own context: concurrent nodes write custom chunks as themselves."""

    def writer_node(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            write = lg.get_stream_writer()
            await asyncio.sleep(0.01)
            write({"from": name})
            return {"items": [name]}

        return node

    graph = fan_out(lg, {n: writer_node(n) for n in ("a", "b")}).compile()

    async def collect() -> list[Any]:
        return [chunk async for chunk in graph.astream({"items": []}, stream_mode="custom")]

    assert sorted(c["from"] for c in run(collect())) == ["a", "b"]


@pytest.mark.parametrize("mode", ["values", "updates"])
def test_astream_yields_what_stream_yields(lg: Imports, mode: str) -> None:
    """LangGraph: ``astream`` yields the events of ``stream`` for the same mode, in the same order."""
    graph = chain(lg, ("a", lambda s: {"items": ["a"]}), ("b", lambda s: {"items": ["b"]})).compile()

    async def collect() -> list[Any]:
        return [event async for event in graph.astream({"items": []}, stream_mode=mode)]

    expected = {
        "values": [{"items": []}, {"items": ["a"]}, {"items": ["a", "b"]}],
        "updates": [{"a": {"items": ["a"]}}, {"b": {"items": ["b"]}}],
    }[mode]
    assert run(collect()) == list(graph.stream({"items": []}, stream_mode=mode)) == expected


def test_astream_of_async_nodes_with_several_modes(lg: Imports) -> None:
    """LangGraph: with a list of modes, ``astream`` yields ``(mode, chunk)`` pairs: a node's custom chunk
    before its update."""

    async def node(state: State) -> dict[str, Any]:
        lg.get_stream_writer()("working")
        return {"items": ["done"]}

    graph = chain(lg, ("n", node)).compile()

    async def collect() -> list[Any]:
        return [e async for e in graph.astream({"items": []}, stream_mode=["updates", "custom"])]

    assert run(collect()) == [("custom", "working"), ("updates", {"n": {"items": ["done"]}})]


def test_leaving_astream_early_runs_no_further_step(lg: Imports) -> None:
    """LangGraph: ``astream`` is lazy: after the consumer stops at the first update, no later node runs."""
    ran: list[str] = []

    def tracked(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            ran.append(name)
            return {"items": [name]}

        return node

    graph = chain(lg, ("a", tracked("a")), ("b", tracked("b")), ("c", tracked("c"))).compile()

    async def first() -> Any:
        async for event in graph.astream({"items": []}, stream_mode="updates"):
            return event
        return None

    assert run(first()) == {"a": {"items": ["a"]}}
    time.sleep(0.05)
    assert "c" not in ran


def test_ainvoke_with_a_checkpointer_continues_the_thread(lg: Imports) -> None:
    """LangGraph: with a checkpointer, a second ``ainvoke`` on the thread starts from the saved state."""
    graph = chain(lg, ("a", appender("a"))).compile(checkpointer=lg.InMemorySaver())
    thread = {"configurable": {"thread_id": "t-async"}}

    async def twice() -> tuple[Any, Any]:
        return await graph.ainvoke({"items": ["1"]}, thread), await graph.ainvoke({"items": ["2"]}, thread)

    assert run(twice()) == ({"items": ["1", "a"]}, {"items": ["1", "a", "2", "a"]})


def test_interrupt_in_an_async_node_resumes_with_ainvoke(lg: Imports) -> None:
    """LangGraph: ``interrupt()`` in an async node pauses the run (``__interrupt__`` in the result); an
    ``ainvoke(Command(resume=...))`` on the thread gives the node its answer and finishes the run."""

    async def ask(state: State) -> dict[str, Any]:
        answer = lg.interrupt({"question": "name?"})
        return {"items": [f"hello {answer}"]}

    graph = chain(lg, ("ask", ask), ("after", appender("after"))).compile(checkpointer=lg.InMemorySaver())
    thread = {"configurable": {"thread_id": "t-ask"}}

    async def dialogue() -> tuple[Any, Any]:
        paused = await graph.ainvoke({"items": []}, thread)
        return paused, await graph.ainvoke(lg.Command(resume="ada"), thread)

    paused, done = run(dialogue())
    assert list(paused) == ["items", "__interrupt__"]
    assert paused["items"] == []
    assert [i.value for i in paused["__interrupt__"]] == [{"question": "name?"}]
    assert done == {"items": ["hello ada", "after"]}


def test_parallel_async_interrupts_are_answered_by_id(lg: Imports) -> None:
    """LangGraph: two async nodes of one step each ``interrupt()``; both requests surface, and a resume map
    of interrupt id → answer gives each node its own answer."""

    def asker(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"items": [f"{name}={lg.interrupt(name)}"]}

        return node

    graph = fan_out(lg, {"x": asker("x"), "y": asker("y")}).compile(checkpointer=lg.InMemorySaver())
    thread = {"configurable": {"thread_id": "t-both"}}

    async def dialogue() -> Any:
        paused = await graph.ainvoke({"items": []}, thread)
        answers = {i.id: i.value.upper() for i in paused["__interrupt__"]}
        assert sorted(i.value for i in paused["__interrupt__"]) == ["x", "y"]
        return await graph.ainvoke(lg.Command(resume=answers), thread)

    assert run(dialogue()) == {"items": ["x=X", "y=Y"]}


def test_astream_updates_show_an_async_interrupt(lg: Imports) -> None:
    """LangGraph: when an async node interrupts, ``astream(stream_mode="updates")`` yields the finished
    nodes' updates, then ``{"__interrupt__": ...}`` holding the request."""

    async def ask(state: State) -> dict[str, Any]:
        return {"items": [lg.interrupt("ok?")]}

    graph = chain(lg, ("first", appender("first")), ("ask", ask)).compile(checkpointer=lg.InMemorySaver())

    async def collect() -> list[Any]:
        config = {"configurable": {"thread_id": "t-stream"}}
        return [e async for e in graph.astream({"items": []}, config, stream_mode="updates")]

    events = run(collect())
    assert events[0] == {"first": {"items": ["first"]}}
    assert list(events[1]) == ["__interrupt__"]
    assert [i.value for i in events[1]["__interrupt__"]] == ["ok?"]
    assert len(events) == 2


def test_an_async_node_awaits_a_subgraphs_ainvoke(lg: Imports) -> None:
    """LangGraph: an async node may ``await`` another compiled graph's ``ainvoke`` and use its result."""
    inner = chain(lg, ("i1", appender("i1")), ("i2", appender("i2"))).compile()

    async def outer(state: State) -> dict[str, Any]:
        result = await inner.ainvoke({"items": ["sub"]})
        return {"items": result["items"]}

    graph = chain(lg, ("outer", outer)).compile()
    assert run(graph.ainvoke({"items": []})) == {"items": ["sub", "i1", "i2"]}


def test_a_compiled_async_subgraph_as_a_node(lg: Imports) -> None:
    """LangGraph: a compiled graph with async nodes, added as a node, runs inside the parent's ``ainvoke``;
    its final value of a shared key is the parent's update."""

    async def bump(state: Counter) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"n": state["n"] * 10}

    def counter_chain(*nodes: tuple[str, Any]) -> Any:
        builder = lg.StateGraph(Counter)
        for name, fn in nodes:
            builder.add_node(name, fn)
        names = [name for name, _ in nodes]
        for source, target in zip([lg.START, *names], [*names, lg.END], strict=True):
            builder.add_edge(source, target)
        return builder.compile()

    inner = counter_chain(("times10", bump), ("again", bump))
    graph = counter_chain(("before", lambda s: {"n": s["n"] + 1}), ("sub", inner), ("after", bump))
    assert run(graph.ainvoke({"n": 1})) == {"n": 2000}


async def until(ready: Callable[[], bool], timeout_s: float = 10) -> None:
    """Wait on the running loop, without blocking it, until ``ready()`` (``TimeoutError`` after
    ``timeout_s``)."""
    async with asyncio.timeout(timeout_s):
        while not ready():
            await asyncio.sleep(0.005)


def test_cancelling_ainvoke_cancels_the_running_async_node(lg: Imports) -> None:
    """LangGraph: when the task awaiting ``ainvoke`` is cancelled (here once the node runs), the running
    async node sees ``asyncio.CancelledError`` and the next node never runs."""
    seen: list[str] = []

    async def slow(state: State) -> dict[str, Any]:
        seen.append("started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return {"items": ["slow"]}

    graph = chain(lg, ("slow", slow), ("next", appender("next"))).compile()

    async def main() -> None:
        running = asyncio.create_task(graph.ainvoke({"items": []}))
        await until(lambda: seen == ["started"])
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await asyncio.sleep(0.1)

    run(main())
    assert seen == ["started", "cancelled"]


def test_cancelling_ainvoke_of_sync_nodes_starts_no_further_step(lg: Imports) -> None:
    """LangGraph: when the task awaiting ``ainvoke`` is cancelled while a sync node runs, that node finishes
    (a thread cannot be stopped) but the next node never runs."""
    seen: list[str] = []
    started, release = threading.Event(), threading.Event()

    def slow(state: State) -> dict[str, Any]:
        started.set()
        release.wait(10)  # until the caller was cancelled
        seen.append("slow")
        return {"items": ["slow"]}

    def after(state: State) -> dict[str, Any]:
        seen.append("next")
        return {"items": ["next"]}

    graph = chain(lg, ("slow", slow), ("next", after)).compile()

    async def main() -> None:
        running = asyncio.create_task(graph.ainvoke({"items": []}))
        await until(started.is_set)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        release.set()
        await until(lambda: "slow" in seen)
        await asyncio.sleep(0.2)  # a next step would have started by now

    run(main())
    assert seen == ["slow"]


def test_sync_invoke_of_an_async_node(lg: Imports) -> None:
    """LangGraph: ``invoke`` refuses a graph with an ``async def`` node (TypeError: no synchronous function);
    graphq runs it on an event loop of its own (its queue workers run graphs synchronously), with the result
    ``ainvoke`` gives (a deliberate difference: differences.md)."""
    graph = chain(lg, ("a", appender("a")), ("b", appender("b"))).compile()
    if lg.is_langgraph:
        with pytest.raises(TypeError, match="No synchronous function provided"):
            graph.invoke({"items": []})
    else:
        assert graph.invoke({"items": []}) == run(graph.ainvoke({"items": []})) == {"items": ["a", "b"]}


def test_an_async_node_with_counter_state(lg: Imports) -> None:
    """LangGraph: a LastValue channel takes an async node's value; a loop of async nodes and an async router
    counts up to the limit."""

    async def bump(state: Counter) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    async def again(state: Counter) -> Literal["bump", "__end__"]:
        return "bump" if state["n"] < 5 else lg.END

    builder = lg.StateGraph(Counter)
    builder.add_node("bump", bump)
    builder.add_edge(lg.START, "bump")
    builder.add_conditional_edges("bump", again)
    assert run(builder.compile().ainvoke({"n": 0})) == {"n": 5}


def test_max_concurrency_limits_the_async_tasks_of_a_step(lg: Imports) -> None:
    """LangGraph: the run option ``max_concurrency`` caps how many async tasks of a super-step run at once."""
    running: list[int] = [0]
    peak: list[int] = [0]

    def counted(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            await asyncio.sleep(0.02)
            running[0] -= 1
            return {"items": [name]}

        return node

    graph = fan_out(lg, {name: counted(name) for name in ("a", "b", "c", "d", "e")}).compile()
    result = run(graph.ainvoke({"items": []}, {"max_concurrency": 2}))
    assert result == {"items": ["a", "b", "c", "d", "e"]}
    assert peak == [2]


@pytest.mark.parametrize("limit", [1, 2])
def test_max_concurrency_counts_the_sync_and_async_tasks_of_a_step_together(lg: Imports, limit: int) -> None:
    """LangGraph: ``max_concurrency`` caps the tasks of a super-step that mixes sync and async nodes, all of
    them together (graphq ran up to the cap of each kind at once: twice the cap)."""
    lock = threading.Lock()
    running: list[int] = [0]
    peak: list[int] = [0]

    def enter() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])

    def leave() -> None:
        with lock:
            running[0] -= 1

    def sync_node(name: str) -> Callable[[State], dict[str, Any]]:
        def node(state: State) -> dict[str, Any]:
            enter()
            time.sleep(0.05)
            leave()
            return {"items": [name]}

        return node

    def async_node(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        async def node(state: State) -> dict[str, Any]:
            enter()
            await asyncio.sleep(0.05)
            leave()
            return {"items": [name]}

        return node

    nodes = {"a": sync_node("a"), "b": sync_node("b"), "c": async_node("c"), "d": async_node("d")}
    graph = fan_out(lg, nodes).compile()
    result = run(graph.ainvoke({"items": []}, {"max_concurrency": limit}))
    assert result == {"items": ["a", "b", "c", "d"]}
    assert peak == [limit]
