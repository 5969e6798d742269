"""Run-start errors, a failed step's tasks in the snapshot, node errors and unstorable classes (G4).

Each case runs with LangGraph's imports and with graphq's; where graphq deliberately differs the case says so
and asserts each side's value.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import operator
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict, total=False):
    x: int
    v: Annotated[list[str], operator.add]


def _thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _one_node(lg: Imports, checkpointer: bool = True) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"x": s.get("x", 0) + 1})
    builder.add_edge(lg.START, "a")
    return builder.compile(checkpointer=lg.InMemorySaver() if checkpointer else None)


# -- a checkpointer needs a thread ---------------------------------------------------------------------------

_NO_THREAD = (
    r"^Checkpointer requires one or more of the following 'configurable' keys: thread_id, checkpoint_ns, "
    r"checkpoint_id$"
)
_GRAPHQ_NO_THREAD = (
    r"^Checkpointer requires a thread_id: a graph compiled with a checkpointer runs on a thread; pass "
    r"config=\{'configurable': \{'thread_id': '<id>'\}\} \(or RunConfig\(thread_id='<id>'\)\)$"
)


@pytest.mark.parametrize(
    "call",
    [
        lambda g: g.invoke({"x": 0}),
        lambda g: list(g.stream({"x": 0})),
        lambda g: g.invoke({"x": 0}, {"configurable": {}}),
        lambda g: g.invoke(None),
    ],
    ids=["invoke", "stream", "empty-configurable", "invoke-none"],
)
def test_a_graph_with_a_checkpointer_run_without_a_thread_is_refused(
    lg: Imports, call: Callable[[Any], Any]
) -> None:
    """LangGraph: a graph compiled with a checkpointer, run without a thread id, raises ValueError naming the
    ``configurable`` keys it needs (graphq's message names ``thread_id`` and how to pass it)."""
    with pytest.raises(ValueError, match=_NO_THREAD if lg.is_langgraph else _GRAPHQ_NO_THREAD):
        call(_one_node(lg))


def test_a_graph_without_a_checkpointer_needs_no_thread(lg: Imports) -> None:
    """LangGraph: without a checkpointer a run needs no thread id, and the same graph with one runs on the
    thread it is given."""
    assert _one_node(lg, checkpointer=False).invoke({"x": 0}) == {"x": 1, "v": []}
    assert _one_node(lg).invoke({"x": 4}, _thread()) == {"x": 5, "v": []}


# -- no input ------------------------------------------------------------------------------------------------


def test_no_input_on_a_fresh_thread_raises_empty_input_error(lg: Imports) -> None:
    """LangGraph: ``invoke(None, config)`` on a thread without a checkpoint raises ``EmptyInputError``
    ("Received no input for __start__"), an ``Exception`` that is not a ``ValueError``, and writes
    nothing."""
    graph = _one_node(lg)
    with pytest.raises(lg.EmptyInputError, match=r"^Received no input for __start__") as info:
        graph.invoke(None, _thread("fresh"))
    assert not isinstance(info.value, ValueError)
    assert graph.get_state(_thread("fresh")).values == {}
    assert issubclass(lg.EmptyInputError, Exception)


def test_no_input_without_a_checkpointer_raises_empty_input_error(lg: Imports) -> None:
    """LangGraph: ``invoke(None)`` and ``stream(None)`` of a graph without a checkpointer raise
    ``EmptyInputError``."""
    graph = _one_node(lg, checkpointer=False)
    with pytest.raises(lg.EmptyInputError, match=r"^Received no input for __start__"):
        graph.invoke(None)
    with pytest.raises(lg.EmptyInputError, match=r"^Received no input for __start__"):
        list(graph.stream(None))


def test_a_graph_invoked_in_a_node_without_input_raises_empty_input_error(lg: Imports) -> None:
    """LangGraph: ``inner.invoke(None)`` inside a node raises ``EmptyInputError`` there, which the node may
    catch."""
    inner = _one_node(lg, checkpointer=False)

    def node(state: State) -> dict[str, Any]:
        try:
            return {"x": inner.invoke(None)["x"]}
        except lg.EmptyInputError as exc:
            return {"v": [str(exc).split(":")[0]]}

    builder = lg.StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(lg.START, "n")
    assert builder.compile().invoke({"x": 0}) == {"x": 0, "v": ["Received no input for __start__"]}


def test_no_input_continues_a_thread_that_has_a_checkpoint(lg: Imports) -> None:
    """LangGraph: ``invoke(None, config)`` on a thread whose run ended runs nothing and returns its state."""
    graph = _one_node(lg)
    assert graph.invoke({"x": 1}, _thread()) == {"x": 2, "v": []}
    assert graph.invoke(None, _thread()) == {"x": 2, "v": []}


# -- an answer with nothing to answer ------------------------------------------------------------------------


def test_a_resume_without_a_checkpointer_is_a_runtime_error(lg: Imports) -> None:
    """LangGraph: ``Command(resume=...)`` to a graph without a checkpointer raises ``RuntimeError``
    ("Cannot use Command(resume=...) without checkpointer"); graphq's error (also a ``ValueError``) says
    how to compile one."""
    graph = _one_node(lg, checkpointer=False)
    with pytest.raises(RuntimeError) as info:
        graph.invoke(lg.Command(resume="yes"))
    if lg.is_langgraph:
        assert str(info.value) == "Cannot use Command(resume=...) without checkpointer"
        return
    assert isinstance(info.value, ValueError)
    assert str(info.value) == (
        "Command(resume=...) needs a checkpointer: compile(checkpointer=InMemorySaver()) and run on a "
        "thread, config={'configurable': {'thread_id': '<id>'}}"
    )


def test_a_resume_on_a_fresh_thread_of_a_graph_that_asks(lg: Imports) -> None:
    """LangGraph: ``Command(resume=...)`` on a fresh thread runs the graph from its start and drops the
    answer: the node's ``interrupt()`` asks anew, and the next answer reaches it. graphq does the same and
    warns that the answer was dropped."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"v": ["a"]})
    builder.add_node("b", lambda s: {"v": [lg.interrupt("b?")]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    warns = contextlib.nullcontext() if lg.is_langgraph else pytest.warns(UserWarning, match="thread 'r'")
    with warns:
        out = graph.invoke(lg.Command(resume="early"), _thread("r"))
    assert (out["v"], [i.value for i in out["__interrupt__"]]) == (["a"], ["b?"])
    assert graph.invoke(lg.Command(resume="late"), _thread("r")) == {"v": ["a", "late"]}


# -- a failed step's tasks in the snapshot -------------------------------------------------------------------


class MyAppError(Exception):
    """A user error with its own constructor and attribute."""

    def __init__(self, code: int) -> None:
        super().__init__(f"code {code}")
        self.code = code


def _flaky_pair(lg: Imports, fail: dict[str, bool]) -> Any:
    good_done = threading.Event()  # flaky fails once good has finished (LangGraph cancels a running one)

    def good(state: State) -> dict[str, Any]:
        good_done.set()
        return {"v": ["good"]}

    def flaky(state: State) -> dict[str, Any]:
        if fail["on"]:
            assert good_done.wait(10)
            time.sleep(0.05)  # good's writes are saved as it returns
            raise MyAppError(7)
        return {"v": ["flaky"]}

    builder = lg.StateGraph(State)
    builder.add_node("good", good)
    builder.add_node("flaky", flaky)
    builder.add_node("after", lambda s: {"v": ["after"]})
    builder.add_edge(lg.START, "good")
    builder.add_edge(lg.START, "flaky")
    builder.add_edge(["good", "flaky"], "after")
    return builder.compile(checkpointer=lg.InMemorySaver())


def test_a_failed_parallel_steps_snapshot_has_the_failed_tasks_error(lg: Imports) -> None:
    """LangGraph: after a parallel step fails, ``get_state`` lists the finished task with its result and
    no error, the failed one with ``error`` the repr of the node's exception (a string, read back from the
    checkpointer); ``next`` is the failed task. The error stays in the history after the run goes on."""
    fail = {"on": True}
    graph = _flaky_pair(lg, fail)
    with pytest.raises(MyAppError):
        graph.invoke({"v": []}, _thread())
    snap = graph.get_state(_thread())
    assert snap.next == ("flaky",)
    assert [(t.name, t.error, t.result) for t in snap.tasks] == [
        ("good", None, {"v": ["good"]}),
        ("flaky", "MyAppError('code 7')", None),
    ]
    fail["on"] = False
    assert graph.invoke(None, _thread()) == {"v": ["flaky", "good", "after"]}
    assert graph.get_state(_thread()).tasks == ()
    failed_at = [s for s in graph.get_state_history(_thread()) if len(s.tasks) == 2]
    assert [(t.name, t.error) for t in failed_at[0].tasks] == [
        ("good", None),
        ("flaky", "MyAppError('code 7')"),
    ]


def test_a_single_failed_task_has_its_error_until_it_runs_again(lg: Imports) -> None:
    """LangGraph: a one-task step that fails leaves the task in the snapshot with ``error`` its exception's
    repr; when it fails again the snapshot shows the new error."""
    errors = [KeyError("k"), ValueError("second")]

    def node(state: State) -> dict[str, Any]:
        raise errors.pop(0)

    builder = lg.StateGraph(State)
    builder.add_node("f", node)
    builder.add_edge(lg.START, "f")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    with pytest.raises(KeyError):
        graph.invoke({"x": 1}, _thread())
    assert [(t.name, t.error) for t in graph.get_state(_thread()).tasks] == [("f", "KeyError('k')")]
    with pytest.raises(ValueError):
        graph.invoke(None, _thread())
    assert [(t.name, t.error) for t in graph.get_state(_thread()).tasks] == [("f", "ValueError('second')")]


def test_a_paused_steps_tasks_have_no_error(lg: Imports) -> None:
    """LangGraph: a task that paused in ``interrupt()`` has ``error`` None."""
    builder = lg.StateGraph(State)
    builder.add_node("ask", lambda s: {"v": [lg.interrupt("q")]})
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    graph.invoke({"v": []}, _thread())
    assert [(t.name, t.error, len(t.interrupts)) for t in graph.get_state(_thread()).tasks] == [
        ("ask", None, 1)
    ]


# -- a node's exception is caught as itself ------------------------------------------------------------------


def _raising(lg: Imports, error: BaseException) -> Any:
    def node(state: State) -> dict[str, Any]:
        raise error

    builder = lg.StateGraph(State)
    builder.add_node("boom", node)
    builder.add_edge(lg.START, "boom")
    return builder.compile()


def test_except_the_nodes_error_type_catches_it(lg: Imports) -> None:
    """LangGraph: a node's exception reaches the caller as itself: ``except KeyError`` catches a KeyError,
    with its ``args``."""
    with pytest.raises(KeyError) as info:
        _raising(lg, KeyError("missing")).invoke({"x": 0})
    assert info.value.args == ("missing",)


def test_except_a_user_error_class_catches_it_with_its_attributes(lg: Imports) -> None:
    """LangGraph: ``except MyAppError`` (a class with its own ``__init__``) catches the node's error, with
    its attributes."""
    try:
        _raising(lg, MyAppError(42)).invoke({"x": 0})
    except MyAppError as exc:
        caught = (exc.code, exc.args)
    assert caught == (42, ("code 42",))


def test_except_an_os_error_subclass_catches_it_with_errno(lg: Imports) -> None:
    """LangGraph: a node's ``FileNotFoundError`` is caught as ``FileNotFoundError`` and as ``OSError``, with
    its ``errno`` and ``filename``."""
    with pytest.raises(OSError) as info:
        _raising(lg, FileNotFoundError(2, "No such file", "/nowhere")).invoke({"x": 0})
    assert isinstance(info.value, FileNotFoundError)
    assert (info.value.errno, info.value.strerror, info.value.filename) == (2, "No such file", "/nowhere")


def test_an_async_nodes_error_is_caught_as_itself(lg: Imports) -> None:
    """LangGraph: under ``ainvoke`` an async node's exception is caught by its own type."""

    async def node(state: State) -> dict[str, Any]:
        raise LookupError("async")

    builder = lg.StateGraph(State)
    builder.add_node("a", node)
    builder.add_edge(lg.START, "a")
    graph = builder.compile()
    with pytest.raises(LookupError) as info:
        asyncio.run(graph.ainvoke({"x": 0}))
    assert info.value.args == ("async",)


