"""Same code, another result: programs whose result on graphq was not LangGraph's.
Each case runs with LangGraph's imports and graphq's (LangGraph's result is the expected value) and, where
it applies to queued runs, on the queue too (a burst worker in this process on the test Redis)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterable, Mapping, MutableMapping, MutableSequence, MutableSet, Sequence, Set
from typing import Annotated, Any, TypedDict
from unittest import mock

import pytest
from pydantic import BaseModel

import graphcore
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work


def _merge(a: Any, b: Any) -> Any:
    return {**a, **b}


def _union(a: Any, b: Any) -> Any:
    return a | b


def _chain(a: Any, b: Any) -> Any:
    return [*a, *b]


class Abstract(TypedDict):
    seq: Annotated[Sequence[int], operator.add]
    mseq: Annotated[MutableSequence[int], operator.add]
    map: Annotated[Mapping[str, int], _merge]
    mmap: Annotated[MutableMapping[str, int], _merge]
    set: Annotated[Set[int], _union]
    mset: Annotated[MutableSet[int], _union]
    it: Annotated[Iterable[int], _chain]
    n: int


def _abstract(lg: Imports) -> Any:
    """Two nodes of one step write ``seq`` and ``it`` (a last-value channel would refuse two writes)."""
    builder = lg.StateGraph(Abstract)
    builder.add_node("a", lambda s: {"seq": [1], "it": [1], "n": 1})
    builder.add_node("b", lambda s: {"seq": [2], "it": [2], "map": {"k": 2}, "set": {2}})
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    return builder.compile(name="abstract")


ABSTRACT_RESULT = {
    "seq": [1, 2],
    "mseq": [],
    "map": {"k": 2},
    "mmap": {},
    "set": {2},
    "mset": set(),
    "it": [1, 2],
    "n": 1,
}
"""A reducer channel of an abstract collection type starts from its concrete type's empty value
(``Sequence`` → ``[]``, ``Mapping`` → ``{}``, ``Set`` → ``set()``); ``Iterable`` has none."""


def test_a_reducer_on_an_abstract_collection_type_is_a_reducer_channel(lg: Imports) -> None:
    """LangGraph: ``Annotated[Sequence[int], operator.add]`` (Mapping, MutableSequence, Set, Iterable...)
    folds every write with its reducer, starting from ``list()`` / ``dict()`` / ``set()``."""
    assert _abstract(lg).invoke({}) == ABSTRACT_RESULT


class Overall(TypedDict):
    question: str
    answer: str


class RouterIn(TypedDict):
    answer: str
    secret: str


class RouterModel(BaseModel):
    answer: str
    secret: str = "unset"


def _routed(lg: Imports, seen: list[Any]) -> Any:
    """Node ``w`` writes ``secret``, a private channel only the routers' own schemas declare; the routers
    after ``n`` record what they are passed."""

    def by_dict(state: RouterIn) -> str:
        seen.append(state)
        return lg.END

    def by_model(state: RouterModel) -> str:
        seen.append(state)
        return lg.END

    builder = lg.StateGraph(Overall)
    builder.add_node("w", lambda s: {"secret": "s", "answer": "a"})
    builder.add_node("n", lambda s: {"answer": s["answer"] + "b"})
    builder.add_edge(lg.START, "w")
    builder.add_edge("w", "n")
    builder.add_conditional_edges("n", by_dict)
    builder.add_conditional_edges("n", by_model)
    return builder.compile(name="routed")


ROUTED_SEEN = [{"answer": "ab", "secret": "s"}, RouterModel(answer="ab", secret="s")]


@pytest.mark.parametrize("call", ["invoke", "ainvoke"])
def test_a_router_is_passed_its_own_input_schema(lg: Imports, call: str) -> None:
    """LangGraph: a router annotated with a schema gets that schema's keys (private channels included)
    as a dict or a model instance, not the state schema's."""
    seen: list[Any] = []
    graph = _routed(lg, seen)
    run = graph.invoke if call == "invoke" else lambda x: asyncio.run(graph.ainvoke(x))
    assert run({"question": "q"}) == {"question": "q", "answer": "ab"}
    assert seen == ROUTED_SEEN


ROUTED_ON_THE_QUEUE: list[Any] = []


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _first_node(state: Log) -> dict[str, list[str]]:
    if state["log"][-1] == "boom":
        raise ValueError("boom")
    return {"log": ["a"]}


