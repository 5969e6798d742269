"""Managed values on the queue: ``managed_loop`` loops on one node until ``is_last_step``,
recording ``[remaining_steps, is_last_step]`` of each super-step; neither key is stored. ``managed_entry``
routes from START on ``remaining_steps``: to ``big`` with 5 or more, else to ``small``. ``managed_reader``
records the ``remaining_steps`` of its one node. ``managed_asking`` is ``managed_loop`` asking first
(``interrupt()``), so the call that answers counts the loop; ``managed_stops`` is ``managed_loop`` stopping
before each of its super-steps (``interrupt_before``)."""

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


def build_entry(lg: Any) -> Any:
    """``managed_entry``'s builder from either side of the import map (as :func:`build`)."""
    fields = {"seen": Annotated[list[Any], operator.add], "remaining_steps": lg.RemainingSteps}
    State = TypedDict("State", fields)  # type: ignore[operator]
    builder = lg.StateGraph(State)
    builder.add_node("big", lambda state: {"seen": ["big"]})
    builder.add_node("small", lambda state: {"seen": ["small"]})
    builder.add_conditional_edges(
        lg.START, lambda state: "big" if state["remaining_steps"] >= 5 else "small", ["big", "small"]
    )
    return builder


def build_reader(lg: Any) -> Any:
    """A one-node graph recording the ``remaining_steps`` its node sees (either side, as :func:`build`)."""
    fields = {"seen": Annotated[list[Any], operator.add], "remaining_steps": lg.RemainingSteps}
    State = TypedDict("State", fields)  # type: ignore[operator]
    builder = lg.StateGraph(State)
    builder.add_node("read", lambda state: {"seen": [state["remaining_steps"]]})
    builder.add_edge(lg.START, "read")
    return builder


def build_asking(lg: Any) -> Any:
    """:func:`build`'s loop whose node first asks (``interrupt()``) before it records anything: the call that
    answers counts the loop's super-steps (either side, as :func:`build`)."""
    fields = {
        "seen": Annotated[list[Any], operator.add],
        "remaining_steps": lg.RemainingSteps,
        "is_last_step": lg.IsLastStep,
    }
    Counted = TypedDict("Counted", fields)  # type: ignore[operator]

    def count(state: dict[str, Any]) -> dict[str, Any]:
        if not state["seen"]:
            lg.interrupt("go on?")
        return {"seen": [[state["remaining_steps"], state["is_last_step"]]]}

    builder = lg.StateGraph(Counted)
    builder.add_node("count", count)
    builder.add_edge(lg.START, "count")
    builder.add_conditional_edges("count", lambda state: lg.END if state["is_last_step"] else "count")
    return builder


managed_loop = build(graphcore).compile(name="managed_loop")
managed_asking = build_asking(graphcore).compile(name="managed_asking")
managed_stops = build(graphcore).compile(name="managed_stops", interrupt_before=["count"])
managed_reader = build_reader(graphcore).compile(name="managed_reader")
managed_entry = build_entry(graphcore).compile(name="managed_entry")
