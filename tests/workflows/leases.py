"""A workflow with a large state for lease tests: each step rewrites a blob of ``size`` bytes."""

from __future__ import annotations

from typing import Any, TypedDict

from graphcore import END, START, StateGraph


class Big(TypedDict, total=False):
    size: int
    steps: int
    n: int
    blob: list[str]


def grow(state: Big) -> dict[str, Any]:
    n = state.get("n", 0) + 1
    chunk = "x" * 1000
    return {"n": n, "blob": [f"{n}:{i}:{chunk}" for i in range(state["size"] // 1000)]}


def again(state: Big) -> str:
    return "grow" if state["n"] < state["steps"] else END


_g = StateGraph(Big)
_g.add_node("grow", grow)
_g.add_edge(START, "grow")
_g.add_conditional_edges("grow", again, ["grow", END])
big_state = _g.compile(name="big-state")
