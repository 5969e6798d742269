"""A node that passes its own config to a graph it invokes (``inner.invoke(x, config)``, common LangGraph
code): the inner graph runs as the node's child, as without the config, and the parent's thread is kept."""

from __future__ import annotations

import operator
import re
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def outer(lg: Imports, pass_config: bool, ask: bool = False) -> Any:
    def i(state: State) -> dict[str, Any]:
        return {"items": [f"i:{lg.interrupt('q')}" if ask else "i"]}

    inner_builder = lg.StateGraph(State)
    inner_builder.add_node("i", i)
    inner_builder.add_edge(lg.START, "i")
    inner = inner_builder.compile()

    def node(state: State, config) -> dict[str, Any]:  # type: ignore[no-untyped-def]  # LangGraph reads the name
        out = inner.invoke({"items": ["x"]}, config) if pass_config else inner.invoke({"items": ["x"]})
        return {"items": out["items"]}

    builder = lg.StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(lg.START, "n")
    return builder.compile(checkpointer=lg.InMemorySaver())


def test_a_node_passing_its_config_runs_the_inner_graph_as_its_child(lg: Imports) -> None:
    """LangGraph: the inner graph's result is the same, and the parent's thread holds the same checkpoints
    (values, source, root namespace), as when the node passes no config."""
    config = {"configurable": {"thread_id": "1"}}
    seen = []
    for pass_config in (False, True):
        graph = outer(lg, pass_config)
        assert graph.invoke({"items": ["in"]}, config) == {"items": ["in", "x", "i"]}
        history = graph.get_state_history(config)
        seen.append(
            [(h.values, h.metadata["source"], h.config["configurable"]["checkpoint_ns"]) for h in history]
        )
    assert seen[1] == seen[0]
    assert seen[0][0] == ({"items": ["in", "x", "i"]}, "loop", "")


def test_an_inner_question_asked_under_the_nodes_config_pauses_the_parent(lg: Imports) -> None:
    graph = outer(lg, True, ask=True)
    config = {"configurable": {"thread_id": "1"}}
    paused = graph.invoke({"items": ["in"]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["q"]
    assert graph.invoke(lg.Command(resume="yes"), config) == {"items": ["in", "x", "i:yes"]}


def test_a_subgraphs_nodes_and_checkpoints_inherit_the_runs_metadata(lg: Imports) -> None:
    """LangGraph: a subgraph's node sees the run's metadata, ``thread_id`` and ``checkpoint_ns`` (the ``sub``
    task's namespace) in ``config["metadata"]``, and the subgraph's checkpoints carry the run's metadata."""
    seen: list[dict[str, Any]] = []

    def i(state: State) -> dict[str, Any]:
        seen.append(dict(lg.get_config()["metadata"]))
        return {"items": ["i"]}

    inner = lg.StateGraph(State)
    inner.add_node("i", i)
    inner.add_edge(lg.START, "i")
    builder = lg.StateGraph(State)
    builder.add_node("sub", inner.compile())
    builder.add_edge(lg.START, "sub")
    saver = lg.InMemorySaver()
    builder.compile(checkpointer=saver).invoke(
        {"items": []}, {"configurable": {"thread_id": "1"}, "metadata": {"u": 1}}
    )
    [metadata] = seen
    sub_ns = metadata["langgraph_checkpoint_ns"].split("|")[0]
    assert re.fullmatch(r"sub:[0-9a-f-]+", sub_ns)
    keys = ("u", "thread_id", "checkpoint_ns")
    assert {k: metadata.get(k) for k in keys} == {"u": 1, "thread_id": "1", "checkpoint_ns": sub_ns}
    stored = [c.metadata for c in saver.list(None) if c.config["configurable"]["checkpoint_ns"] == sub_ns]
    assert [(m["source"], m.get("u")) for m in stored] == [("loop", 1), ("loop", 1), ("input", 1)]
