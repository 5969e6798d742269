"""A workflow for ``update_state`` with a Command on the queue (tests/compat/test_update_command.py):
``agent`` then ``map``, which fans out to ``task`` with Sends, as in LangGraph's
``test_batch_update_as_input``."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, Command, Send, StateGraph


class Mapped(TypedDict):
    foo: str
    tasks: Annotated[list[int], operator.add]


def fan(foo: str) -> Command[Any]:
    """The Command ``map`` returns: three Sends to ``task``, ``foo`` set."""
    return Command(goto=[Send("task", {"index": i}) for i in range(3)], update={"foo": foo})


_g = StateGraph(Mapped)
_g.add_node("agent", lambda s: {"foo": "agent"})
_g.add_node("map", lambda s: fan("map"))
_g.add_node("task", lambda s: {"tasks": [s["index"]]})
_g.add_edge(START, "agent")
_g.add_edge("agent", "map")
mapping = _g.compile(name="mapping")
