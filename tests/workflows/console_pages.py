"""Workflows of the console's run, thread and request pages (tests/test_console_pages.py and
tests/test_console_browser.py).

- ``gated``: ``tick`` runs until ``ticks`` has ``{"gates": N}`` entries (default 3), one super-step each;
  the n-th waits until the file ``$GRAPHQ_TEST_DIR/go-<n>`` exists (polled every 20 ms), so a test decides
  when each super-step ends. Without ``GRAPHQ_TEST_DIR`` it does not wait.
- ``approval``: ``ask`` asks for a decision (``interrupt`` with a :class:`Decision` response schema),
  ``finish`` records it in ``outcome``.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from graphcore import END, START, StateGraph
from graphcore.engine.interrupts import interrupt

_POLL_S = 0.02


class Gated(TypedDict, total=False):
    gates: int
    label: str
    ticks: Annotated[list[int], operator.add]


def tick(state: Gated) -> dict[str, Any]:
    n = len(state.get("ticks", [])) + 1
    where = os.environ.get("GRAPHQ_TEST_DIR")
    while where is not None and not (Path(where) / f"go-{n}").exists():
        time.sleep(_POLL_S)
    return {"ticks": [n]}


def more(state: Gated) -> str:
    return "tick" if len(state["ticks"]) < state.get("gates", 3) else END


_g = StateGraph(Gated)
_g.add_node("tick", tick)
_g.add_edge(START, "tick")
_g.add_conditional_edges("tick", more, ["tick", END])
gated = _g.compile(name="gated")


class Decision(BaseModel):
    ok: bool
    note: str = ""


class Approval(TypedDict, total=False):
    amount: int
    outcome: str


def ask(state: Approval) -> dict[str, Any]:
    decision = interrupt({"approve": state["amount"]}, response_schema=Decision)
    return {"outcome": f"ok={decision.ok} note={decision.note}"}


def finish(state: Approval) -> dict[str, Any]:
    return {"outcome": state["outcome"] + " (done)"}


_a = StateGraph(Approval)
_a.add_node("ask", ask)
_a.add_node("finish", finish)
_a.add_edge(START, "ask")
_a.add_edge("ask", "finish")
approval = _a.compile(name="approval")
