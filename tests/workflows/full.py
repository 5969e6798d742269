"""Workflows for the tests of a full Redis (``maxmemory`` reached: every write refused with OOM).

``gated``: ``tick`` runs ``steps`` times and appends its count to ``trail`` (each committed step shows once);
each tick leaves a line in ``$GRAPHQ_TEST_DIR/<name>.log``; the tick of step ``gate`` first writes
``$GRAPHQ_TEST_DIR/<name>.at-gate``, then waits for ``$GRAPHQ_TEST_DIR/go`` before it returns.

``failing``: one node that raises ``ValueError("boom")``.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import END, START, StateGraph


class Gated(TypedDict, total=False):
    name: str
    steps: int
    gate: int
    trail: Annotated[list[int], operator.add]


def tick(state: Gated) -> dict[str, Any]:
    here = Path(os.environ["GRAPHQ_TEST_DIR"])
    count = len(state.get("trail", [])) + 1
    with (here / f"{state['name']}.log").open("a") as out:
        out.write(f"{count}\n")
    if count == state["gate"]:
        (here / f"{state['name']}.at-gate").touch()
        while not (here / "go").exists():
            time.sleep(0.02)
    return {"trail": [count]}


def more(state: Gated) -> str:
    return "tick" if len(state["trail"]) < state["steps"] else END


_g = StateGraph(Gated)
_g.add_node("tick", tick)
_g.add_edge(START, "tick")
_g.add_conditional_edges("tick", more, ["tick", END])
gated = _g.compile(name="gated")


class Failing(TypedDict, total=False):
    done: bool


def boom(state: Failing) -> dict[str, Any]:
    raise ValueError("boom")


_f = StateGraph(Failing)
_f.add_node("boom", boom)
_f.add_edge(START, "boom")
failing = _f.compile(name="failing")
