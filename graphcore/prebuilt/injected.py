"""The tool parameters :class:`~graphcore.prebuilt.tool_node.ToolNode` fills (LangGraph's
``langgraph.prebuilt.InjectedState``, ``InjectedStore`` and ``ToolRuntime``).

They subclass langchain-core's ``InjectedToolArg`` (``ToolRuntime``: its ``_DirectlyInjectedToolArg``) when
langchain-core is installed, so that a LangChain tool leaves such a parameter out of the schema the model
sees. Importing langchain-core's tools takes about 0.3 s, so :mod:`graphcore.prebuilt` imports this module
only when one of the three names is used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from graphcore.engine.runtime import ExecutionInfo, ServerInfo

if TYPE_CHECKING:
    from langchain_core.tools import InjectedToolArg
    from langchain_core.tools.base import _DirectlyInjectedToolArg
else:
    try:
        from langchain_core.tools import InjectedToolArg
    except ImportError:

        class InjectedToolArg:
            """langchain-core's marker of a tool parameter the model does not give (langchain-core absent)."""

    try:
        from langchain_core.tools.base import _DirectlyInjectedToolArg
    except ImportError:

        class _DirectlyInjectedToolArg:
            """langchain-core's marker of a parameter type the model does not give (langchain-core absent)."""


__all__ = ["InjectedState", "InjectedStore", "ToolRuntime"]

ContextT = TypeVar("ContextT", default=Any)
StateT = TypeVar("StateT", default=Any)


class InjectedState(InjectedToolArg):
    """Marks a tool parameter the :class:`ToolNode` fills with the graph's state (LangGraph's).

    ``state: Annotated[dict, InjectedState]`` gets the whole state (the node's input: a dict, a model, or
    ``{messages_key: list}`` when the ToolNode was given a list); ``messages: Annotated[list,
    InjectedState("messages")]`` gets that key. A key the state lacks leaves a parameter with a default
    to its default, and otherwise fails the node with KeyError (AttributeError for a model).

    Args:
        field: the state key to give, or None for the whole state.
    """

    def __init__(self, field: str | None = None) -> None:
        self.field = field


class InjectedStore(InjectedToolArg):
    """Marks a tool parameter the :class:`ToolNode` fills with the run's long-term store (LangGraph's):
    ``store: Annotated[Any, InjectedStore()]`` gets the graph's ``compile(store=...)``, on the queue the
    workers' Redis store. Calling such a tool in a graph without a store raises ValueError."""


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """What the :class:`ToolNode` gives a tool parameter annotated ``ToolRuntime`` (or
    ``ToolRuntime[Context, State]``), or any parameter named ``runtime`` (LangGraph's): no ``Annotated``
    needed, and the model never sees the parameter.

    Attributes:
        state: the ToolNode's input (a state, or the list of messages it was given; the call's state for a
            ``create_react_agent`` call).
        context: the run's context (``invoke(..., context=...)``; on the queue the run's), or None.
        config: the ToolNode task's config (a :class:`~graphcore.engine.config.RunConfig`, read like
            LangGraph's dict: ``config["configurable"]``).
        stream_writer: ``stream_writer(chunk)`` emits a ``custom`` stream event of the ToolNode's task
            (on the queue, one of the run's custom events).
        tool_call_id: the id of the tool call being run.
        store: the run's long-term store (``compile(store=...)``; on the queue the workers' Redis store), or
            None.
        tools: the ToolNode's tools, as given.
        execution_info: the ToolNode task's :class:`~graphcore.engine.runtime.ExecutionInfo`, None outside
            a run.
        server_info: LangGraph Server's; always None.
    """

    state: StateT
    context: ContextT
    config: Any
    stream_writer: Callable[[Any], None]
    tool_call_id: str | None
    store: Any
    tools: list[Any] = field(default_factory=list)
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None

    def emit_output_delta(self, delta: Any) -> None:
        """LangGraph streams ``delta`` on its ``tools`` stream mode and does nothing without it; graphq has
        no ``tools`` stream mode, so this does nothing."""
