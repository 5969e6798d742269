"""A checkpoint_ns given to a root run (invoke/stream), as LangGraph treats it: dropped with checkpoint_id."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _graph(lg: Imports, runs: list[str]) -> Any:
    def a(state: State) -> dict[str, Any]:
        runs.append("a")
        return {"items": ["a"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_edge(lg.START, "a")
    return builder.compile(checkpointer=lg.InMemorySaver())


def test_a_root_run_checkpoints_in_the_root_namespace(lg: Imports) -> None:
    """LangGraph: invoke with a checkpoint_ns runs as without it and checkpoints in the root namespace."""
    graph = _graph(lg, [])
    out = graph.invoke({"items": ["in"]}, {"configurable": {"thread_id": "1", "checkpoint_ns": "zz"}})
    assert out == {"items": ["in", "a"]}
    snap = graph.get_state({"configurable": {"thread_id": "1"}})
    assert (snap.values, snap.config["configurable"]["checkpoint_ns"]) == ({"items": ["in", "a"]}, "")


def test_a_namespace_drops_the_checkpoint_id_with_it(lg: Imports) -> None:
    """LangGraph: with a checkpoint_ns, a root run's checkpoint_id is dropped too: invoke(None) goes on from
    the thread's latest checkpoint (nothing to run) instead of replaying from the one named."""
    runs: list[str] = []
    graph = _graph(lg, runs)
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"items": ["in"]}, config)
    first = list(graph.get_state_history(config))[-1].config["configurable"]["checkpoint_id"]
    graph.invoke({"items": ["2"]}, config)
    named = {"configurable": {"thread_id": "1", "checkpoint_ns": "zz", "checkpoint_id": first}}
    assert graph.invoke(None, named) == {"items": ["in", "a", "2", "a"]}
    assert runs == ["a", "a"]
    assert graph.invoke(None, {"configurable": {"thread_id": "1", "checkpoint_id": first}}) == {
        "items": ["in", "a"]
    }


def test_stream_with_a_namespace_streams_as_the_root(lg: Imports) -> None:
    """LangGraph: stream's namespaces start at the root whatever checkpoint_ns the config gives."""
    graph = _graph(lg, [])
    config = {"configurable": {"thread_id": "2", "checkpoint_ns": "zz"}}
    assert list(graph.stream({"items": []}, config, subgraphs=True)) == [((), {"a": {"items": ["a"]}})]


def test_a_subgraphs_snapshot_config_resumes_the_root_run(lg: Imports) -> None:
    """LangGraph: resuming with a paused subgraph's snapshot config (its namespace) resumes the root run."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [f"ask:{lg.interrupt('ok?')}"]}

    inner = lg.StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(lg.START, "ask")
    outer = lg.StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_edge(lg.START, "sub")
    graph = outer.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"items": []}, config)
    (task,) = graph.get_state(config).tasks
    assert task.state["configurable"]["checkpoint_ns"].startswith("sub:")
    assert graph.invoke(lg.Command(resume="yes"), task.state) == {"items": ["ask:yes"]}
    assert graph.get_state(config).next == ()


def _asking_subgraph(lg: Imports, runs: list[str], checkpointer: Any) -> Any:
    """START → sub, ``sub`` a subgraph (compiled with ``checkpointer``) of ``before`` → ``ask``."""

    def before(state: State) -> dict[str, Any]:
        runs.append("before")
        return {"items": ["before"]}

    def ask(state: State) -> dict[str, Any]:
        runs.append("ask")
        return {"items": [f"ask:{lg.interrupt('ok?')}"]}

    inner = lg.StateGraph(State)
    inner.add_node("before", before)
    inner.add_node("ask", ask)
    inner.add_edge(lg.START, "before")
    inner.add_edge("before", "ask")
    outer = lg.StateGraph(State)
    outer.add_node("sub", inner.compile(checkpointer=checkpointer))
    outer.add_edge(lg.START, "sub")
    return outer.compile(checkpointer=lg.InMemorySaver())


THREAD = {"configurable": {"thread_id": "1"}}


@pytest.mark.parametrize("checkpointer", [None, True])
def test_a_subgraphs_snapshot_config_has_its_checkpoint_map(lg: Imports, checkpointer: Any) -> None:
    """LangGraph: a subgraph snapshot's config (and its parent config, and its history's) names its
    namespace, its checkpoint and, in ``checkpoint_map``, the root's checkpoint and its own."""
    graph = _asking_subgraph(lg, [], checkpointer)
    graph.invoke({"items": []}, THREAD)
    snap = graph.get_state(THREAD, subgraphs=True)
    sub = snap.tasks[0].state
    conf = sub.config["configurable"]
    ns = conf["checkpoint_ns"]
    assert ns == ("sub" if checkpointer else f"sub:{snap.tasks[0].id}")
    root = snap.config["configurable"]["checkpoint_id"]
    assert conf["checkpoint_map"] == {"": root, ns: conf["checkpoint_id"]}
    parent = sub.parent_config["configurable"]
    assert parent["checkpoint_map"] == {"": root, ns: parent["checkpoint_id"]}
    assert [s.config for s in graph.get_state_history(sub.config)] == [sub.config]


