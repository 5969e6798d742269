"""Workflows with ``async def`` nodes for the queue tests (tests/test_async_nodes.py); module-level, so
workers import them.

``async-fanout``: three async nodes of one super-step, each ``await asyncio.sleep(0.5)``, writing the
wall-clock time (s) it started and ended. ``async-ask``: an async node that asks a human and greets the
answer. ``async-patient``: an async node that sleeps 30 s; when it is cancelled it leaves the line
``cancelled`` in ``$GRAPHQ_TEST_DIR/patient.log`` (it also writes ``started`` there first).
"""

from __future__ import annotations

import asyncio
import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import END, START, StateGraph, interrupt


class Spans(TypedDict, total=False):
    spans: Annotated[list[list[Any]], operator.add]


def _sleeper(name: str) -> Any:
    async def sleep(state: Spans) -> dict[str, Any]:
        began = time.time()
        await asyncio.sleep(0.5)
        return {"spans": [[name, began, time.time()]]}

    return sleep


_f = StateGraph(Spans)
for _name in ("a", "b", "c"):
    _f.add_node(_name, _sleeper(_name))
    _f.add_edge(START, _name)
    _f.add_edge(_name, END)
fanout = _f.compile(name="async-fanout")


class Greeting(TypedDict, total=False):
    greeting: str


async def ask(state: Greeting) -> dict[str, Any]:
    await asyncio.sleep(0)
    name = interrupt({"question": "your name?"})
    return {"greeting": f"hello {name}"}


_a = StateGraph(Greeting)
_a.add_node("ask", ask)
_a.add_edge(START, "ask")
asking = _a.compile(name="async-ask")


def _log(line: str) -> None:
    with (Path(os.environ["GRAPHQ_TEST_DIR"]) / "patient.log").open("a") as log:
        log.write(line + "\n")


async def patient(state: Greeting) -> dict[str, Any]:
    _log("started")
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        _log("cancelled")
        raise
    return {"greeting": "never"}


_p = StateGraph(Greeting)
_p.add_node("patient", patient)
_p.add_edge(START, "patient")
patient_graph = _p.compile(name="async-patient")
