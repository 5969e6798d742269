"""An input ``Command(goto=...)`` (LangGraph's test_pregel
``test_command_goto_with_static_breakpoints``): on a new thread its goto runs beside the entry nodes, as
LangGraph's. Each case runs with LangGraph's imports and with graphq's."""

from __future__ import annotations

from typing import Annotated, TypedDict

from tests.compat.conftest import Imports


def _joined(a: str, b: str) -> str:
    return ", ".join([x for x in [a, b] if x])


class State(TypedDict):
    foo: Annotated[str, _joined]


def test_an_input_commands_goto_runs_beside_the_entry_nodes(lg: Imports) -> None:
    """LangGraph (as in test_command_goto_with_static_breakpoints): ``invoke(Command(goto="node2"))`` on a
    new thread runs ``node2`` beside the entry node ``node1``, then ``node2`` again after ``node1``."""
    builder = lg.StateGraph(State)
    builder.add_node("node1", lambda s: {"foo": "node-1"})
    builder.add_node("node2", lambda s: {"foo": "node-2"})
    builder.add_edge(lg.START, "node1")
    builder.add_edge("node1", "node2")
    graph, config = builder.compile(checkpointer=lg.InMemorySaver()), {"configurable": {"thread_id": "1"}}
    assert graph.invoke(lg.Command(goto="node2"), config) == {"foo": "node-1, node-2, node-2"}
    assert [s.next for s in graph.get_state_history(config)] == [
        (),
        ("node2",),
        ("node1", "node2"),
        ("__start__",),
    ]
