"""Workflow ``upgrade_noted`` whose channel ``note`` holds a ``str``: the class ``Note`` that version 1
stored is gone. Self-contained: importing ``upgrade_v1`` would allow ``Note`` to be loaded again."""

from __future__ import annotations

from typing import Any, TypedDict

from graphcore import START, StateGraph
from graphcore.engine.interrupts import interrupt


class Noted(TypedDict, total=False):
    note: str


def write_note(state: Any) -> dict[str, Any]:
    return {"note": "hi"}


def wait(state: Any) -> dict[str, Any]:
    interrupt("ok?")
    return {}


_g = StateGraph(Noted)
_g.add_node("write_note", write_note)
_g.add_node("wait", wait)
_g.add_edge(START, "write_note")
_g.add_edge("write_note", "wait")
graph = _g.compile(name="upgrade_noted")
