"""Prebuilt pieces for agent loops: LangGraph's ``ToolNode``, ``tools_condition``, ``create_react_agent``,
``InjectedState``, ``InjectedStore``, ``ToolRuntime`` and ``ValidationNode`` (as in ``langgraph.prebuilt``)
and graphq's agent-loop state, reducers and routers (DESIGN G8)."""

from typing import Any

from graphcore.prebuilt.agent import (
    AgentLoopState,
    Condition,
    Decision,
    Spent,
    budget_exhausted,
    decision_of,
    first_of,
    has_tool_calls,
    is_final_answer,
    iteration_exceeds,
    latest,
    model_turn,
    spend,
    terminate_requested,
)
from graphcore.prebuilt.react_agent import AgentState, create_react_agent
from graphcore.prebuilt.tool_node import ToolNode, tools_condition
from graphcore.prebuilt.validation import ValidationNode

__all__ = [
    "AgentLoopState",
    "AgentState",
    "Condition",
    "Decision",
    "InjectedState",
    "InjectedStore",
    "Spent",
    "ToolNode",
    "ToolRuntime",
    "ValidationNode",
    "budget_exhausted",
    "create_react_agent",
    "decision_of",
    "first_of",
    "has_tool_calls",
    "is_final_answer",
    "iteration_exceeds",
    "latest",
    "model_turn",
    "spend",
    "terminate_requested",
    "tools_condition",
]


def __getattr__(name: str) -> Any:
    """``InjectedState``, ``InjectedStore`` and ``ToolRuntime``, imported on first use
    (:mod:`graphcore.prebuilt.injected` imports langchain-core's tools, which costs every worker start-up
    about 0.3 s otherwise)."""
    if name in ("InjectedState", "InjectedStore", "ToolRuntime"):
        from graphcore.prebuilt import injected

        return getattr(injected, name)
    raise AttributeError(f"module 'graphcore.prebuilt' has no attribute {name!r}")
