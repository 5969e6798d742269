"""``stream_mode="messages"``: the LLM tokens of LangChain chat models called in nodes, and the messages
nodes write, as LangGraph streams them: ``(message, metadata)`` pairs.

A streamed run whose modes include ``messages`` adds a :func:`langchain_callback` to its config's
callbacks; its nodes' LangChain calls hear it through the node's config (or LangChain's context variable,
:func:`graphcore.engine.config.task_context`), and graphs invoked inside nodes inherit it.

* A chat model's tokens: each ``AIMessageChunk`` with the metadata LangChain gives the model run (the node's
  ``langgraph_node`` and ``langgraph_step``, the config's metadata and ``configurable`` values, LangChain's
  ``ls_*`` keys). The handler makes ``model.invoke(...)`` stream (a streaming handler, as LangGraph's), so
  tokens come as they are made. A model run tagged ``nostream`` is not shown. A model that does not stream
  shows its whole reply once, at its end.
* The messages a node writes (its update's values that are messages, or lists of them) that were neither
  streamed nor in the state before its super-step, as the node finishes (before its ``updates`` event),
  with LangGraph's metadata of a node's output (``ls_integration`` and the task's ``langgraph_*`` keys,
  :mod:`graphcore.engine.task_metadata`). The nodes of a graph invoked in a node show theirs too when the
  stream has ``subgraphs=True`` (under that graph's namespace); without it, only when that node writes
  them. A node whose output is the ``Command(graph=Command.PARENT)`` of a graph it ran shows none of the
  messages it writes (LangGraph's node run fails with that command).

Each message is shown once (by id). Without langchain-core only the written messages are shown.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from typing import Any

from graphcore.engine.config import RunConfig, current_task, with_handler
from graphcore.messages import coerce_message
from graphcore.types import TaskWrites

__all__ = [
    "MessagesHandler",
    "handlers",
    "known_ids",
    "langchain_callback",
    "listening",
    "push_message",
    "written",
]

Put = Callable[[tuple[str, ...], tuple[Any, dict[str, Any]]], None]
"""Sends one ``(message, metadata)`` pair under a namespace below the handler's graph (``()``: its own)."""


