"""graphq's forms of a state-API config: a :class:`RunConfig` or a mapping with the options ``thread_id``,
``checkpoint_ns`` and ``checkpoint_id`` at the top level address the same checkpoint as LangGraph's
``{"configurable": {...}}`` (graphcore/engine/snapshot.py)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import END, START, InMemorySaver, StateGraph, interrupt
from graphcore.engine.config import RunConfig


class Inner(TypedDict):
    out: str
    seen: Annotated[list[str], operator.add]


class Outer(TypedDict):
    out: str


def paused() -> tuple[Any, str]:
    """A graph whose subgraph node ``sub`` paused on thread "1", and that subgraph's namespace."""
    inner = StateGraph(Inner)
    inner.add_node("pre", lambda s: {"seen": ["pre"]})
    inner.add_node("ask", lambda s: {"out": interrupt("q")})
    inner.add_edge(START, "pre")
    inner.add_edge("pre", "ask")
    inner.add_edge("ask", END)
    outer = StateGraph(Outer)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    graph = outer.compile(checkpointer=InMemorySaver())
    graph.invoke({"out": ""}, {"configurable": {"thread_id": "1"}})
    (task,) = graph.get_state({"configurable": {"thread_id": "1"}}).tasks
    return graph, str(task.state["configurable"]["checkpoint_ns"])


@pytest.mark.parametrize("form", ["run_config", "top_level"])
def test_graphq_config_forms_address_a_subgraph_namespace(form: str) -> None:
    graph, ns = paused()
    config: Any = (
        RunConfig(thread_id="1", checkpoint_ns=ns)
        if form == "run_config"
        else {"thread_id": "1", "checkpoint_ns": ns}
    )
    snap = graph.get_state(config)
    assert (snap.values, snap.next) == ({"out": "", "seen": ["pre"]}, ("ask",))
    assert snap.config["configurable"]["checkpoint_ns"] == ns


def test_a_run_config_checkpoint_id_reads_that_checkpoint() -> None:
    graph, _ = paused()
    first = list(graph.get_state_history({"configurable": {"thread_id": "1"}}))[-1]
    checkpoint_id = first.config["configurable"]["checkpoint_id"]
    snap = graph.get_state(RunConfig(thread_id="1", checkpoint_id=checkpoint_id))
    assert (snap.config["configurable"]["checkpoint_id"], snap.metadata["step"]) == (checkpoint_id, -1)
