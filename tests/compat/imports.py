"""The import map from LangGraph to graphq: a LangGraph program runs on graphq with these imports changed.

The README's "Coming from LangGraph" table shows the same map (``tests/test_readme.py`` checks it).
"""

from __future__ import annotations

IMPORT_MAP: dict[str, tuple[str, tuple[str, ...]]] = {
    "langgraph.graph": ("graphcore", ("StateGraph", "START", "END", "MessagesState", "add_messages")),
    "langgraph.graph.message": ("graphcore", ("REMOVE_ALL_MESSAGES", "push_message")),
    "langgraph.types": (
        "graphcore",
        (
            "CachePolicy",
            "CheckpointStreamPart",
            "Command",
            "CustomStreamPart",
            "DebugStreamPart",
            "GraphOutput",
            "Interrupt",
            "MessagesStreamPart",
            "Overwrite",
            "RetryPolicy",
            "Send",
            "StateSnapshot",
            "StateUpdate",
            "StreamPart",
            "StreamWriter",
            "TasksStreamPart",
            "TimeoutPolicy",
            "UpdatesStreamPart",
            "ValuesStreamPart",
            "interrupt",
        ),
    ),
    "langgraph.channels": ("graphcore", ("DeltaChannel", "UntrackedValue")),
    "langgraph.config": ("graphcore", ("get_config", "get_store", "get_stream_writer")),
    "langgraph.runtime": (
        "graphcore",
        ("ExecutionInfo", "RunControl", "Runtime", "ServerInfo", "get_runtime"),
    ),
    "langgraph.checkpoint.memory": ("graphcore", ("InMemorySaver", "MemorySaver")),
    "langgraph.cache.memory": ("graphcore", ("InMemoryCache",)),
    "langgraph.checkpoint.base": ("graphcore", ("CheckpointTuple",)),
    "langgraph.store.memory": ("graphcore", ("InMemoryStore",)),
    "langgraph.store.base": (
        "graphcore",
        (
            "BaseStore",
            "GetOp",
            "InvalidNamespaceError",
            "Item",
            "ListNamespacesOp",
            "MatchCondition",
            "PutOp",
            "SearchItem",
            "SearchOp",
        ),
    ),
    "langgraph.errors": (
        "graphcore",
        (
            "EmptyInputError",
            "GraphDrained",
            "GraphRecursionError",
            "InvalidUpdateError",
            "NodeError",
            "NodeTimeoutError",
        ),
    ),
    "langgraph.managed": ("graphcore", ("IsLastStep", "RemainingSteps")),
    "langgraph.prebuilt": (
        "graphcore.prebuilt",
        (
            "InjectedState",
            "InjectedStore",
            "ToolNode",
            "ToolRuntime",
            "ValidationNode",
            "create_react_agent",
            "tools_condition",
        ),
    ),
    "langchain_core.messages": (
        "graphcore.messages",
        (
            "AIMessage",
            "AnyMessage",
            "BaseMessage",
            "HumanMessage",
            "RemoveMessage",
            "SystemMessage",
            "ToolMessage",
        ),
    ),
}
"""LangGraph (or langchain-core) module → (the graphq module to import from instead, the names it offers)."""

NAMES: dict[str, tuple[str, str]] = {
    name: (source, target) for source, (target, names) in IMPORT_MAP.items() for name in names
}
"""Each name → (its LangGraph module, its graphq module)."""
