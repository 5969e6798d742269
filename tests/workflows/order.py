"""A workflow whose parallel tasks append to one list: edge-triggered ones added out of name order, and
sent ones (write order)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, Send, StateGraph


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _named(name: str) -> Any:
    return lambda state: {"items": [name]}


_b = StateGraph(Items)
for _name in ("side", "flaky", "beta", "alpha"):
    _b.add_node(_name, _named(_name))
    _b.add_edge(START, _name)
_b.add_node("w", lambda state: {"items": [state["items"][0]]})
_b.add_conditional_edges(START, lambda state: [Send("w", {"items": [f"s{i}"]}) for i in (2, 0, 1)])
fan_order = _b.compile(name="fan-order")
