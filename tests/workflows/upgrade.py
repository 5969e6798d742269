"""A message workflow for the upgrade of threads saved before graphq took LangGraph's messages:
``replying`` answers each turn with an AIMessage counting the messages it saw."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph, add_messages
from graphcore.messages import AIMessage


class Turns(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]


def reply(state: Turns) -> dict[str, Any]:
    seen = len(state["messages"])
    return {"messages": [AIMessage(f"seen {seen}", id=f"ai-{seen}")]}


_r = StateGraph(Turns)
_r.add_node("reply", reply)
_r.add_edge(START, "reply")
replying = _r.compile(name="replying")
