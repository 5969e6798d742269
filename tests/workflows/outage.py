"""A multi-step workflow for Redis-outage tests: ``tick`` runs ``steps`` times, ``sleep_s`` each, and
appends its count to ``trail`` (each committed step shows once)."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

from graphcore import END, START, StateGraph


class Ticks(TypedDict, total=False):
    steps: int
    sleep_s: float
    trail: Annotated[list[int], operator.add]


def tick(state: Ticks) -> dict[str, Any]:
    time.sleep(state["sleep_s"])
    return {"trail": [len(state.get("trail", [])) + 1]}


def more(state: Ticks) -> str:
    return "tick" if len(state["trail"]) < state["steps"] else END


_g = StateGraph(Ticks)
_g.add_node("tick", tick)
_g.add_edge(START, "tick")
_g.add_conditional_edges("tick", more, ["tick", END])
ticking = _g.compile(name="ticking", config={"max_super_steps": 1000})