def _two_nodes(lg: Imports, **compile: Any) -> Any:
    """START → a → b, each appending its name; ``a`` fails when the last entry is ``boom``."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _first_node)
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(name="two_nodes", **compile)


def test_an_update_before_a_later_runs_first_node_forks_there(lg: Imports) -> None:
    """LangGraph: ``update_state`` on the checkpoint before the first node of the thread's second run is
    an update as input: the fork's ``next`` is that node and ``invoke(None, fork)`` runs from there."""
    graph = _two_nodes(lg, checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["x"]}, config)
    graph.invoke({"log": ["y"]}, config)
    before = next(s for s in graph.get_state_history(config) if s.values["log"] == ["x", "a", "b", "y"])
    assert before.next == ("a",)
    fork = graph.update_state(before.config, {"log": ["u"]})
    forked = graph.get_state(fork)
    assert (forked.next, forked.values, forked.metadata["source"]) == (
        ("a",),
        {"log": ["x", "a", "b", "y", "u"]},
        "update",
    )
    assert graph.invoke(None, fork) == {"log": ["x", "a", "b", "y", "u", "a", "b"]}


def _queued(client: Client, workflow: str, input: Any, **options: Any) -> Any:
    run_id = client.enqueue(workflow, input, **options)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    return run.result


def test_a_reducer_on_an_abstract_collection_type_on_the_queue(client: Client) -> None:
    assert _queued(client, "abstract", {}) == ABSTRACT_RESULT


def test_a_router_is_passed_its_own_input_schema_on_the_queue(client: Client) -> None:
    ROUTED_ON_THE_QUEUE.clear()
    assert _queued(client, "routed", {"question": "q"}) == {"question": "q", "answer": "ab"}
    assert ROUTED_ON_THE_QUEUE == ROUTED_SEEN


def test_an_update_before_a_later_runs_first_node_on_the_queue(client: Client) -> None:
    """A thread's second run fails in its first node; an update without ``as_node`` is an update as
    input (its next task that node), so the next run without input runs from there."""
    first = client.enqueue("two_nodes", {"log": ["x"]})
    work(client)
    thread = client.get_run(first).thread_id
    failed = client.enqueue("two_nodes", {"log": ["boom"]}, thread_id=thread)
    work(client)
    assert client.get_run(failed).status == RunStatus.FAILED
    cp = client.update_state("two_nodes", thread, {"log": ["u"]})
    assert ([t.node for t in cp.next_tasks], cp.channel_values["log"]) == (
        ["a"],
        ["x", "a", "b", "boom", "u"],
    )
    assert _queued(client, "two_nodes", None, thread_id=thread) == {
        "log": ["x", "a", "b", "boom", "u", "a", "b"]
    }


class LogLast(TypedDict):
    log: Annotated[list[str], operator.add]
    last: str


def _listed(lg: Imports) -> Any:
    """Node ``a`` returns a tuple: a Command with ``(key, value)`` pairs, a dict, a Command going to ``c``."""

    def a(state: LogLast) -> Any:
        return (
            lg.Command(update=[("log", ["1"]), ("log", ["2"])]),
            {"log": ["3"], "last": "x"},
            lg.Command(update={"log": ["4"]}, goto="c"),
        )

    builder = lg.StateGraph(LogLast)
    builder.add_node("a", a, destinations=("c",))
    builder.add_node("c", lambda s: {"log": ["c"]})
    builder.add_edge(lg.START, "a")
    return builder.compile(name="listed")


def _root_listed(lg: Imports) -> Any:
    """A root-channel state; node ``a`` returns Commands and a plain value in a list."""
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node(
        "a", lambda s: [lg.Command(update=["1"]), ["2"], lg.Command(goto="b")], destinations=("b",)
    )
    builder.add_node("b", lambda s: ["b"])
    builder.add_edge(lg.START, "a")
    return builder.compile(name="root_listed")


LISTED_UPDATES = [
    {"a": [{"log": ["1"]}, {"log": ["2"]}, {"log": ["3"]}, {"last": "x"}, {"log": ["4"]}]},
    {"c": {"log": ["c"]}},
]
"""LangGraph's ``updates`` events: a task that wrote a key more than once shows each write in order."""
ROOT_LISTED_UPDATES = [{"a": [["1"], ["2"]]}, {"b": ["b"]}]


