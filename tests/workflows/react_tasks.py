"""``create_react_agent`` whose tool calls ask a human (tests/test_react_agent_queue.py): the
``react-approvals`` workflow. The model asks for ``approve(pay)``, ``quick(z)`` and ``approve(ship)`` in one
message, then answers ``done``; each call is its own ``tools`` task (LangGraph's v2); each ``approve`` call
interrupts. ``quick`` logs each run to ``$GRAPHQ_TEST_DIR/quick.log`` (worker subprocesses)."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from graphcore import interrupt
from graphcore.prebuilt import create_react_agent
from tests.workflows.lc_agent import ScriptedModel

CALLS = [
    {"name": "approve", "args": {"action": "pay"}, "id": "c-pay"},
    {"name": "quick", "args": {"x": "z"}, "id": "c-quick"},
    {"name": "approve", "args": {"action": "ship"}, "id": "c-ship"},
]


@tool
def approve(action: str) -> str:
    """Ask a human whether to do ``action``."""
    return f"{action}: {interrupt({'approve': action})}"


@tool
def quick(x: str) -> str:
    """Answer at once (and log the run)."""
    with (Path(os.environ["GRAPHQ_TEST_DIR"]) / "quick.log").open("a") as log:
        log.write(f"{x}\n")
    return x


react_approvals = create_react_agent(
    ScriptedModel(responses=[AIMessage("", tool_calls=CALLS), AIMessage("done")]),
    [approve, quick],
    name="react-approvals",
)
