"""A checkpoint_ns given to a root run (invoke/stream), as LangGraph treats it: dropped with checkpoint_id."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

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