@pytest.mark.parametrize(
    ("build", "input", "updates", "result"),
    [
        (_listed, {}, LISTED_UPDATES, {"log": ["1", "2", "3", "4", "c"], "last": "x"}),
        (_root_listed, [], ROOT_LISTED_UPDATES, ["1", "2", "b"]),
    ],
    ids=["keyed", "root"],
)
def test_a_list_of_updates_and_commands_applies_item_by_item(
    lg: Imports, build: Any, input: Any, updates: Any, result: Any
) -> None:
    """LangGraph: a node's list (or tuple) holding Commands is applied item by item in order, a Command's
    ``update`` may be ``(key, value)`` pairs, and the ``updates`` event lists each write."""
    graph = build(lg)
    assert list(graph.stream(input, stream_mode="updates")) == updates
    assert graph.invoke(input) == result


@pytest.mark.parametrize(
    ("workflow", "input", "updates", "result"),
    [
        ("listed", {}, LISTED_UPDATES, {"log": ["1", "2", "3", "4", "c"], "last": "x"}),
        ("root_listed", [], ROOT_LISTED_UPDATES, ["1", "2", "b"]),
    ],
)
def test_a_list_of_updates_and_commands_on_the_queue(
    client: Client, workflow: str, input: Any, updates: Any, result: Any
) -> None:
    run_id = client.enqueue(workflow, input)
    work(client)
    run = client.get_run(run_id)
    assert run.result == result
    events = read_events(client.kv, run.thread_id, run_id)
    assert [e.data for e in events if e.mode == "updates"] == updates


