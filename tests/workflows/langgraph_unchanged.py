"""A workflow module whose imports were not changed from LangGraph's: its graph is LangGraph's own
(tests/test_registry_langgraph.py)."""

from __future__ import annotations

from langgraph.graph import START, MessagesState, StateGraph

builder = StateGraph(MessagesState)
builder.add_node("echo", lambda state: {"messages": []})
builder.add_edge(START, "echo")
app = builder.compile()
