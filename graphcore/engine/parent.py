"""``Command(graph=Command.PARENT, ...)`` (LangGraph's): a subgraph's node updates and navigates the parent.

The node's command is raised as :class:`~graphcore.errors.ParentCommand` out of its own graph's run (that
run stops: its super-step fails with it, its writes are dropped). The task of the parent graph whose node
ran that graph (a subgraph node, or a node calling ``invoke``) takes the command as its node's output: its
update goes through the parent's reducers, ``goto`` names the parent's nodes (and the node's static edges
and routers still apply), as LangGraph's. One level only: the parent's own node gets an ordinary Command.
A root graph has no parent: the error reaches the caller (or fails the queued run).

The node's run failed with that command in LangGraph: the ``messages`` stream shows none of the messages
its update writes (the task's :attr:`~graphcore.types.TaskWrites.from_subgraph`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from graphcore.engine.config import current_task_or_none
from graphcore.errors import InvalidUpdateError, ParentCommand
from graphcore.types import Command

__all__ = ["for_parent", "taking_commands"]


def for_parent(node: str, command: Command[Any]) -> Exception:
    """The error to raise for ``node``'s command with a ``graph``: :class:`ParentCommand` for
    ``Command.PARENT``, else an :class:`InvalidUpdateError` (graphq knows no other graph names)."""
    if command.graph == Command.PARENT:
        return ParentCommand(node, command)
    return InvalidUpdateError(
        f"node {node!r} returned Command(graph={command.graph!r}): graph must be None or Command.PARENT"
    )


def taking_commands(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` (a node's function), or the command a graph it ran sent up with
    ``Command.PARENT``, as this node's output (``graph`` None); for a coroutine, one that does the same
    when awaited."""
    try:
        out = call(*args, **kwargs)
    except ParentCommand as up:
        return _taken(up)
    return _taking(out) if inspect.iscoroutine(out) else out


async def _taking(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        return await coro
    except ParentCommand as up:
        return _taken(up)


def _taken(up: ParentCommand) -> Command[Any]:
    """The command ``up`` carries, as the running node's output; the task is marked as taking it."""
    task = current_task_or_none()
    if task is not None:
        task.from_subgraph = True
    return dataclasses.replace(up.command, graph=None)
