"""Static breakpoints: ``interrupt_before`` / ``interrupt_after`` at compile time and per call, continued
with ``invoke(None, config)`` (LangGraph 1.x's "breakpoints" how-to)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def chain(lg: Imports, *nodes: str) -> Any:
    """START → nodes[0] → nodes[1] → ... → END, each node appending its name."""
    builder = lg.StateGraph(State)
    previous = lg.START
    for name in nodes:
        builder.add_node(name, lambda s, name=name: {"items": [name]})
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, lg.END)
    return builder


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_interrupt_before_stops_and_invoke_none_goes_on(lg: Imports) -> None:
    """LangGraph: with interrupt_before=["b"] the run stops before b (invoke returns the state so far,
    without an __interrupt__ key) and invoke(None, config) runs b and the rest."""
    app = chain(lg, "a", "b", "c").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    assert app.invoke({"items": ["x"]}, thread()) == {"items": ["x", "a"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b", "c"]}


def test_a_stop_streams_an_empty_interrupt_update(lg: Imports) -> None:
    """LangGraph: in the updates stream a breakpoint is one {"__interrupt__": ()} event; the continuation
    streams the remaining nodes' updates."""
    app = chain(lg, "a", "b", "c").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    first = list(app.stream({"items": ["x"]}, thread(), stream_mode="updates"))
    assert first == [{"a": {"items": ["a"]}}, {"__interrupt__": ()}]
    assert list(app.stream(None, thread(), stream_mode="updates")) == [
        {"b": {"items": ["b"]}},
        {"c": {"items": ["c"]}},
    ]


def test_a_stop_adds_no_values_event(lg: Imports) -> None:
    """LangGraph: the values stream of a stopped run ends with the state before the breakpoint."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    events = list(app.stream({"items": ["x"]}, thread(), stream_mode="values"))
    assert events == [{"items": ["x"]}, {"items": ["x", "a"]}]


def test_interrupt_after_stops_after_the_node(lg: Imports) -> None:
    """LangGraph: interrupt_after=["a"] stops after the super-step that ran a; invoke(None) goes on."""
    app = chain(lg, "a", "b", "c").compile(checkpointer=lg.InMemorySaver(), interrupt_after=["a"])
    assert app.invoke({"items": ["x"]}, thread()) == {"items": ["x", "a"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b", "c"]}


def test_interrupt_after_the_last_node_still_stops(lg: Imports) -> None:
    """LangGraph: interrupt_after on the last node stops after it (an __interrupt__ update at the end);
    invoke(None) then has nothing left to run and returns the same state."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_after=["b"])
    events = list(app.stream({"items": ["x"]}, thread(), stream_mode="updates"))
    assert events == [{"a": {"items": ["a"]}}, {"b": {"items": ["b"]}}, {"__interrupt__": ()}]
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b"]}


