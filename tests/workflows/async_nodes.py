"""Workflows with ``async def`` nodes for the queue tests (tests/test_async_nodes.py); module-level, so
workers import them.

``async-fanout``: three async nodes of one super-step; each leaves a file of its name in
``$GRAPHQ_TEST_DIR/met/`` and waits (up to 10 s, else ``TimeoutError``) until all three are there, then
writes its name: the run completes only if the three ran at once. ``async-ask``: an async node that asks a
human and greets the answer. ``async-patient``: an async node that sleeps 30 s; when it is cancelled it
leaves the line ``cancelled`` in ``$GRAPHQ_TEST_DIR/patient.log`` (it also writes ``started`` there first).
"""

from __future__ import annotations

import asyncio
import operator
import os
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import END, START, StateGraph, interrupt


class Met(TypedDict, total=False):
    met: Annotated[list[str], operator.add]


def _meeting(name: str) -> Any:
    async def meet(state: Met) -> dict[str, Any]:
        here = Path(os.environ["GRAPHQ_TEST_DIR"]) / "met"
        here.mkdir(exist_ok=True)
        (here / name).touch()
        async with asyncio.timeout(10):
            while len(list(here.iterdir())) < 3:
                await asyncio.sleep(0.01)
        return {"met": [name]}

    return meet


_f = StateGraph(Met)
for _name in ("a", "b", "c"):
    _f.add_node(_name, _meeting(_name))
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
