"""Where a subgraph says it is: the stream namespace of a ``checkpointer=True`` subgraph (its node, no task
id), the ``checkpoint_ns`` a node's config gives (its task's), and a subgraph task's ``state`` in the
``checkpoints`` and ``debug`` streams, as LangGraph's."""

from __future__ import annotations

import operator
import re
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


THREAD = {"configurable": {"thread_id": "1"}}


def where(state: State, config: RunnableConfig) -> dict[str, Any]:
    """A node that writes the checkpoint_ns of its config."""
    return {"items": [config["configurable"]["checkpoint_ns"]]}


def _sub(lg: Imports, checkpointer: Any, node: str = "leaf") -> Any:
    inner = lg.StateGraph(State)
    inner.add_node(node, where)
    inner.add_edge(lg.START, node)
    return inner.compile(checkpointer=checkpointer)


def _outer(lg: Imports, *nodes: tuple[str, Any]) -> Any:
    """START → each node in turn."""
    outer = lg.StateGraph(State)
    previous = lg.START
    for name, node in nodes:
        outer.add_node(name, node)
        outer.add_edge(previous, name)
        previous = name
    return outer.compile(checkpointer=lg.InMemorySaver())


def test_a_stateful_subgraphs_stream_namespace_has_no_task_id(lg: Imports) -> None:
    """LangGraph: ``("sub",)``; under a task-scoped subgraph ``("mid", "sub")``; a task-scoped subgraph
    under a stateful one keeps its task id (``("top", "inner:<id>")``)."""
    mid = lg.StateGraph(State)
    mid.add_node("sub", _sub(lg, True))
    mid.add_edge(lg.START, "sub")
    top = lg.StateGraph(State)
    top.add_node("inner", _sub(lg, None))
    top.add_edge(lg.START, "inner")
    graph = _outer(
        lg, ("sub", _sub(lg, True)), ("mid", mid.compile()), ("top", top.compile(checkpointer=True))
    )
    spaces = [ns for ns, _ in graph.stream({"items": []}, THREAD, subgraphs=True)]
    assert spaces[:2] == [("sub",), ()]
    assert spaces[2:5] == [("mid", "sub"), (spaces[3][0],), ()]
    assert re.fullmatch(r"mid:[^|:]+", spaces[3][0])
    assert (spaces[5][0], spaces[6:]) == ("top", [("top",), ()])
    assert re.fullmatch(r"inner:[^|:]+", spaces[5][1])


def test_a_nodes_config_gives_its_tasks_checkpoint_ns(lg: Imports) -> None:
    """LangGraph: ``node:<task id>`` at the root, ``sub:<task id>|leaf:<task id>`` in a subgraph (the
    subgraph's namespace, then the node's task), ``sub|leaf:<task id>`` in a stateful one."""
    graph = _outer(lg, ("root", where), ("sub", _sub(lg, None)), ("stateful", _sub(lg, True, "inner")))
    items = graph.invoke({"items": []}, THREAD)["items"]  # a subgraph's whole list comes back with its own
    root, sub, stateful = (
        sorted({i for i in items if i.split("|")[0].split(":")[0] == n}) for n in ("root", "sub", "stateful")
    )
    history = list(graph.get_state_history(THREAD))
    (root_task,) = [t for s in history for t in s.tasks if t.name == "root"]
    assert root == [f"root:{root_task.id}"]
    (sub_task,) = [t for s in history for t in s.tasks if t.name == "sub"]
    sub_ns = sub_task.state["configurable"]["checkpoint_ns"]
    inner_history = graph.get_state_history({"configurable": {"thread_id": "1", "checkpoint_ns": sub_ns}})
    (leaf,) = [t for s in inner_history for t in s.tasks if t.name == "leaf"]
    assert sub == [f"sub:{sub_task.id}|leaf:{leaf.id}"]
    assert len(stateful) == 1
    assert re.fullmatch(r"stateful\|inner:[^|:]+", stateful[0])


@pytest.mark.parametrize("mode", ["checkpoints", "debug"])
def test_checkpoint_events_give_a_subgraph_tasks_config(lg: Imports, mode: str) -> None:
    """LangGraph: the checkpoint about to run the subgraph node lists its task with ``state`` the config of
    its checkpoints; a plain node's task has none."""
    graph = _outer(lg, ("sub", _sub(lg, None)), ("plain", where))
    payloads = [e for e in graph.stream({"items": []}, THREAD, stream_mode=mode)]
    if mode == "debug":
        payloads = [e["payload"] for e in payloads if e["type"] == "checkpoint"]
    tasks = [t for p in payloads for t in p["tasks"] if t["name"] in ("sub", "plain")]
    assert [t["name"] for t in tasks] == ["sub", "plain"]
    sub, plain = tasks
    assert sub["state"] == {"configurable": {"thread_id": "1", "checkpoint_ns": f"sub:{sub['id']}"}}
    assert plain["state"] is None
