"""The tool-parameter markers :class:`~graphcore.prebuilt.tool_node.ToolNode` fills (LangGraph's
``langgraph.prebuilt.InjectedState`` and ``InjectedStore``).

They subclass langchain-core's ``InjectedToolArg`` when langchain-core is installed, so that a LangChain
tool leaves such a parameter out of the schema the model sees. Importing langchain-core's tools takes
about 0.3 s, so :mod:`graphcore.prebuilt` imports this module only when one of the two names is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.tools import InjectedToolArg
else:
    try:
        from langchain_core.tools import InjectedToolArg
    except ImportError:

        class InjectedToolArg:
            """langchain-core's marker of a tool parameter the model does not give (langchain-core absent)."""


__all__ = ["InjectedState", "InjectedStore"]


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