class MessagesHandler:
    """What the run's ``messages`` events need to know: where they go, the ids already shown, the
    checkpoint namespace of the run's graph (``graph_ns``, ``""`` at the root), whether the stream shows
    its subgraphs' events (``subgraphs``) and, for a graph streamed in a node (``inner.stream(...)``), the
    handler of the enclosing stream (``also``), which is shown the messages its nodes write too."""

    def __init__(
        self, put: Put, graph_ns: str = "", subgraphs: bool = False, also: MessagesHandler | None = None
    ) -> None:
        self.put, self.graph_ns, self.subgraphs, self.also = put, graph_ns, subgraphs, also
        self.seen: set[str] = set()

    def sharing(self, put: Put) -> MessagesHandler:
        """A handler sending to ``put`` that shares this one's shown ids (a message is shown once)."""
        other = MessagesHandler(put, self.graph_ns, self.subgraphs, self.also)
        other.seen = self.seen
        return other

    def show_written(self, message: Any, metadata: dict[str, Any], ns: tuple[str, ...] = ()) -> None:
        """Stream a message a node wrote once per id, and to the enclosing stream's handler under the
        namespace it shows it at (:meth:`namespace`), if it shows it."""
        self.show(message, metadata, dedupe=True, ns=ns)
        if self.also is not None and (outer := self.also.namespace(metadata)) is not None:
            self.also.show_written(message, metadata, outer)

    def show(self, message: Any, metadata: dict[str, Any], dedupe: bool, ns: tuple[str, ...] = ()) -> None:
        """Stream ``message`` with ``metadata`` under namespace ``ns``, once per id when ``dedupe``."""
        if dedupe and message.id is not None and message.id in self.seen:
            return
        if message.id is not None:
            self.seen.add(message.id)
        self.put(ns, (message, metadata))

    def namespace(self, metadata: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The stream namespace of a model called in the task whose ``langgraph_checkpoint_ns`` is in
        ``metadata``: its graph's checkpoint namespace below the run's graph (``()`` for the run's own
        nodes, ``("sub:<task id>",)`` for the nodes of a graph run in task ``sub``), as LangGraph's; None
        when the stream does not show it (a subgraph's, without ``subgraphs=True``)."""
        parts = str(metadata.get("langgraph_checkpoint_ns", "")).split("|")[:-1]
        below = tuple(parts[len(self.graph_ns.split("|")) if self.graph_ns else 0 :])
        return below if below == () or self.subgraphs else None


def langchain_callback(shows: MessagesHandler) -> Any | None:
    """The LangChain callback handler that hands ``shows`` the tokens and replies of the chat models called
    in nodes (:mod:`graphcore.engine.langchain_messages`, imported on first use), or None without
    langchain-core."""
    try:
        from graphcore.engine.langchain_messages import LangChainMessages
    except ImportError:
        return None
    return LangChainMessages(shows)


def listening(
    cfg: RunConfig, put: Put, graph_ns: str = "", subgraphs: bool = False, also: MessagesHandler | None = None
) -> tuple[RunConfig, MessagesHandler]:
    """``cfg`` with the :func:`langchain_callback` of a new handler sending each ``(message, metadata)`` to
    ``put`` added to its callbacks (a list, or a LangChain callback manager: inherited by the calls inside
    nodes), and that handler (``graph_ns``, ``subgraphs``, ``also``: see :class:`MessagesHandler`). Without
    langchain-core ``cfg`` is returned as it is (only written messages are shown)."""
    shows = MessagesHandler(put, graph_ns, subgraphs, also)
    callback = langchain_callback(shows)
    if callback is None:
        return cfg, shows
    return with_handler(cfg, callback), shows


def push_message(message: Any, *, state_key: str | None = "messages") -> Any:
    """Show ``message`` in the run's ``messages`` stream now, with the task's metadata, under the task's
    graph's namespace (in a subgraph only with ``subgraphs=True``; LangGraph's
    ``langgraph.graph.message.push_message``), and write it to ``state_key`` as the node's write (before
    what the node returns; not when ``state_key`` is None).

    Args:
        message: a message, or what ``add_messages`` reads as one (a string, a ``(role, content)`` pair,
            a dict); it must have an id.
        state_key: the state key written, ``"messages"`` by default.

    Returns:
        The message.

    Raises:
        ValueError: the message has no id ("Message ID is required", LangGraph's text).
        OutsideRunError: called outside a running node.
    """
    task = current_task("push_message")
    message = coerce_message(message)
    if message.id is None:
        raise ValueError("Message ID is required")
    metadata = task.config["metadata"]
    for handler in handlers(task.config.callbacks):
        shows = getattr(handler, "shows", None)
        if isinstance(shows, MessagesHandler) and (ns := shows.namespace(metadata)) is not None:
            shows.show(message, metadata, dedupe=False, ns=ns)
    if state_key:
        task.pushed.append((state_key, message))
    return message


def handlers(callbacks: Any) -> list[Any]:
    """The handlers of a config's ``callbacks`` (a list, a LangChain callback manager or None)."""
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, list) else list(getattr(callbacks, "handlers", []))


def _messages_in(value: Any) -> list[Any]:
    items = value if isinstance(value, list | tuple) else [value]
    return [m for m in items if isinstance(getattr(m, "type", None), str) and hasattr(m, "content")]


def known_ids(values: Mapping[str, Any]) -> set[str]:
    """The ids of the messages in a state's channel values (a node writing them back shows nothing)."""
    return {m.id for value in values.values() for m in _messages_in(value) if getattr(m, "id", None)}


def written(
    show: MessagesHandler, result: TaskWrites, known: Collection[str], tasks: Mapping[str, Mapping[str, Any]]
) -> None:
    """Show the messages a finished task wrote that are neither ``known`` (in the state before its
    super-step) nor shown yet; one without an id gets ``str(uuid4())``, kept in the state (LangGraph's).
    Their metadata is LangGraph's for a node's output: ``ls_integration`` ``"langgraph"`` and
    ``tasks[result.task_id]`` (the run config's metadata and the task's ``langgraph_*`` keys,
    :func:`graphcore.engine.task_metadata.step_metadata`). A task whose writes are a command a graph it
    ran sent up with ``Command.PARENT`` shows none (LangGraph's node run failed with it)."""
    if result.from_subgraph:
        return
    metadata = {"ls_integration": "langgraph", **tasks[result.task_id]}
    for _, value in result.writes:
        for message in _messages_in(value):
            if message.id is None:
                message.id = str(uuid.uuid4())
            if message.id not in known:
                show.show_written(message, metadata)
