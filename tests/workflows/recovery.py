"""A fan-out workflow that counts how often each task body runs (for partial-step recovery, I2)."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

from graphcore import START, Send, StateGraph

CALLS: Counter[str] = Counter()


class Fan(TypedDict, total=False):
    names: list[str]
    done: Annotated[list[str], operator.add]


def split(state: Fan) -> list[Send]:
    return [Send("work", name) for name in state["names"]]


def work(name: str) -> dict[str, Any]:
    CALLS[name] += 1
    return {"done": [name.upper()]}


_g = StateGraph(Fan)
_g.add_node("work", work)
_g.add_conditional_edges(START, split)
recovery = _g.compile(name="recovery")
