"""``Command(graph=Command.PARENT, ...)``: a subgraph's node updates and navigates its parent graph."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int


def _log(name: str) -> Any:
    return lambda s: {"log": [name]}


def _to_parent(lg: Imports, goto: Any = "other", update: Any = None) -> Any:
    update = {"log": ["from sub"], "n": 5} if update is None else update
    return lambda s: lg.Command(graph=lg.Command.PARENT, goto=goto, update=update)


def _sub(lg: Imports, node: Any, first: bool = True) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("sub_node", node)
    builder.add_node("never", _log("never"))
    builder.add_edge("sub_node", "never")
    if first:
        builder.add_node("first", lambda s: {"log": ["s1"], "n": 1})
        builder.add_edge(lg.START, "first")
        builder.add_edge("first", "sub_node")
    else:
        builder.add_edge(lg.START, "sub_node")
    return builder.compile()


def _parent(lg: Imports, sub: Any, *, post: bool = False, saver: Any = None) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("sub", sub, destinations=("other",))
    builder.add_node("other", _log("other"))
    builder.add_edge(lg.START, "sub")
    if post:
        builder.add_node("post", _log("post"))
        builder.add_edge("sub", "post")
    return builder.compile(checkpointer=saver)


def test_the_trial_program(lg: Imports) -> None:
    """LangGraph: Command(graph=Command.PARENT, goto="other", update=...) from a subgraph's node runs the
    parent's "other" after applying the update (a new-user trial's program: {'log': ['from sub',
    'other']})."""

    def sub_node(s: State) -> Any:
        return lg.Command(graph=lg.Command.PARENT, goto="other", update={"log": ["from sub"]})

    class S(TypedDict):
        log: Annotated[list[str], operator.add]

    sub = lg.StateGraph(S)
    sub.add_node("sub_node", sub_node)
    sub.add_edge(lg.START, "sub_node")
    builder = lg.StateGraph(S)
    builder.add_node("sub", sub.compile(), destinations=("other",))
    builder.add_node("other", _log("other"))
    builder.add_edge(lg.START, "sub")
    assert builder.compile().invoke({"log": []}) == {"log": ["from sub", "other"]}


def test_the_update_replaces_what_the_subgraph_wrote(lg: Imports) -> None:
    """LangGraph: the parent gets the command's update through its reducers as the subgraph node's update;
    the subgraph's own writes (s1, n=1) are dropped and its later nodes do not run."""
    app = _parent(lg, _sub(lg, _to_parent(lg)))
    assert app.invoke({"log": ["in"], "n": 0}) == {"log": ["in", "from sub", "other"], "n": 5}
    assert list(app.stream({"log": ["in"], "n": 0})) == [
        {"sub": {"log": ["from sub"], "n": 5}},
        {"other": {"log": ["other"]}},
    ]
    updates = [(len(ns), chunk) for ns, chunk in app.stream({"log": ["in"], "n": 0}, subgraphs=True)]
    assert updates == [
        (1, {"first": {"log": ["s1"], "n": 1}}),
        (0, {"sub": {"log": ["from sub"], "n": 5}}),
        (0, {"other": {"log": ["other"]}}),
    ]


def test_the_subgraph_nodes_static_edges_still_run(lg: Imports) -> None:
    """LangGraph: the goto runs beside the parent's own edge from the subgraph node (sub -> post)."""
    app = _parent(lg, _sub(lg, _to_parent(lg), first=False), post=True)
    assert app.invoke({"log": ["in"], "n": 0}) == {"log": ["in", "from sub", "other", "post"], "n": 5}


def test_it_goes_one_level_up(lg: Imports) -> None:
    """LangGraph: Command.PARENT goes to the closest parent only; the grandparent gets that one's output."""
    inner = lg.StateGraph(State)
    inner.add_node("deep", _to_parent(lg, "mid2", {"log": ["deep"]}))
    inner.add_edge(lg.START, "deep")
    mid = lg.StateGraph(State)
    mid.add_node("inner", inner.compile(), destinations=("mid2",))
    mid.add_node("mid2", _log("mid2"))
    mid.add_edge(lg.START, "inner")
    top = lg.StateGraph(State)
    top.add_node("mid", mid.compile())
    top.add_node("last", _log("last"))
    top.add_edge(lg.START, "mid")
    top.add_edge("mid", "last")
    assert top.compile().invoke({"log": ["in"], "n": 0}) == {
        "log": ["in", "in", "deep", "mid2", "last"],
        "n": 0,
    }


