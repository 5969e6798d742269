"""Managed values on the queue (issue 23): ``managed_loop`` loops on one node until ``is_last_step``,
recording ``[remaining_steps, is_last_step]`` of each super-step; neither key is stored."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

import graphcore


def build(lg: Any) -> Any:
    """The loop's builder from either side of the import map: ``lg`` has ``StateGraph``, ``START``,
    ``END``, ``RemainingSteps`` and ``IsLastStep`` (the ``lg`` fixture of tests/compat, or ``graphcore``)."""

    fields = {
        "seen": Annotated[list[Any], operator.add],
        "remaining_steps": lg.RemainingSteps,
        "is_last_step": lg.IsLastStep,
    }
    Counted = TypedDict("Counted", fields)  # type: ignore[operator]

    def count(state: dict[str, Any]) -> dict[str, Any]:
        return {"seen": [[state["remaining_steps"], state["is_last_step"]]]}

    builder = lg.StateGraph(Counted)
    builder.add_node("count", count)
    builder.add_edge(lg.START, "count")
    builder.add_conditional_edges("count", lambda state: lg.END if state["is_last_step"] else "count")
    return builder


managed_loop = build(graphcore).compile(name="managed_loop")
