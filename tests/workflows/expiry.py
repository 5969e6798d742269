"""Workflows for the request-expiry tests (R13): a node that asks with a deadline, one whose workflow sets
``request_timeout_s``, and one that asks without a deadline."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, Send, StateGraph
from graphcore.engine.interrupts import interrupt


class Ask(TypedDict, total=False):
    timeout: float
    answer: Any


def ask(state: Ask) -> dict[str, Any]:
    """Asks with ``timeout_s`` = the input's ``timeout`` (None: the workflow's request_timeout_s, if any)."""
    return {"answer": interrupt("approve?", timeout_s=state.get("timeout"))}


def _graph() -> StateGraph:
    g = StateGraph(Ask)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    return g


timed_ask = _graph().compile(name="timed-ask")
"""``interrupt("approve?", timeout_s=<input timeout>)``; no workflow default."""

default_ask = _graph().compile(name="default-ask", config={"request_timeout_s": 0.5})
"""``interrupt("approve?")`` under the workflow's ``request_timeout_s=0.5``."""


class Review(TypedDict, total=False):
    items: list[str]
    approvals: Annotated[list[Any], operator.add]


def review_each(state: Review) -> list[Send]:
    return [Send("approve", item) for item in state["items"]]


def approve(item: str) -> dict[str, Any]:
    """Asks with a 30 s deadline, one request per item (parallel tasks of one step)."""
    return {"approvals": [[item, interrupt(f"approve {item}?", timeout_s=30)]]}


_r = StateGraph(Review)
_r.add_node("approve", approve)
_r.add_conditional_edges(START, review_each)
timed_review = _r.compile(name="timed-review")
"""Parallel requests with deadlines: answering one leaves the other's deadline as it was."""