def test_a_send_to_the_parent(lg: Imports) -> None:
    """LangGraph: goto may be a Send to a node of the parent, run with the Send's payload."""
    sub = lg.StateGraph(State)
    sub.add_node("x", _to_parent(lg, [lg.Send("w", {"log": ["sent"], "n": 9})], {}))
    sub.add_edge(lg.START, "x")
    builder = lg.StateGraph(State)
    builder.add_node("sub", sub.compile(), destinations=("w",))
    builder.add_node("w", lambda s: {"log": [f"w{s['n']}"]})
    builder.add_edge(lg.START, "sub")
    assert builder.compile().invoke({"log": ["in"], "n": 0}) == {"log": ["in", "w9"], "n": 0}


def test_a_retry_policy_does_not_run_the_node_again(lg: Imports) -> None:
    """LangGraph: a Command.PARENT is not an error to retry, whatever the node's retry_on says: the node runs
    once (graphq ran it max_attempts times)."""
    calls: list[int] = []

    def once(s: State) -> Any:
        calls.append(1)
        return lg.Command(graph=lg.Command.PARENT, goto="other", update={"log": ["from sub"]})

    sub = lg.StateGraph(State)
    policy = lg.RetryPolicy(retry_on=Exception, max_attempts=3, initial_interval=0.01, jitter=False)
    sub.add_node("sub_node", once, retry_policy=policy)
    sub.add_edge(lg.START, "sub_node")
    assert _parent(lg, sub.compile()).invoke({"log": ["in"], "n": 0}) == {
        "log": ["in", "from sub", "other"],
        "n": 0,
    }
    assert calls == [1]


def test_a_node_that_invokes_a_graph_takes_its_command(lg: Imports) -> None:
    """LangGraph: a node calling inner.invoke(...) gets the inner node's Command.PARENT as its own command."""
    inner = _sub(lg, _to_parent(lg), first=False)
    builder = lg.StateGraph(State)
    builder.add_node("caller", lambda s: inner.invoke(s), destinations=("other",))
    builder.add_node("other", _log("other"))
    builder.add_edge(lg.START, "caller")
    assert builder.compile().invoke({"log": ["in"], "n": 0}) == {"log": ["in", "from sub", "other"], "n": 5}


def test_an_async_subgraph_node(lg: Imports) -> None:
    """LangGraph: an async subgraph node's Command.PARENT works the same under ainvoke."""

    async def asub(s: State) -> Any:
        return lg.Command(graph=lg.Command.PARENT, goto="other", update={"log": ["async sub"]})

    app = _parent(lg, _sub(lg, asub, first=False))
    assert asyncio.run(app.ainvoke({"log": ["in"], "n": 0})) == {"log": ["in", "async sub", "other"], "n": 0}


def test_with_a_checkpointer(lg: Imports) -> None:
    """LangGraph: with a checkpointer the run completes the same and its last state has nothing next."""
    app = _parent(lg, _sub(lg, _to_parent(lg)), saver=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"log": ["in"], "n": 0}, config) == {"log": ["in", "from sub", "other"], "n": 5}
    state = app.get_state(config)
    assert (state.values, state.next) == ({"log": ["in", "from sub", "other"], "n": 5}, ())


def test_from_a_root_graph(lg: Imports) -> None:
    """LangGraph: a root graph has no parent: the run raises ParentCommand (langgraph.errors), whose only
    argument is the command."""
    builder = lg.StateGraph(State)
    builder.add_node("a", _to_parent(lg, "b"), destinations=("b",))
    builder.add_node("b", _log("b"))
    builder.add_edge(lg.START, "a")
    with pytest.raises(Exception) as caught:
        builder.compile().invoke({"log": [], "n": 0})
    assert type(caught.value).__name__ == "ParentCommand"
    (command,) = caught.value.args
    assert isinstance(command, lg.Command)
    assert (command.goto, command.update) == ("b", {"log": ["from sub"], "n": 5})
    if not lg.is_langgraph:
        assert str(caught.value) == (
            "node 'a' returned Command(graph=Command.PARENT) but its graph is not a subgraph: there is no "
            "parent graph to update or go to (goto='b')"
        )
