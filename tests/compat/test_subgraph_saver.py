"""A subgraph compiled with a saver of its own (``inner.compile(checkpointer=InMemorySaver())``) used as a
node: inside its parent's run it checkpoints in the parent's thread under its task's namespace, as LangGraph
lends a subgraph its parent's saver, so answers reach its questions."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _graphs(lg: Imports, runs: list[str]) -> tuple[Any, Any]:
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
    sub = inner.compile(checkpointer=lg.InMemorySaver())
    outer = lg.StateGraph(State)
    outer.add_node("sub", sub)
    outer.add_edge(lg.START, "sub")
    return outer.compile(checkpointer=lg.InMemorySaver()), sub


def test_an_answer_by_id_resumes_a_subgraph_with_its_own_saver(lg: Imports) -> None:
    """LangGraph: the answer keyed by the interrupt's id reaches it; the subgraph goes on at the node that
    asked (``before`` does not run again) and the run ends."""
    runs: list[str] = []
    graph, _ = _graphs(lg, runs)
    config = {"configurable": {"thread_id": "1"}}
    (asked,) = graph.invoke({"items": []}, config)["__interrupt__"]
    assert graph.invoke(lg.Command(resume={asked.id: "yes"}), config) == {"items": ["before", "ask:yes"]}
    assert runs == ["before", "ask", "ask"]
    assert graph.get_state(config).next == ()


def test_a_paused_subgraph_with_its_own_saver_is_in_the_parents_thread(lg: Imports) -> None:
    """LangGraph: the paused subgraph's snapshot is read from the parent's thread (its namespace
    ``sub:<task id>``); its own saver holds nothing for that thread."""
    graph, sub = _graphs(lg, [])
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"items": []}, config)
    (task,) = graph.get_state(config, subgraphs=True).tasks
    assert (task.state.values, task.state.next) == ({"items": ["before"]}, ("ask",))
    assert task.state.config["configurable"]["checkpoint_ns"] == f"sub:{task.id}"
    assert sub.get_state(config).values == {}


def test_a_graph_with_its_own_saver_given_a_thread_in_a_node_keeps_it_there(lg: Imports) -> None:
    """LangGraph: invoked in a node with a thread of its own, the graph checkpoints in its own saver."""
    _, sub = _graphs(lg, [])

    def call(state: State) -> dict[str, Any]:
        out = sub.invoke({"items": ["x"]}, {"configurable": {"thread_id": "other"}})
        return {"items": [f"asked:{[i.value for i in out['__interrupt__']]}"]}

    outer = lg.StateGraph(State)
    outer.add_node("call", call)
    outer.add_edge(lg.START, "call")
    parent = outer.compile(checkpointer=lg.InMemorySaver())
    assert parent.invoke({"items": []}, {"configurable": {"thread_id": "1"}}) == {"items": ["asked:['ok?']"]}
    assert sub.get_state({"configurable": {"thread_id": "other"}}).values == {"items": ["x", "before"]}