def _call_by(how: str, graph: Any) -> None:
    """Run ``graph`` once by ``invoke``, ``stream`` or ``ainvoke``."""
    if how == "invoke":
        graph.invoke({"x": 0})
    elif how == "stream":
        list(graph.stream({"x": 0}))
    else:
        asyncio.run(graph.ainvoke({"x": 0}))


def _raising_async(lg: Imports, error: BaseException) -> Any:
    async def node(state: State) -> dict[str, Any]:
        raise error

    builder = lg.StateGraph(State)
    builder.add_node("boom", node)
    builder.add_edge(lg.START, "boom")
    return builder.compile()


_CALLS = [("sync", "invoke"), ("sync", "stream"), ("sync", "ainvoke"), ("async", "ainvoke")]
"""(the node, how the graph is run): LangGraph runs an async node under ``ainvoke`` only."""


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt])
@pytest.mark.parametrize(("node", "how"), _CALLS)
def test_a_nodes_system_exit_or_keyboard_interrupt_reaches_the_caller_as_itself(
    lg: Imports, node: str, how: str, kind: type[BaseException]
) -> None:
    """LangGraph: a node's ``SystemExit`` or ``KeyboardInterrupt`` propagates to the caller of ``invoke``,
    ``stream`` and ``ainvoke``: the very exception the node raised (on the queue, graphq fails the run
    instead: tests/test_node_exits.py)."""
    error = kind(3)
    graph = (_raising if node == "sync" else _raising_async)(lg, error)
    with pytest.raises(kind) as info:
        _call_by(how, graph)
    assert info.value is error