def test_breakpoints_given_per_call_replace_the_compiled_ones(lg: Imports) -> None:
    """LangGraph: invoke(..., interrupt_before=["c"]) stops before c only, not at the compiled b; the next
    call without the argument uses the compiled ones again."""
    app = chain(lg, "a", "b", "c", "d").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    assert app.invoke({"items": ["x"]}, thread(), interrupt_before=["c"]) == {"items": ["x", "a", "b"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b", "c", "d"]}


def test_per_call_breakpoints_without_compiled_ones(lg: Imports) -> None:
    """LangGraph: a graph compiled without breakpoints stops at the ones a call gives (before and after)."""
    app = chain(lg, "a", "b", "c").compile(checkpointer=lg.InMemorySaver())
    assert app.invoke({"items": ["x"]}, thread("1"), interrupt_after=["b"]) == {"items": ["x", "a", "b"]}
    assert app.invoke({"items": ["x"]}, thread("2"), interrupt_before=["a"]) == {"items": ["x"]}
    assert app.invoke(None, thread("2")) == {"items": ["x", "a", "b", "c"]}


def test_star_stops_before_every_super_step(lg: Imports) -> None:
    """LangGraph: interrupt_before="*" stops before each super-step; each invoke(None) runs one."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_before="*")
    assert app.invoke({"items": ["x"]}, thread()) == {"items": ["x"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b"]}


def test_star_after_stops_after_every_super_step(lg: Imports) -> None:
    """LangGraph: interrupt_after="*" stops after each super-step."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_after="*")
    assert app.invoke({"items": ["x"]}, thread()) == {"items": ["x", "a"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "b"]}


@pytest.mark.parametrize("where", ["interrupt_before", "interrupt_after"])
def test_an_unknown_breakpoint_node_is_refused_at_compile(lg: Imports, where: str) -> None:
    """LangGraph: compile(interrupt_before=[name]) with a name that is no node raises a ValueError."""
    builder = chain(lg, "a")
    with pytest.raises(ValueError) as caught:
        builder.compile(**{where: ["zz"]})
    if lg.is_langgraph:
        assert str(caught.value) == "Interrupt node `zz` not found"
    else:
        assert str(caught.value) == f"{where}: unknown node(s) ['zz']; nodes: ['a']"


def test_without_a_checkpointer_the_run_stops_and_returns_the_state(lg: Imports) -> None:
    """LangGraph: a breakpoint in a graph without a checkpointer still stops the run (nothing to go on
    from afterwards)."""
    app = chain(lg, "a", "b").compile(interrupt_before=["b"])
    assert app.invoke({"items": ["x"]}) == {"items": ["x", "a"]}


def test_a_stop_before_a_parallel_step_runs_none_of_its_nodes(lg: Imports) -> None:
    """LangGraph: a breakpoint on one node of a fan-out stops before the whole super-step; invoke(None)
    runs every node of it."""
    builder = lg.StateGraph(State)
    for name in ("p", "q", "r"):
        builder.add_node(name, lambda s, name=name: {"items": [name]})
        builder.add_edge(lg.START, name)
    app = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["q"])
    assert app.invoke({"items": []}, thread()) == {"items": []}
    assert list(app.stream(None, thread(), stream_mode="updates")) == [
        {"p": {"items": ["p"]}},
        {"q": {"items": ["q"]}},
        {"r": {"items": ["r"]}},
    ]


def test_new_input_at_a_breakpoint_starts_again_and_stops_again(lg: Imports) -> None:
    """LangGraph: new input on a thread stopped at a breakpoint is applied and the run starts again at the
    entry node, stopping at the breakpoint again."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    app.invoke({"items": ["x"]}, thread())
    assert app.invoke({"items": ["y"]}, thread()) == {"items": ["x", "a", "y", "a"]}
    assert app.invoke(None, thread()) == {"items": ["x", "a", "y", "a", "b"]}


def test_a_node_that_asks_after_a_breakpoint_pauses_and_resumes(lg: Imports) -> None:
    """LangGraph: continuing past a breakpoint into a node that calls interrupt() pauses there (the result
    has __interrupt__) and Command(resume=...) answers it."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", lambda s: {"items": ["b:" + str(lg.interrupt("ok?"))]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    app = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    assert app.invoke({"items": ["x"]}, thread()) == {"items": ["x", "a"]}
    paused = app.invoke(None, thread())
    assert paused["items"] == ["x", "a"]
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    assert app.invoke(lg.Command(resume="yes"), thread()) == {"items": ["x", "a", "b:yes"]}


def test_an_unknown_node_given_per_call_is_ignored(lg: Imports) -> None:
    """LangGraph: an unknown node in a call's interrupt_before/interrupt_after is not checked: the call's
    list still replaces the compiled one, its known nodes stop the run, the unknown one never does; graphq
    does the same and warns, naming it."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    with lg.graphq_warns(
        r"^interrupt_before: unknown node\(s\) \['zz'\] never stop the run; nodes: \['a', 'b'\]$"
    ):
        assert app.invoke({"items": []}, thread("1"), interrupt_before=["zz"]) == {"items": ["a", "b"]}
    with lg.graphq_warns(
        r"^interrupt_after: unknown node\(s\) \['zz'\] never stop the run; nodes: \['a', 'b'\]$"
    ):
        assert app.invoke({"items": []}, thread("2"), interrupt_after=["zz", "a"]) == {"items": ["a"]}
    assert app.get_state(thread("2")).next == ("b",)


def test_get_state_names_the_node_a_run_stopped_before(lg: Imports) -> None:
    """LangGraph: after a stop before b, get_state(config).next is ("b",) and its values are the state so
    far; after the run went on, next is ()."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    app.invoke({"items": ["x"]}, thread())
    snapshot = app.get_state(thread())
    assert (snapshot.next, snapshot.values) == (("b",), {"items": ["x", "a"]})
    app.invoke(None, thread())
    assert app.get_state(thread()).next == ()


def test_get_state_after_a_stop_after(lg: Imports) -> None:
    """LangGraph: after a stop after a, get_state(config).next names the node that runs next."""
    app = chain(lg, "a", "b", "c").compile(checkpointer=lg.InMemorySaver(), interrupt_after=["a"])
    app.invoke({"items": []}, thread())
    assert app.get_state(thread()).next == ("b",)


def test_state_edited_at_a_breakpoint_is_what_the_run_goes_on_with(lg: Imports) -> None:
    """LangGraph: update_state at a breakpoint (the "edit graph state" how-to) writes the edit as the node
    that ran last; invoke(None) then runs the stopped node on the edited state, without stopping again."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    app.invoke({"items": ["x"]}, thread())
    app.update_state(thread(), {"items": ["edited"]})
    assert app.get_state(thread()).next == ("b",)
    assert app.invoke(None, thread()) == {"items": ["x", "a", "edited", "b"]}


def test_ainvoke_stops_at_a_breakpoint_and_goes_on(lg: Imports) -> None:
    """LangGraph: ainvoke takes interrupt_before like invoke: it returns the state at the stop, and
    ainvoke(None, config) goes on."""
    app = chain(lg, "a", "b").compile(checkpointer=lg.InMemorySaver())

    async def both() -> tuple[Any, Any]:
        first = await app.ainvoke({"items": ["x"]}, thread(), interrupt_before=["b"])
        return first, await app.ainvoke(None, thread())

    assert asyncio.run(both()) == ({"items": ["x", "a"]}, {"items": ["x", "a", "b"]})


def _with_stopping_subgraph(lg: Imports, runs: list[str], checkpointer: Any, **stops: Any) -> Any:
    """START → pre → sub → post, ``sub`` a subgraph a → b compiled with ``checkpointer`` and ``stops``;
    every node appends its name to ``runs`` as it runs."""

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            runs.append(name)
            return {"items": [name]}

        return run

    inner = lg.StateGraph(State)
    inner.add_node("a", node("a"))
    inner.add_node("b", node("b"))
    inner.add_edge(lg.START, "a")
    inner.add_edge("a", "b")
    outer = lg.StateGraph(State)
    outer.add_node("pre", node("pre"))
    outer.add_node("sub", inner.compile(checkpointer=checkpointer, **stops))
    outer.add_node("post", node("post"))
    outer.add_edge(lg.START, "pre")
    outer.add_edge("pre", "sub")
    outer.add_edge("sub", "post")
    return outer.compile(checkpointer=lg.InMemorySaver())


@pytest.mark.parametrize("checkpointer", [None, True])
@pytest.mark.parametrize("stops", [{"interrupt_before": ["b"]}, {"interrupt_after": ["a"]}])
def test_a_subgraphs_breakpoint_stops_the_parent_and_invoke_none_goes_on(
    lg: Imports, checkpointer: Any, stops: dict[str, Any]
) -> None:
    """LangGraph: the subgraph stops between a and b, and so does its parent (its updates stream ends with
    {"__interrupt__": ()}, its snapshot waits on ``sub`` with no interrupt, the subgraph's on ``b``);
    invoke(None, config) goes on past the breakpoint without running ``a`` again."""
    runs: list[str] = []
    app = _with_stopping_subgraph(lg, runs, checkpointer, **stops)
    first = list(app.stream({"items": []}, thread(), stream_mode="updates"))
    assert first == [{"pre": {"items": ["pre"]}}, {"__interrupt__": ()}]
    snap = app.get_state(thread(), subgraphs=True)
    (task,) = snap.tasks
    assert (snap.values, snap.next, task.name, task.interrupts) == ({"items": ["pre"]}, ("sub",), "sub", ())
    assert (task.state.values, task.state.next) == ({"items": ["pre", "a"]}, ("b",))
    assert app.invoke(None, thread()) == {"items": ["pre", "pre", "a", "b", "post"]}
    assert runs == ["pre", "a", "b", "post"]


def test_new_input_stops_a_stateful_subgraph_again(lg: Imports) -> None:
    """LangGraph: a new turn of the parent is a new turn of a ``checkpointer=True`` subgraph: it stops at its
    breakpoint again (invoke returns the state so far, with no __interrupt__ key)."""
    runs: list[str] = []
    app = _with_stopping_subgraph(lg, runs, True, interrupt_before=["b"])
    app.invoke({"items": []}, thread())
    app.invoke(None, thread())
    assert app.invoke({"items": ["2"]}, thread()) == {"items": ["pre", "pre", "a", "b", "post", "2", "pre"]}
    assert runs == ["pre", "a", "b", "post", "pre", "a"]


def test_a_subgraphs_stop_keeps_its_siblings_writes(lg: Imports) -> None:
    """LangGraph: a task beside the stopped subgraph finishes; the stream shows its update, the state with
    it, then the stop; going on, it does not run again."""
    runs: list[str] = []
    inner = chain(lg, "a", "b").compile(interrupt_before=["b"])
    outer = lg.StateGraph(State)
    outer.add_node("sub", inner)
    outer.add_node("side", lambda s: runs.append("side") or {"items": ["side"]})
    outer.add_edge(lg.START, "sub")
    outer.add_edge(lg.START, "side")
    app = outer.compile(checkpointer=lg.InMemorySaver())
    assert list(app.stream({"items": []}, thread(), stream_mode=["updates", "values"])) == [
        ("values", {"items": []}),
        ("updates", {"side": {"items": ["side"]}}),
        ("values", {"items": ["side"]}),
        ("updates", {"__interrupt__": ()}),
    ]
    assert app.invoke(None, thread()) == {"items": ["side", "a", "b"]}
    assert runs == ["side"]


def test_a_graph_invoked_in_a_node_stops_its_parent_at_its_breakpoint(lg: Imports) -> None:
    """LangGraph: ``inner.invoke(...)`` in a node stops at the inner graph's breakpoint and the parent stops
    with it (invoke returns the state before the node); invoke(None, config) runs the node again and the
    inner graph goes on past its breakpoint."""
    inner = chain(lg, "a", "b").compile(interrupt_before=["b"])
    outer = lg.StateGraph(State)
    outer.add_node("node", lambda s: {"items": inner.invoke({"items": ["n"]})["items"]})
    outer.add_edge(lg.START, "node")
    app = outer.compile(checkpointer=lg.InMemorySaver())
    assert app.invoke({"items": []}, thread()) == {"items": []}
    assert app.get_state(thread()).next == ("node",)
    assert app.invoke(None, thread()) == {"items": ["n", "a", "b"]}
