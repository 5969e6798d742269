"""A node that passes its own config to a graph it invokes (``inner.invoke(x, config)``, common LangGraph
code): the inner graph runs as the node's child, as without the config, and the parent's thread is kept."""

from __future__ import annotations

import operator
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