@pytest.mark.parametrize(("node", "how"), _CALLS)
def test_a_nodes_own_cancelled_error_fails_it_as_an_exception_naming_the_node(
    lg: Imports, node: str, how: str
) -> None:
    """LangGraph: a node that raises ``asyncio.CancelledError`` itself fails as any node error does, with an
    ``Exception`` naming the node (``NodeCancelledError``; graphq's ``NodeError``), not a bare
    ``CancelledError`` that would read as the caller's task being cancelled."""
    graph = (_raising if node == "sync" else _raising_async)(lg, asyncio.CancelledError())
    with pytest.raises(Exception) as info:
        _call_by(how, graph)
    assert not isinstance(info.value, asyncio.CancelledError)
    if lg.is_langgraph:
        assert str(info.value) == "Node 'boom' raised asyncio.CancelledError"
    else:
        assert str(info.value) == "node 'boom' raised CancelledError"


def test_a_router_of_starts_error_is_caught_as_itself(lg: Imports) -> None:
    """LangGraph: a router from START that reads a key the input lacks raises its ``KeyError`` (graphq's is
    a NodeError that is one, naming the router)."""

    def fan_out(state: State) -> str:
        return "a" if state["x"] > 0 else lg.END

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"x": 1})
    builder.add_conditional_edges(lg.START, fan_out)
    with pytest.raises(KeyError) as info:
        builder.compile().invoke({"v": ["y"]})
    assert info.value.args == ("x",)
    if not lg.is_langgraph:
        assert str(info.value) == "router 'fan_out' after START raised KeyError: 'x'"


