"""The workflow of tests/test_root_enqueue.py, copied from a new-user trial's ``t-root``: a root-channel
state ``Annotated[list, operator.add]``, ``r1`` and ``r2`` from START, ``r3`` joining both; module-level,
so workers import it."""

from __future__ import annotations

import operator
from typing import Annotated

from graphcore import START, StateGraph


def r1(v: list[object]) -> list[object]:
    return ["r1"]


def r2(v: list[object]) -> list[object]:
    return [len(v)]


def r3(v: list[object]) -> list[object]:
    return ["r3", v[-1]]


_builder = StateGraph(Annotated[list, operator.add])
_builder.add_node("r1", r1)
_builder.add_node("r2", r2)
_builder.add_node("r3", r3)
_builder.add_edge(START, "r1")
_builder.add_edge(START, "r2")
_builder.add_edge(["r1", "r2"], "r3")
root_join = _builder.compile(name="root-join")
