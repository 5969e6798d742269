"""A subgraph's checkpoint events (``checkpoints`` and ``debug`` streams with ``subgraphs=True``) as
LangGraph's: their configs carry ``checkpoint_map`` and their metadata ``parents``, so
``invoke(None, event_config)`` goes back to that checkpoint's parent and runs again."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]


THREAD = {"configurable": {"thread_id": "1"}}


def _graph(lg: Imports, runs: list[str], checkpointer: Any = None) -> Any:
    """START → plan → writer (a subgraph of sub_a → sub_b, compiled with ``checkpointer``) → polish."""

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            runs.append(name)
            return {"steps": [name]}

        return run

    inner = lg.StateGraph(State)
    inner.add_node("sub_a", node("sub_a"))
    inner.add_node("sub_b", node("sub_b"))
    inner.add_edge(lg.START, "sub_a")
    inner.add_edge("sub_a", "sub_b")
    outer = lg.StateGraph(State)
    outer.add_node("plan", node("plan"))
    outer.add_node("writer", inner.compile(checkpointer=checkpointer))
    outer.add_node("polish", node("polish"))
    outer.add_edge(lg.START, "plan")
    outer.add_edge("plan", "writer")
    outer.add_edge("writer", "polish")
    return outer.compile(checkpointer=lg.InMemorySaver())


def _checkpoint_events(graph: Any, mode: str) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """``(namespace, checkpoint payload)`` of a ``subgraphs=True`` stream of ``mode`` on :data:`THREAD`."""
    chunks = list(graph.stream({"topic": "owls"}, THREAD, stream_mode=mode, subgraphs=True))
    if mode == "debug":
        return [(ns, ev["payload"]) for ns, ev in chunks if ev["type"] == "checkpoint"]
    return chunks


def _ids(config: dict[str, Any] | None) -> str | None:
    return None if config is None else config["configurable"]["checkpoint_id"]


@pytest.mark.parametrize("checkpointer", [None, True])
@pytest.mark.parametrize("mode", ["checkpoints", "debug"])
def test_a_subgraphs_checkpoint_event_names_its_parents(lg: Imports, mode: str, checkpointer: Any) -> None:
    """LangGraph: a subgraph's checkpoint event has ``checkpoint_map`` (the root checkpoint its task ran
    from, and its own) in its config and parent config, and that root checkpoint in metadata ``parents``;
    a root event has neither."""
    graph = _graph(lg, [], checkpointer)
    events = _checkpoint_events(graph, mode)
    roots = [e for ns, e in events if not ns]
    subs = [(ns, e) for ns, e in events if ns]
    (writing,) = [e for e in roots if e["next"] == ["writer"]]
    root = _ids(writing["config"])
    (ns,) = {n for n, _ in subs}
    sub_ns = "writer" if checkpointer else f"writer:{writing['tasks'][0]['id']}"
    assert ns == (sub_ns,)
    assert [e["metadata"]["parents"] for e in roots] == [{}] * 5
    assert ["checkpoint_map" in e["config"]["configurable"] for e in roots] == [False] * 5
    assert [(e["metadata"]["step"], e["metadata"]["parents"]) for _, e in subs] == [
        (-1, {"": root}),
        (0, {"": root}),
        (1, {"": root}),
        (2, {"": root}),
    ]
    for _, e in subs:
        own = _ids(e["config"])
        assert e["config"] == {
            "configurable": {
                "thread_id": "1",
                "checkpoint_ns": sub_ns,
                "checkpoint_id": own,
                "checkpoint_map": {"": root, sub_ns: own},
            }
        }
    parents = [e["parent_config"] for _, e in subs]
    assert parents[0] is None
    assert [p["configurable"]["checkpoint_map"] for p in parents[1:]] == [
        {"": root, sub_ns: _ids(e["config"])} for _, e in subs[:-1]
    ]


@pytest.mark.parametrize("mode", ["checkpoints", "debug"])
def test_invoke_none_with_a_streamed_subgraph_config_forks_the_run_there(lg: Imports, mode: str) -> None:
    """LangGraph: invoke(None, a streamed subgraph checkpoint's config) forks the thread at the root
    checkpoint its task ran from (a new ``fork`` checkpoint) and runs from there again, instead of going on
    from the thread's latest (ended) checkpoint."""
    runs: list[str] = []
    graph = _graph(lg, runs)
    events = _checkpoint_events(graph, mode)
    (sub_a_next,) = [e for ns, e in events if ns and e["next"] == ["sub_a"]]
    out = graph.invoke(None, sub_a_next["config"])
    assert out == {"topic": "owls", "steps": ["plan", "plan", "sub_a", "sub_b", "polish"]}
    assert runs == ["plan", "sub_a", "sub_b", "polish", "sub_a", "sub_b", "polish"]
    history = [
        (s.metadata["step"], s.metadata["source"], s.next, s.values["steps"])
        for s in graph.get_state_history(THREAD)
    ][:4]
    assert history == [
        (4, "loop", (), ["plan", "plan", "sub_a", "sub_b", "polish"]),
        (3, "loop", ("polish",), ["plan", "plan", "sub_a", "sub_b"]),
        (2, "fork", ("writer",), ["plan"]),
        (3, "loop", (), ["plan", "plan", "sub_a", "sub_b", "polish"]),
    ]


def test_a_subgraphs_history_from_a_streamed_config_names_its_parents(lg: Imports) -> None:
    """LangGraph: get_state_history(a streamed subgraph config) lists that checkpoint, with metadata
    ``parents`` and the ``checkpoint_map`` of its config and parent config."""
    graph = _graph(lg, [])
    events = _checkpoint_events(graph, "checkpoints")
    (writing,) = [e for ns, e in events if not ns and e["next"] == ["writer"]]
    root = _ids(writing["config"])
    (streamed,) = [e for ns, e in events if ns and e["next"] == ["sub_a"]]
    (snap,) = graph.get_state_history(streamed["config"])
    ns = streamed["config"]["configurable"]["checkpoint_ns"]
    assert (snap.metadata["parents"], snap.next) == ({"": root}, ("sub_a",))
    assert snap.config["configurable"]["checkpoint_map"] == {"": root, ns: _ids(streamed["config"])}
    assert snap.parent_config["configurable"]["checkpoint_map"] == {
        "": root,
        ns: _ids(streamed["parent_config"]),
    }


@pytest.mark.parametrize("checkpointer", [None, True])
def test_a_subgraphs_history_from_its_task_state_names_its_parents(lg: Imports, checkpointer: Any) -> None:
    """LangGraph: get_state_history(a task's ``state`` config: thread and namespace, no ``checkpoint_map``)
    lists each subgraph checkpoint with the parents it was written under: the root checkpoint its task ran
    from (per turn, for a ``checkpointer=True`` subgraph that keeps its namespace across turns)."""
    graph = _graph(lg, [], checkpointer)
    graph.invoke({"topic": "owls"}, THREAD)
    graph.invoke({"topic": "cats"}, THREAD)
    turns = [s for s in graph.get_state_history(THREAD) if s.next == ("writer",)]
    roots = [s.config["configurable"]["checkpoint_id"] for s in turns]
    (task,) = turns[0].tasks
    history = list(graph.get_state_history(task.state))
    steps, written_under = (
        ([6, 5, 4, 3, 2, 1, 0, -1], roots[0:1] * 4 + roots[1:2] * 4)
        if checkpointer
        else ([2, 1, 0, -1], roots[0:1] * 4)
    )
    assert [s.metadata["step"] for s in history] == steps
    assert [s.metadata["parents"] for s in history] == [{"": root} for root in written_under]
    assert [s.config["configurable"]["checkpoint_map"][""] for s in history] == written_under


def test_a_nested_subgraphs_events_name_every_graph_above_it(lg: Imports) -> None:
    """LangGraph: a subgraph two levels down names the root's checkpoint and its parent subgraph's (the one
    its task ran from) in ``parents``, and with its own in ``checkpoint_map``."""

    def chain(name: str, child: Any = None) -> Any:
        builder = lg.StateGraph(State)
        builder.add_node("a", child if child is not None else lambda s: {"steps": [name]})
        builder.add_edge(lg.START, "a")
        return builder

    top = chain("top", chain("mid", chain("in").compile()).compile()).compile(checkpointer=lg.InMemorySaver())
    events = list(top.stream({"steps": []}, THREAD, stream_mode="checkpoints", subgraphs=True))
    (root,) = [
        _ids(e["config"]) for ns, e in events if not ns and e["next"] == ["a"] and e["metadata"]["step"] == 0
    ]
    (mid_ns,) = {ns[0] for ns, _ in events if ns}
    (mid,) = [_ids(e["config"]) for ns, e in events if ns == (mid_ns,) and e["metadata"]["step"] == 0]
    deepest = [e for ns, e in events if len(ns) == 2]
    assert [e["metadata"]["parents"] for e in deepest] == [{"": root, mid_ns: mid}] * 3
    inner_ns = deepest[0]["config"]["configurable"]["checkpoint_ns"]
    assert inner_ns.startswith(f"{mid_ns}|a:")
    assert [e["config"]["configurable"]["checkpoint_map"] for e in deepest] == [
        {"": root, mid_ns: mid, inner_ns: _ids(e["config"])} for e in deepest
    ]