# -- a class the serde does not allow ------------------------------------------------------------------------


@dataclasses.dataclass
class Named:
    """A dataclass the state schema names (annotated): allowed by graphq."""

    x: int


@dataclasses.dataclass
class Unnamed:
    """A dataclass held in an ``Any`` key: not allowed by graphq until allowed explicitly."""

    x: int


class Held(TypedDict):
    named: Named
    held: Any


def test_a_dataclass_the_schema_names_round_trips(lg: Imports) -> None:
    """LangGraph: a dataclass in the state round-trips through ``InMemorySaver`` (graphq allows the classes
    the state schema names)."""
    builder = lg.StateGraph(Held)
    builder.add_node("a", lambda s: {"named": Named(s["named"].x + 1)})
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    assert graph.invoke({"named": Named(1)}, _thread()) == {"named": Named(2)}
    assert graph.get_state(_thread()).values == {"named": Named(2)}


def test_a_dataclass_the_schema_does_not_name(lg: Imports) -> None:
    """LangGraph: a dataclass in an ``Any`` key round-trips through ``InMemorySaver`` (with a warning).
    graphq (a deliberate difference): the write is refused with ``SerializationError`` saying exactly how
    to allow this class (no pickle: the workers load only allowed classes)."""
    builder = lg.StateGraph(Held)
    builder.add_node("a", lambda s: {"held": Unnamed(2)})
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    if lg.is_langgraph:
        assert graph.invoke({"named": Named(1)}, _thread()) == {"named": Named(1), "held": Unnamed(2)}
        assert graph.get_state(_thread()).values == {"named": Named(1), "held": Unnamed(2)}
        return
    from graphcore.errors import SerializationError

    with pytest.raises(SerializationError) as info:
        graph.invoke({"named": Named(1)}, _thread())
    module = Unnamed.__module__  # this module, as pytest imported it
    assert str(info.value) == (
        f"state.held: class {module}:Unnamed could not be loaded back (it is not allowed: graphq loads "
        "only allowed classes, never pickle); allow it by naming it in the state schema (a key annotated "
        "Unnamed), by calling graphcore.checkpoints.serde.allow_classes(Unnamed) in the module that defines "
        f"it, or with the setting GRAPHQ_SERDE_ALLOWED_CLASSES={module}:Unnamed"
    )
