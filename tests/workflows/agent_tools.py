"""A ToolNode whose calls ask a human (tests/test_agent_example.py): the ``tool-approvals`` workflow. The
model asks for ``approve(pay)``, ``quick(z)`` and ``approve(ship)`` in one message; each ``approve`` call
interrupts. ``quick`` logs each run to ``$GRAPHQ_TEST_DIR/quick.log`` (worker subprocesses)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from graphcore import START, MessagesState, StateGraph, interrupt
from graphcore.messages import AIMessage
from graphcore.prebuilt import ToolNode, tools_condition

CALLS = [
    {"name": "approve", "args": {"action": "pay"}, "id": "c-pay"},
    {"name": "quick", "args": {"x": "z"}, "id": "c-quick"},
    {"name": "approve", "args": {"action": "ship"}, "id": "c-ship"},
]


def approve(action: str) -> str:
    """Ask a human whether to do ``action``."""
    return f"{action}: {interrupt({'approve': action})}"


def quick(x: str) -> str:
    """Answer at once (and log the run)."""
    with (Path(os.environ["GRAPHQ_TEST_DIR"]) / "quick.log").open("a") as log:
        log.write(f"{x}\n")
    return x


def model(state: MessagesState) -> dict[str, Any]:
    if state["messages"][-1].type == "tool":
        return {"messages": [AIMessage("done: " + ", ".join(m.text for m in state["messages"][2:]))]}
    return {"messages": [AIMessage("", tool_calls=CALLS)]}


_b = StateGraph(MessagesState)
_b.add_node("model", model)
_b.add_node("tools", ToolNode([approve, quick]))
_b.add_edge(START, "model")
_b.add_conditional_edges("model", tools_condition)
_b.add_edge("tools", "model")
tool_approvals = _b.compile(name="tool-approvals")
