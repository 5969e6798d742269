"""``create_react_agent``: LangGraph's prebuilt tool-calling agent (``langgraph.prebuilt``), for a LangChain
chat model and tools.

The graph has LangGraph's two nodes: ``agent`` calls the model on the conversation (after the prompt) and
appends its reply; when the reply has tool calls, ``tools`` (a :class:`~graphcore.prebuilt.ToolNode`) runs
them and the agent is called again, otherwise the run ends. It runs in process and on the workers (the
messages are stored as any state's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphcore.engine.builder import StateGraph
from graphcore.engine.executor import CompiledGraph
from graphcore.messages import MessagesState, SystemMessage
from graphcore.prebuilt.tool_node import ToolNode, tools_condition
from graphcore.types import END, START

__all__ = ["create_react_agent"]


def _prompted(prompt: Any) -> Callable[[Any], Any]:
    """What the model is given for a state: its messages after a system prompt, or what ``prompt`` makes."""
    if prompt is None:
        return lambda state: _messages(state)
    if isinstance(prompt, str):
        prompt = SystemMessage(prompt)
    if isinstance(getattr(prompt, "type", None), str) and hasattr(prompt, "content"):
        return lambda state: [prompt, *_messages(state)]
    if callable(prompt):
        return prompt  # type: ignore[no-any-return]
    if callable(getattr(prompt, "invoke", None)):  # a LangChain Runnable (a prompt template)
        return prompt.invoke  # type: ignore[no-any-return]
    raise TypeError(
        f"prompt: a string, a SystemMessage, a function of the state or a Runnable; got {prompt!r}"
    )


def _messages(state: Any) -> list[Any]:
    return list(state["messages"] if isinstance(state, dict) else state.messages)


def create_react_agent(
    model: Any,
    tools: Sequence[Any] | ToolNode,
    *,
    prompt: Any = None,
    state_schema: type[Any] | None = None,
    checkpointer: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    name: str | None = None,
) -> CompiledGraph:
    """A tool-calling agent graph, as LangGraph's ``create_react_agent`` (its common arguments).

    Args:
        model: a LangChain chat model (``model.invoke(messages)`` returns an AI message); with tools, it is
            bound to them with ``model.bind_tools(tools)`` when it has that method.
        tools: the tools (see :class:`~graphcore.prebuilt.ToolNode`), or a ToolNode.
        prompt: None; a string or a ``SystemMessage`` put before the messages; a function of the state
            returning the model's input; or a LangChain ``Runnable`` (a prompt template) invoked with it.
        state_schema: the state (default :class:`~graphcore.messages.MessagesState`); it needs ``messages``.
        checkpointer, interrupt_before, interrupt_after, debug, name: as ``StateGraph.compile``'s.

    Returns:
        The compiled graph: ``invoke({"messages": [...]})`` returns ``{"messages": [...]}`` (with the
        state's other keys).

    Raises:
        TypeError: ``prompt`` is none of those; a tool is neither a function nor a tool object.
    """
    tool_node = tools if isinstance(tools, ToolNode) else ToolNode(tools)
    bound = model
    if tool_node.tools_by_name and callable(getattr(model, "bind_tools", None)):
        bound = model.bind_tools(tool_node.tools)
    model_input = _prompted(prompt)

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [bound.invoke(model_input(state))]}

    builder = StateGraph(state_schema or MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    if tool_node.tools_by_name:
        builder.add_node("tools", tool_node)
        builder.add_conditional_edges("agent", tools_condition, ["tools", END])
        builder.add_edge("tools", "agent")
    else:
        builder.add_edge("agent", END)
    options: dict[str, Any] = {"name": name} if name is not None else {}
    return builder.compile(
        checkpointer=checkpointer,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        **options,
    )
