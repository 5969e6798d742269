"""Workflows whose nested graph's step has a slow task, for SIGKILL tests of the nested graph's finished tasks
(I2). Each task leaves a line in ``$GRAPHQ_TEST_DIR/<name>.log`` each time it runs; the slow one
waits until ``$GRAPHQ_TEST_DIR/go`` exists.

``t-toolkill`` is the trial's (a new user's): a ToolNode step of three tool calls, call 0 the slow one.
``t-subsend`` is the same shape as a subgraph node whose inner step fans out with ``Send``.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any

from typing_extensions import TypedDict

from graphcore import START, MessagesState, Send, StateGraph
from graphcore.messages import AIMessage
from graphcore.prebuilt import ToolNode, tools_condition


def _dir() -> Path:
    return Path(os.environ["GRAPHQ_TEST_DIR"])


def ran(name: str) -> None:
    """Count one side effect of ``name``; the slow one (``*-0``) then waits for the go file."""
    with (_dir() / f"{name}.log").open("a") as log:
        log.write("ran\n")
    while name.endswith("-0") and not (_dir() / "go").exists():
        time.sleep(0.05)
    with (_dir() / f"{name}.end").open("a") as log:
        log.write("end\n")


def stool(x: int) -> str:
    """Slow for x == 0 (until the go file exists)."""
    ran(f"stool-{x}")
    return f"s{x}"


def model3(state: MessagesState) -> dict[str, Any]:
    if state["messages"][-1].type == "tool":
        shown = ",".join(str(m.content) for m in state["messages"] if m.type == "tool")
        return {"messages": [AIMessage("ok " + shown, id="fin3")]}
    calls = [{"name": "stool", "args": {"x": i}, "id": f"s{i}", "type": "tool_call"} for i in range(3)]
    return {"messages": [AIMessage("", id="ai-3", tool_calls=calls)]}


_t3 = StateGraph(MessagesState)
_t3.add_node("model", model3)
_t3.add_node("tools", ToolNode([stool]))
_t3.add_edge(START, "model")
_t3.add_conditional_edges("model", tools_condition)
_t3.add_edge("tools", "model")
toolkill = _t3.compile(name="t-toolkill")


class Fan(TypedDict, total=False):
    items: list[int]
    done: Annotated[list[int], operator.add]


def spread(s: Fan) -> list[Send]:
    return [Send("work", i) for i in s["items"]]


def work(i: int) -> dict[str, Any]:
    ran(f"work-{i}")
    return {"done": [i * 10]}


_inner = StateGraph(Fan)
_inner.add_node("work", work)
_inner.add_conditional_edges(START, spread, ["work"])

_outer = StateGraph(Fan)
_outer.add_node("sub", _inner.compile())
_outer.add_edge(START, "sub")
subsend = _outer.compile(name="t-subsend")
