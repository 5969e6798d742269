"""A workflow for the queue side of the stream payloads: a node that writes nothing, then one that writes."""

from __future__ import annotations

from typing import TypedDict

from graphcore import START, StateGraph


class Quiet(TypedDict, total=False):
    n: int


_q = StateGraph(Quiet)
_q.add_node("quiet", lambda s: None)
_q.add_node("write", lambda s: {"n": 1})
_q.add_edge(START, "quiet")
_q.add_edge("quiet", "write")
quiet = _q.compile(name="quiet")
