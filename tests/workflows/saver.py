"""A workflow for the saver API on the queue (tests/compat/test_saver.py): the subgraph ``sub`` adds one to
``n``, then ``after`` multiplies it by 10."""

from __future__ import annotations

from typing import TypedDict

from graphcore import START, StateGraph


class N(TypedDict):
    n: int


_inner = StateGraph(N)
_inner.add_node("inc", lambda s: {"n": s["n"] + 1})
_inner.add_edge(START, "inc")
_outer = StateGraph(N)
_outer.add_node("sub", _inner.compile())
_outer.add_node("after", lambda s: {"n": s["n"] * 10})
_outer.add_edge(START, "sub")
_outer.add_edge("sub", "after")
nested = _outer.compile(name="saver-nested")
