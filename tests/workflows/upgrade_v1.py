"""Workflows of the code that runs (version 1), for the upgrade check (``graphq workflows check``).

``upgrade``: ``start`` writes every channel, ``review`` asks a human (``interrupt``), ``finish`` ends; a run
paused at ``review`` has a checkpoint holding ``count``, ``items`` and ``notes``, and an open request of
``review``. The ``upgrade_v2_*`` modules change one thing each. Also: ``upgrade_stops`` (a breakpoint before
``review``), ``upgrade_nested`` (pauses inside its subgraph node ``inner``), ``upgrade_fan`` (pauses in a
Send's target ``each``) and ``upgrade_noted`` (stores a pydantic model instance)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from graphcore import END, START, Send, StateGraph
from graphcore.engine.interrupts import interrupt


class State(TypedDict, total=False):
    count: int
    items: Annotated[list[str], operator.add]
    notes: str


def start(state: Any) -> dict[str, Any]:
    return {"count": 1, "items": ["a"], "notes": "first"}


def review(state: Any) -> dict[str, Any]:
    return {"items": [interrupt("approve?")]}


def finish(state: Any) -> dict[str, Any]:
    return {"count": state["count"] + 1}


def build(schema: type[Any] = State, review_as: str = "review") -> StateGraph:
    """The graph of version 1, with another state schema or another name for ``review`` (the v2 modules)."""
    g = StateGraph(schema)
    g.add_node("start", start)
    g.add_node(review_as, review)
    g.add_node("finish", finish)
    g.add_edge(START, "start")
    g.add_edge("start", review_as)
    g.add_edge(review_as, "finish")
    g.add_edge("finish", END)
    return g


graph = build().compile(name="upgrade")


def inner_ask(state: Any) -> dict[str, Any]:
    return {"notes": interrupt("inner?")}


def nested(inner: Any) -> StateGraph:
    """Workflow ``upgrade_nested``: ``start``, then node ``inner`` (a subgraph in version 1)."""
    g = StateGraph(State)
    g.add_node("start", start)
    g.add_node("inner", inner)
    g.add_edge(START, "start")
    g.add_edge("start", "inner")
    return g


_inner = StateGraph(State)
_inner.add_node("inner_ask", inner_ask)
_inner.add_edge(START, "inner_ask")
nested_graph = nested(_inner.compile(name="upgrade_inner")).compile(name="upgrade_nested")

stops = build().compile(name="upgrade_stops", interrupt_before=["review"])


class Note(BaseModel):
    text: str


class Noted(TypedDict, total=False):
    note: Note


def write_note(state: Any) -> dict[str, Any]:
    return {"note": Note(text="hi")}


def wait(state: Any) -> dict[str, Any]:
    interrupt("ok?")
    return {}


_noted = StateGraph(Noted)
_noted.add_node("write_note", write_note)
_noted.add_node("wait", wait)
_noted.add_edge(START, "write_note")
_noted.add_edge("write_note", "wait")
noted = _noted.compile(name="upgrade_noted")


def fanned(each_as: str = "each") -> StateGraph:
    """Workflow ``upgrade_fan``: START sends to node ``each`` (another name in the v2 modules), which asks."""

    def fan_out(state: Any) -> list[Send]:
        return [Send(each_as, {"notes": "x"})]

    g = StateGraph(State)
    g.add_node(each_as, inner_ask)
    g.add_conditional_edges(START, fan_out)
    return g


fan = fanned().compile(name="upgrade_fan")
