"""Workflows for the request-expiry tests (R13): a node that asks with a deadline, one whose workflow sets
``request_timeout_s``, and one that asks without a deadline."""

from __future__ import annotations

from typing import Any, TypedDict

from graphcore import START, StateGraph
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