def _send_command(lg: Imports) -> Any:
    """``a``'s router sends ``w`` a Command as its argument; ``w`` writes the argument's repr."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda s: {"log": ["a"]})
    builder.add_node("w", lambda arg: {"log": [repr(arg)]})
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", lambda s: [lg.Send("w", lg.Command(update={"log": ["u"]}, goto="a"))])
    return builder.compile(name="send_command", checkpointer=lg.InMemorySaver())


SENT_COMMAND = {"log": ["x", "a", "Command(update={'log': ['u']}, goto='a')"]}
"""The node gets the Command itself, shown as LangGraph shows one: only the fields that are set."""


def test_a_send_carrying_a_command_runs_under_a_checkpointer(lg: Imports) -> None:
    """LangGraph: ``Send(node, Command(...))`` stores the Command in the checkpoint's pending sends and the
    node receives it as its argument."""
    config = {"configurable": {"thread_id": "t"}}
    assert _send_command(lg).invoke({"log": ["x"]}, config) == SENT_COMMAND


def test_a_send_carrying_a_command_on_the_queue(client: Client) -> None:
    assert _queued(client, "send_command", {"log": ["x"]}) == SENT_COMMAND


def _fast_and_slow(lg: Imports, ended: list[str], started: asyncio.Event, from_start_router: bool) -> Any:
    """Async nodes ``fast`` and ``slow`` in one super-step; ``slow`` waits until cancelled, then cleans up
    over a few loop turns before it records ``cancelled``. Routed from START by a router, graphq runs the
    step loop in a thread of its own (else on the caller's loop)."""

    async def fast(state: Log) -> dict[str, list[str]]:
        return {"log": ["fast"]}

    async def slow(state: Log) -> dict[str, list[str]]:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            for _ in range(5):
                await asyncio.sleep(0)
            ended.append("cancelled")
            raise
        return {"log": ["slow"]}

    builder = lg.StateGraph(Log)
    builder.add_node("fast", fast)
    builder.add_node("slow", slow)
    if from_start_router:
        builder.add_conditional_edges(lg.START, lambda s: ["fast", "slow"], ["fast", "slow"])
    else:
        builder.add_edge(lg.START, "fast")
        builder.add_edge(lg.START, "slow")
    return builder.compile()


@pytest.mark.parametrize("from_start_router", [False, True], ids=["edges", "router"])
def test_leaving_astream_early_cancels_the_running_nodes_first(lg: Imports, from_start_router: bool) -> None:
    """LangGraph: ``aclose()`` of an ``astream`` left after its first chunk returns once the running async
    nodes have been cancelled and have ended."""
    ended: list[str] = []

    async def main() -> list[Any]:
        started = asyncio.Event()
        stream = _fast_and_slow(lg, ended, started, from_start_router).astream(
            {"log": []}, stream_mode="updates"
        )
        chunks = [await anext(stream)]
        await asyncio.wait_for(started.wait(), 60)
        await stream.aclose()
        return [chunks, list(ended)]

    assert asyncio.run(main()) == [[{"fast": {"log": ["fast"]}}], ["cancelled"]]


@pytest.mark.parametrize("from_start_router", [False, True], ids=["edges", "router"])
def test_cancelling_ainvoke_cancels_the_running_nodes_first(lg: Imports, from_start_router: bool) -> None:
    """LangGraph: a cancelled ``ainvoke`` task ends (CancelledError) once its running async nodes have been
    cancelled and have ended."""
    ended: list[str] = []

    async def main() -> list[str]:
        started = asyncio.Event()
        task = asyncio.create_task(_fast_and_slow(lg, ended, started, from_start_router).ainvoke({"log": []}))
        await asyncio.wait_for(started.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return list(ended)

    assert asyncio.run(main()) == ["cancelled"]


class Count(TypedDict):
    n: int


def _flaky(lg: Imports, policy: Any, name: str = "flaky", fails: int = 2) -> Any:
    """Node ``a`` raises ConnectionError on its first ``fails`` tries, then writes how many it took."""
    tries: list[int] = []

    def a(state: Count) -> dict[str, int]:
        tries.append(1)
        if len(tries) <= fails:
            raise ConnectionError("flaky")
        return {"n": len(tries)}

    builder = lg.StateGraph(Count)
    builder.add_node("a", a, retry_policy=policy)
    builder.add_edge(lg.START, "a")
    return builder.compile(name=name)


def _async_flaky(lg: Imports, policy: Any) -> Any:
    tries: list[int] = []

    async def a(state: Count) -> dict[str, int]:
        tries.append(1)
        if len(tries) <= 2:
            raise ConnectionError("flaky")
        return {"n": len(tries)}

    builder = lg.StateGraph(Count)
    builder.add_node("a", a, retry_policy=policy)
    builder.add_edge(lg.START, "a")
    return builder.compile()


def test_a_retry_policy_without_a_pause_retries_at_once(lg: Imports) -> None:
    """LangGraph: ``RetryPolicy(initial_interval=0)`` is accepted; the tries follow with pauses of 0 s."""
    sleeps: list[float] = []
    with mock.patch("time.sleep", sleeps.append):
        assert _flaky(lg, lg.RetryPolicy(initial_interval=0, jitter=False)).invoke({"n": 0}) == {"n": 3}
    assert sleeps == [0, 0]


def test_retry_pauses_go_through_time_sleep(lg: Imports) -> None:
    """LangGraph: a sync node's pauses between tries are ``time.sleep`` calls (a patched one sees them)."""
    sleeps: list[float] = []
    with mock.patch("time.sleep", sleeps.append):
        assert _flaky(lg, lg.RetryPolicy(initial_interval=7, jitter=False)).invoke({"n": 0}) == {"n": 3}
    assert sleeps == [7.0, 14.0]


def test_retry_pauses_go_through_asyncio_sleep(lg: Imports) -> None:
    """LangGraph: an async node's pauses between tries are ``asyncio.sleep`` calls."""
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    graph = _async_flaky(lg, lg.RetryPolicy(initial_interval=7, jitter=False))
    with mock.patch("asyncio.sleep", fake_sleep):
        assert asyncio.run(graph.ainvoke({"n": 0})) == {"n": 3}
    assert sleeps == [7.0, 14.0]


RETRY_ON_MESSAGE = "retry_on must be an Exception class, a list or tuple of Exception classes, or a callable"


@pytest.mark.parametrize("fails", [0, 1])
def test_an_invalid_retry_on_fails_when_the_node_fails(lg: Imports, fails: int) -> None:
    """LangGraph: ``RetryPolicy(retry_on=5)`` is accepted; a node that succeeds runs, one that fails fails
    the run with a TypeError saying what retry_on must be."""
    graph = _flaky(lg, lg.RetryPolicy(retry_on=5, initial_interval=0), fails=fails)
    if not fails:
        assert graph.invoke({"n": 0}) == {"n": 1}
        return
    with pytest.raises(TypeError) as info:
        graph.invoke({"n": 0})
    assert str(info.value).startswith(RETRY_ON_MESSAGE)


def test_retry_policies_of_langgraphs_forms_on_the_queue(client: Client) -> None:
    """On a worker: ``initial_interval=0`` retries, an invalid ``retry_on`` fails the run naming it."""
    for graph in (
        _flaky(GRAPHQ, graphcore.RetryPolicy(initial_interval=0, jitter=False)),
        _flaky(GRAPHQ, graphcore.RetryPolicy(retry_on=5), name="bad_retry_on"),  # type: ignore[arg-type]
    ):
        client.registry.graphs[graph.name] = graph
    assert _queued(client, "flaky", {"n": 0}) == {"n": 3}
    run_id = client.enqueue("bad_retry_on", {"n": 0})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert (run.error.type, run.error.message) == ("RetryOnError", f"{RETRY_ON_MESSAGE} (got 5)")


def _parents_named(events: list[Any]) -> list[str | None]:
    """The parent checkpoint ids that ``checkpoints`` and debug ``checkpoint`` events name, in order."""
    payloads = [e for mode, e in events if mode == "checkpoints"]
    payloads += [e["payload"] for mode, e in events if mode == "debug" and e["type"] == "checkpoint"]
    return [
        p["parent_config"]["configurable"]["checkpoint_id"] if p["parent_config"] else None for p in payloads
    ]


def test_exit_durability_streams_no_parent_that_is_never_saved(lg: Imports) -> None:
    """LangGraph: under ``durability="exit"`` only the run's last checkpoint is saved, and no streamed
    checkpoint event names an unsaved checkpoint as its parent (on a new thread: none at all)."""
    graph = _two_nodes(lg, checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    modes = ["checkpoints", "debug"]
    first = list(graph.stream({"log": ["x"]}, config, stream_mode=modes, durability="exit"))
    assert set(_parents_named(first)) == {None}
    second = list(graph.stream({"log": ["y"]}, config, stream_mode=modes, durability="exit"))
    saved = {s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)}
    assert len(saved) == 2
    assert set(_parents_named(second)) - {None} - saved == set()


def _edge_from_unknown(lg: Imports) -> Any:
    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda s: {})
    builder.add_edge(lg.START, "a")
    builder.add_edge("nope", "a")
    return builder.compile()


def _router_from_unknown(lg: Imports) -> Any:
    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda s: {})
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("nope", lambda s: "a")
    return builder.compile()


