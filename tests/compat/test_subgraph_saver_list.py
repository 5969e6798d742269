"""A subgraph's checkpoints read through the saver (``saver.list(config)``, ``saver.get_tuple(config)``) as
LangGraph's: metadata ``parents`` names the root checkpoint its task ran from (``{"": <id>}``; a root
checkpoint's is ``{}``), and the config is ``{"configurable": {"thread_id", "checkpoint_ns",
"checkpoint_id"}}`` (LangGraph's saver gives no ``checkpoint_map``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


def _graph(lg: Imports) -> tuple[Any, Any]:
    """START → plan → writer (a subgraph of sub_a → sub_b), with its saver."""
    inner = lg.StateGraph(State)
    inner.add_node("sub_a", lambda s: {"steps": ["sub_a"]})
    inner.add_node("sub_b", lambda s: {"steps": ["sub_b"]})
    inner.add_edge(lg.START, "sub_a")
    inner.add_edge("sub_a", "sub_b")
    outer = lg.StateGraph(State)
    outer.add_node("plan", lambda s: {"steps": ["plan"]})
    outer.add_node("writer", inner.compile())
    outer.add_edge(lg.START, "plan")
    outer.add_edge("plan", "writer")
    saver = lg.InMemorySaver()
    return outer.compile(checkpointer=saver), saver


THREAD = {"configurable": {"thread_id": "t"}}


def _ids(saver: Any) -> tuple[list[Any], list[Any], str]:
    """The thread's root and subgraph tuples as listed (each newest first) and the subgraph's namespace."""
    listed = list(saver.list(THREAD))
    roots = [t for t in listed if not t.config["configurable"]["checkpoint_ns"]]
    subs = [t for t in listed if t.config["configurable"]["checkpoint_ns"]]
    return roots, subs, subs[0].config["configurable"]["checkpoint_ns"]


def test_listed_subgraph_checkpoints_name_the_root_checkpoint_in_parents(lg: Imports) -> None:
    graph, saver = _graph(lg)
    graph.invoke({"steps": []}, THREAD)
    roots, subs, ns = _ids(saver)
    writing = roots[1].config["configurable"]["checkpoint_id"]  # step 1: the writer's task runs from it
    assert [(t.metadata["step"], t.metadata["parents"]) for t in roots] == [
        (2, {}),
        (1, {}),
        (0, {}),
        (-1, {}),
    ]
    assert [(t.metadata["step"], t.metadata["source"], t.metadata["parents"]) for t in subs] == [
        (2, "loop", {"": writing}),
        (1, "loop", {"": writing}),
        (0, "loop", {"": writing}),
        (-1, "input", {"": writing}),
    ]
    ids = [t.checkpoint["id"] for t in subs]
    assert [t.config for t in subs] == [
        {"configurable": {"thread_id": "t", "checkpoint_ns": ns, "checkpoint_id": i}} for i in ids
    ]
    assert [t.parent_config for t in subs] == [
        {"configurable": {"thread_id": "t", "checkpoint_ns": ns, "checkpoint_id": i}} for i in ids[1:]
    ] + [None]


def test_get_tuple_of_a_subgraph_checkpoint_names_the_root_checkpoint(lg: Imports) -> None:
    graph, saver = _graph(lg)
    graph.invoke({"steps": []}, THREAD)
    roots, subs, ns = _ids(saver)
    writing = roots[1].config["configurable"]["checkpoint_id"]
    for named in (subs[2].config, {"configurable": {"thread_id": "t", "checkpoint_ns": ns}}):
        found = saver.get_tuple(named)
        wanted = subs[2] if "checkpoint_id" in named["configurable"] else subs[0]
        assert (found.config, found.metadata["parents"]) == (wanted.config, {"": writing})
    assert saver.get_tuple(THREAD).metadata["parents"] == {}


def test_a_listed_subgraph_config_forks_only_through_get_state(lg: Imports) -> None:
    """LangGraph: ``invoke(None, <listed config>)`` returns the thread's state and writes nothing (no
    ``checkpoint_map``); ``get_state(<listed config>).config`` has the ``checkpoint_map`` with which
    ``invoke(None, config)`` forks the root checkpoint the subgraph ran from."""
    graph, saver = _graph(lg)
    graph.invoke({"steps": []}, THREAD)
    _, subs, ns = _ids(saver)
    at_sub_b = subs[1]  # the subgraph's step 1: sub_b next
    final = {"steps": ["plan", "plan", "sub_a", "sub_b"]}
    assert graph.invoke(None, at_sub_b.config) == final
    assert len(list(saver.list(THREAD))) == 8
    config = graph.get_state(at_sub_b.config).config
    assert (config["configurable"]["checkpoint_map"], graph.get_state(at_sub_b.config).next) == (
        {"": at_sub_b.metadata["parents"][""], ns: at_sub_b.checkpoint["id"]},
        ("sub_b",),
    )
    assert graph.invoke(None, config) == final
    history = [(s.metadata["step"], s.metadata["source"], s.next) for s in graph.get_state_history(THREAD)]
    assert history == [
        (3, "loop", ()),
        (2, "fork", ("writer",)),
        (2, "loop", ()),
        (1, "loop", ("writer",)),
        (0, "loop", ("plan",)),
        (-1, "input", ("__start__",)),
    ]


def test_put_of_a_listed_subgraph_checkpoint_keeps_its_parents(lg: Imports) -> None:
    """LangGraph: a tuple copied to another saver with ``put`` reads back with the ``parents`` it had."""
    graph, saver = _graph(lg)
    graph.invoke({"steps": []}, THREAD)
    roots, subs, ns = _ids(saver)
    copy = lg.InMemorySaver()
    to = {"configurable": {"thread_id": "copy", "checkpoint_ns": ns}}
    stored = copy.put(to, subs[1].checkpoint, dict(subs[1].metadata), {})
    assert copy.get_tuple(stored).metadata["parents"] == {
        "": roots[1].config["configurable"]["checkpoint_id"]
    }
