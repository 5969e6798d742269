"""A wide step for progress tests: ``n`` tasks in one super-step (each sleeping ``pause`` s), then a join."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

from graphcore import START, Send, StateGraph


class Wide(TypedDict, total=False):
    n: int
    pause: float
    pieces: Annotated[list[int], operator.add]
    total: int


def spread(state: Wide) -> list[Send]:
    return [Send("piece", {"i": i, "pause": state.get("pause", 0.0)}) for i in range(state["n"])]


def piece(arg: dict[str, Any]) -> dict[str, Any]:
    time.sleep(arg["pause"])
    return {"pieces": [arg["i"]]}


def gather(state: Wide) -> dict[str, Any]:
    return {"total": len(state["pieces"])}


_g = StateGraph(Wide)
_g.add_node("piece", piece)
_g.add_node("gather", gather)
_g.add_conditional_edges(START, spread)
_g.add_edge("piece", "gather")
wide = _g.compile(name="wide")