def _removes_unknown_graph(lg: Imports) -> Any:
    """Node ``a`` removes message ``zzz``, which nobody wrote."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("a", lambda s: {"messages": [lg.RemoveMessage(id="zzz")]})
    builder.add_edge(lg.START, "a")
    return builder.compile(name="removes_unknown")


def _removes_unknown(lg: Imports) -> Any:
    return _removes_unknown_graph(lg).invoke({"messages": [lg.HumanMessage("hi", id="1")]})


def _not_a_saver(lg: Imports) -> Any:
    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda s: {})
    builder.add_edge(lg.START, "a")
    return builder.compile(checkpointer=object())


def _overwrites(lg: Imports) -> Any:
    """Nodes ``a`` and ``b`` of one step each write an Overwrite to ``log``."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda s: {"log": lg.Overwrite(["a"])})
    builder.add_node("b", lambda s: {"log": lg.Overwrite(["b"])})
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    return builder.compile(name="overwrites")


def _overwrite_twice(lg: Imports) -> Any:
    return _overwrites(lg).invoke({"log": []})


def _two_questions(lg: Imports, **compile: Any) -> Any:
    """Nodes ``a`` and ``b`` of one step each ask with ``interrupt()``."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda s: {"log": [lg.interrupt("qa")]})
    builder.add_node("b", lambda s: {"log": [lg.interrupt("qb")]})
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    return builder.compile(name="two_questions", **compile)


def _plain_resume(lg: Imports) -> Any:
    graph = _two_questions(lg, checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    return graph.invoke(lg.Command(resume="x"), config)


UNKNOWN_SOURCE = "Found edge starting at unknown node 'nope'"
UNKNOWN_ID = "Attempting to delete a message with an ID that doesn't exist ('zzz')"
NOT_A_SAVER = "Invalid checkpointer provided. Expected "
TWO_OVERWRITES = "Can receive only one Overwrite value per super-step"
PLAIN_RESUME = "When there are multiple pending interrupts, you must specify the interrupt id when resuming"


@pytest.mark.parametrize(
    ("program", "error", "text"),
    [
        (_edge_from_unknown, ValueError, UNKNOWN_SOURCE),
        (_router_from_unknown, ValueError, UNKNOWN_SOURCE),
        (_removes_unknown, ValueError, UNKNOWN_ID),
        (_not_a_saver, TypeError, NOT_A_SAVER),
        (_overwrite_twice, "InvalidUpdateError", TWO_OVERWRITES),
        (_plain_resume, RuntimeError, PLAIN_RESUME),
    ],
    ids=["edge", "router", "remove", "saver", "overwrite", "resume"],
)
def test_errors_users_match_on(lg: Imports, program: Any, error: Any, text: str) -> None:
    """LangGraph: these mistakes raise this exception type, its message starting with these words."""
    expected = getattr(lg, error) if isinstance(error, str) else error
    with pytest.raises(expected) as info:
        program(lg)
    assert str(info.value).startswith(text)


def test_errors_users_match_on_from_the_queue(client: Client) -> None:
    """On a worker: the failed run's error is the same text; a plain answer to a run with two open
    requests is a RuntimeError with LangGraph's words."""
    failed = []
    for workflow, input in (("overwrites", {"log": []}), ("removes_unknown", {"messages": []})):
        run_id = client.enqueue(workflow, input)
        work(client)
        run = client.get_run(run_id)
        assert run.status == RunStatus.FAILED and run.error is not None
        failed.append(run.error.message)
    assert failed[0].startswith(TWO_OVERWRITES)
    assert failed[1].startswith(UNKNOWN_ID)
    asking = client.enqueue("two_questions", {"log": []})
    work(client)
    with pytest.raises(RuntimeError) as info:
        client.answer(asking, "x")
    assert str(info.value).startswith(PLAIN_RESUME)


