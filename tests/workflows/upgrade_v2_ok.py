"""Workflow ``upgrade``, a compatible new version: a new node ``audit`` after ``review`` and a new optional
channel ``score``."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import END, START, StateGraph
from tests.workflows.upgrade_v1 import finish, review, start


class State(TypedDict, total=False):
    count: int
    items: Annotated[list[str], operator.add]
    notes: str
    score: float


def audit(state: Any) -> dict[str, Any]:
    return {"score": 1.0}


_g = StateGraph(State)
_g.add_node("start", start)
_g.add_node("review", review)
_g.add_node("audit", audit)
_g.add_node("finish", finish)
_g.add_edge(START, "start")
_g.add_edge("start", "review")
_g.add_edge("review", "audit")
_g.add_edge("audit", "finish")
_g.add_edge("finish", END)
graph = _g.compile(name="upgrade")