@pytest.mark.parametrize(("checkpointer", "again"), [(None, ["before", "ask"]), (True, ["ask"])])
def test_invoke_none_with_a_subgraphs_snapshot_config_replays_it_and_asks_again(
    lg: Imports, checkpointer: Any, again: list[str]
) -> None:
    """LangGraph: invoke(None, a paused subgraph's snapshot config) replays from the root checkpoint of its
    map: the subgraph asks again under a new interrupt id (a task-scoped one runs from its start, a
    ``checkpointer=True`` one from its checkpoint), and the answer to that question ends the run."""
    runs: list[str] = []
    graph = _asking_subgraph(lg, runs, checkpointer)
    (first,) = graph.invoke({"items": []}, THREAD)["__interrupt__"]
    sub = graph.get_state(THREAD, subgraphs=True).tasks[0].state
    out = graph.invoke(None, sub.config)
    (asked,) = out["__interrupt__"]
    assert (out["items"], asked.value, asked.id != first.id) == ([], "ok?", True)
    assert runs == ["before", "ask", *again]
    assert graph.get_state(THREAD).interrupts == (asked,)
    assert graph.invoke(lg.Command(resume="yes"), THREAD) == {"items": ["before", "ask:yes"]}


def test_an_answer_with_a_subgraphs_snapshot_config_resumes_the_run(lg: Imports) -> None:
    """LangGraph: Command(resume=...) with the paused subgraph's snapshot config (its checkpoint_map naming
    the latest root checkpoint) answers the open question: nothing runs again but the node that asked."""
    runs: list[str] = []
    graph = _asking_subgraph(lg, runs, None)
    graph.invoke({"items": []}, THREAD)
    sub = graph.get_state(THREAD, subgraphs=True).tasks[0].state
    assert graph.invoke(lg.Command(resume="yes"), sub.config) == {"items": ["before", "ask:yes"]}
    assert runs == ["before", "ask", "ask"]


def test_get_state_with_subgraphs_shows_a_graph_paused_inside_a_node(lg: Imports) -> None:
    """LangGraph: a node that invokes a compiled graph (a global or closure name in its body) has that
    graph's snapshot in its task's ``state`` with ``subgraphs=True``, and its config without."""
    inner = _inner_asker(lg)

    def node(state: State) -> dict[str, Any]:
        return {"items": inner.invoke({"items": ["n"]})["items"]}

    def plain(state: State) -> dict[str, Any]:
        return {"items": ["plain"]}

    outer = lg.StateGraph(State)
    outer.add_node("node", node)
    outer.add_node("plain", plain)
    outer.add_edge(lg.START, "node")
    outer.add_edge(lg.START, "plain")
    graph = outer.compile(checkpointer=lg.InMemorySaver())
    (asked,) = graph.invoke({"items": []}, THREAD)["__interrupt__"]
    snap = graph.get_state(THREAD, subgraphs=True)
    by_name = {t.name: t for t in snap.tasks}
    sub = by_name["node"].state
    assert (sub.values, sub.next, sub.interrupts) == ({"items": ["n", "before"]}, ("ask",), (asked,))
    assert sub.config["configurable"]["checkpoint_ns"] == f"node:{by_name['node'].id}"
    assert by_name["plain"].state is None
    (task,) = [t for t in graph.get_state(THREAD).tasks if t.name == "node"]
    assert task.state == {"configurable": {"thread_id": "1", "checkpoint_ns": f"node:{task.id}"}}


def _inner_asker(lg: Imports) -> Any:
    """A graph of ``before`` → ``ask`` (``interrupt('ok?')``)."""
    inner = lg.StateGraph(State)
    inner.add_node("before", lambda s: {"items": ["before"]})
    inner.add_node("ask", lambda s: {"items": [f"ask:{lg.interrupt('ok?')}"]})
    inner.add_edge(lg.START, "before")
    inner.add_edge("before", "ask")
    return inner.compile()