class Greeter:
    """A callable object: ``add_node(Greeter())`` names its node after the class."""

    def __call__(self, state: Log) -> Any:
        return {"log": ["greeted"]}


def _drawn(lg: Imports) -> Any:
    """``ask`` goes by Command to ``yes`` or ``no`` (labelled destinations); ``no`` is deferred."""

    def ask(state: Log) -> Any:
        return lg.Command(goto="yes")

    builder = lg.StateGraph(Log)
    builder.add_node("Greeter", Greeter())
    builder.add_node("ask", ask, destinations={"yes": "approved", "no": "refused"})
    builder.add_node("yes", lambda s: {"log": ["yes"]})
    builder.add_node("no", lambda s: {"log": ["no"]}, defer=True)
    builder.add_edge(lg.START, "Greeter")
    builder.add_edge("Greeter", "ask")
    return builder


DRAWN = (
    "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n"
    "\t__start__([<p>__start__</p>]):::first\n"
    "\tGreeter(Greeter)\n"
    "\task(ask)\n"
    "\tyes(yes)\n"
    "\tno(no<hr/><small><em>defer = True</em></small>)\n"
    "\t__end__([<p>__end__</p>]):::last\n"
    "\tGreeter --> ask;\n"
    "\t__start__ --> Greeter;\n"
    "\task -. &nbsp;refused&nbsp; .-> no;\n"
    "\task -. &nbsp;approved&nbsp; .-> yes;\n"
    "\tyes -.-> no;\n"
    "\tno --> __end__;\n"
    "\tclassDef default fill:#f2f0ff,line-height:1.2\n"
    "\tclassDef first fill-opacity:0\n"
    "\tclassDef last fill:#bfb6fc\n"
)
"""LangGraph's mermaid text of :func:`_drawn`: the labels on the Command edges, the deferred node marked
and reached by an implicit conditional edge from ``yes`` (the node of the step before it runs)."""


def test_a_callable_object_is_named_after_its_class(lg: Imports) -> None:
    """LangGraph: ``add_node(obj)`` without a name names the node ``type(obj).__name__``."""
    builder = lg.StateGraph(Log)
    builder.add_node(Greeter())
    builder.add_edge(lg.START, "Greeter")
    assert list(builder.nodes) == ["Greeter"]
    assert builder.compile().invoke({"log": []}) == {"log": ["greeted"]}


def test_labelled_destinations_and_a_deferred_node_are_drawn_as_langgraph(lg: Imports) -> None:
    """LangGraph: ``destinations={node: label}`` puts each label on its drawn edge; a deferred node is
    drawn with ``defer = True`` and an implicit edge from the step before it runs."""
    graph = _drawn(lg).compile()
    assert graph.get_graph().draw_mermaid() == DRAWN
    assert graph.invoke({"log": []}) == {"log": ["greeted", "yes"]}


GRAPHQ = Imports("graphq")
REGISTRY = Registry(
    {
        g.name: g
        for g in (
            _abstract(GRAPHQ),
            _routed(GRAPHQ, ROUTED_ON_THE_QUEUE),
            _two_nodes(GRAPHQ),
            _listed(GRAPHQ),
            _root_listed(GRAPHQ),
            _send_command(GRAPHQ),
            _overwrites(GRAPHQ),
            _removes_unknown_graph(GRAPHQ),
            _two_questions(GRAPHQ),
        )
    }
)
"""The workflows of the queue tests (graphq's side of each case), for the ``client`` fixture."""
