"""Workflows for the checkpoint retention tests (R5 checkpointing off, R7 removal after completion).

``five-steps``: nodes ``a`` → ``b`` → ``c`` → ``d`` → ``e``, one super-step each; each appends its name to
``log`` (an append-only reducer channel: a log in the store), sets ``count`` to the number of nodes run so
far (a LastValue channel rewritten every step) and leaves ``topic`` (set by the input) alone.
"""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph

NODES = ("a", "b", "c", "d", "e")


class Five(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]
    count: int


def _node(name: str) -> Any:
    def run(state: Five) -> dict[str, Any]:
        return {"log": [name], "count": state.get("count", 0) + 1}

    run.__name__ = name
    return run


_g = StateGraph(Five)
for _name in NODES:
    _g.add_node(_name, _node(_name))
_g.add_edge(START, "a")
for _before, _after in itertools.pairwise(NODES):
    _g.add_edge(_before, _after)
five_steps = _g.compile(name="five-steps")
