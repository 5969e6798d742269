"""Workflows for admission tests (R8, R15): short runs whose nodes sleep, a workflow with its own limits,
and one that asks a human.

- ``tick``: one node, ``work``, that sleeps ``state["sleep"]`` seconds (0 when absent).
- ``ticks``: ``work`` → ``work2``, each sleeping ``state["sleep"]`` (a run with a later step).
- ``capped``: like ``tick``, compiled with ``max_concurrent_runs=2`` and ``max_concurrent_runs_per_tenant=1``.
- ``ask``: ``question`` asks for an answer (``interrupt``), then ``done``.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from graphcore import END, START, StateGraph
from graphcore.engine.interrupts import interrupt


class Tick(TypedDict, total=False):
    sleep: float
    done: int
    answer: Any


def work(state: Tick) -> dict[str, Any]:
    time.sleep(state.get("sleep", 0.0))
    return {"done": state.get("done", 0) + 1}


def _line(name: str, nodes: int, config: dict[str, Any] | None = None) -> Any:
    g = StateGraph(Tick)
    names = ["work", "work2"][:nodes]
    for node in names:
        g.add_node(node, work)
    for source, target in zip([START, *names], [*names, END], strict=True):
        g.add_edge(source, target)
    return g.compile(name=name, config=config)


tick = _line("tick", 1)
ticks = _line("ticks", 2)
capped = _line("capped", 1, {"max_concurrent_runs": 2, "max_concurrent_runs_per_tenant": 1})


def question(state: Tick) -> dict[str, Any]:
    return {"answer": interrupt({"question": "go on?"})}


def done(state: Tick) -> dict[str, Any]:
    return {"done": 1}


_a = StateGraph(Tick)
_a.add_node("question", question)
_a.add_node("done", done)
_a.add_edge(START, "question")
_a.add_edge("question", "done")
_a.add_edge("done", END)
ask = _a.compile(name="ask")
