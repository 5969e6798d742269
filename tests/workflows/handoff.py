"""A hand-off between agents: the parent's node ``researcher`` is a ``create_react_agent`` whose
tool ``transfer_to_writer`` returns ``Command(goto="writer", graph=Command.PARENT, update=...)``; the
parent's node ``writer`` then writes its draft. :func:`build_handoff` builds it from either side of the
import map (``tests/compat/imports.py``); ``handoff`` is graphq's, for the workers. The model's replies are
picked by how many AI messages it was given, so every process running a step answers the same."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Annotated, Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool

import graphcore
import graphcore.prebuilt
from tests.workflows.lc_agent import ScriptedModel

RESEARCH = [
    AIMessage("", id="r1", tool_calls=[{"name": "lookup", "args": {"topic": "otters"}, "id": "call-l"}]),
    AIMessage("", id="r2", tool_calls=[{"name": "transfer_to_writer", "args": {}, "id": "call-h"}]),
]
"""The researcher's replies: look the topic up, then hand off."""


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic} hold hands"


def build_handoff(names: Any) -> Any:
    """The parent graph, compiled; ``names``: where ``StateGraph``, ``START``, ``MessagesState``,
    ``Command`` and ``create_react_agent`` come from (the ``lg`` fixture, or graphq's)."""

    @tool("transfer_to_writer")
    def transfer_to_writer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Hand off to the writer."""
        done = ToolMessage(
            "Transferred to writer", id="t1", name="transfer_to_writer", tool_call_id=tool_call_id
        )
        return names.Command(goto="writer", graph=names.Command.PARENT, update={"messages": [done]})

    researcher = names.create_react_agent(ScriptedModel(responses=RESEARCH), [lookup, transfer_to_writer])
    builder = names.StateGraph(names.MessagesState)
    builder.add_node("researcher", researcher, destinations=("writer",))
    builder.add_node("writer", lambda state: {"messages": [AIMessage("Otters hold hands.", id="w1")]})
    builder.add_edge(names.START, "researcher")
    return builder.compile(name="handoff")


handoff = build_handoff(
    SimpleNamespace(
        StateGraph=graphcore.StateGraph,
        START=graphcore.START,
        MessagesState=graphcore.MessagesState,
        Command=graphcore.Command,
        create_react_agent=graphcore.prebuilt.create_react_agent,
    )
)
