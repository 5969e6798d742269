"""Workflows whose subgraph node navigates the parent with ``Command(graph=Command.PARENT, ...)`` (a
new-user trial's program), and a root graph that tries to (no parent: the run fails with ParentCommand)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, Command, StateGraph


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _first(state: Log) -> dict[str, Any]:
    return {"log": ["s1"]}  # dropped: the subgraph's own writes do not reach the parent


def _to_other(state: Log) -> Command[Any]:
    return Command(graph=Command.PARENT, goto="other", update={"log": ["from sub"]})


_sub = StateGraph(Log)
_sub.add_node("first", _first)
_sub.add_node("sub_node", _to_other)
_sub.add_edge(START, "first")
_sub.add_edge("first", "sub_node")

_parent = StateGraph(Log)
_parent.add_node("sub", _sub.compile(), destinations=("other",))
_parent.add_node("other", lambda state: {"log": ["other"]})
_parent.add_edge(START, "sub")
parent = _parent.compile(name="parent-command")

_root = StateGraph(Log)
_root.add_node("a", _to_other, destinations=("other",))
_root.add_node("other", lambda state: {"log": ["other"]})
_root.add_edge(START, "a")
root = _root.compile(name="root-parent-command")
