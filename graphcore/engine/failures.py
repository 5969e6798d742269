"""The record of a super-step's failed tasks, where ``get_state`` finds it (LangGraph's ``PregelTask.error``).

When a step fails, the executor stores, beside the finished tasks' pending writes, one
:func:`~graphcore.checkpoints.layout.failure_entry` per failed task; the snapshot's task then has ``error``
set to the text LangGraph's has there: the ``repr`` of the exception the node raised (``"KeyError('x')"``,
not graphq's :class:`~graphcore.errors.NodeError` around it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from graphcore.checkpoints.layout import failure_entry
from graphcore.engine.algo import Task
from graphcore.engine.compiled import GraphSpec
from graphcore.errors import NodeError
from graphcore.types import TaskWrites

__all__ = ["failure_entries", "failure_text", "raised"]


def failure_text(error: BaseException) -> str:
    """``repr`` of the node's own exception (``error.error`` for a NodeError, unless that is the text
    already), else of ``error``."""
    if isinstance(error, NodeError):
        return error.error if isinstance(error.error, str) else repr(error.error)
    return repr(error)


def failure_entries(graph: GraphSpec, failed: Sequence[tuple[Task, Exception]]) -> list[TaskWrites]:
    """The pending-writes entries recording each ``(task, error)`` of a failed step of ``graph``; none for a
    task whose error handler failed: the node's failure, saved before the handler ran
    (:mod:`graphcore.engine.handlers`), stays its record, as LangGraph's."""
    return [
        failure_entry(task.id, task.node, failure_text(error))
        for task, error in failed
        if not _handler_failed(graph, task, error)
    ]


def _handler_failed(graph: GraphSpec, task: Task, error: Exception) -> bool:
    """Whether ``error`` is the failure of ``task``'s error handler (a node that has one fails through it)."""
    handler = graph.nodes[task.node].error_handler
    return handler is not None and isinstance(error, NodeError) and error.node == handler


def raised(error: Exception) -> BaseException:
    """What ``invoke`` and ``stream`` raise for a failed step whose first failure is ``error``: the node's own
    exception when it is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``: LangGraph lets them
    propagate to the caller as they were raised), else ``error``. A node's own ``asyncio.CancelledError``
    stays a :class:`NodeError` (an ``Exception``, as LangGraph's ``NodeCancelledError``): raised bare, it
    would read as the caller's task being cancelled."""
    own = error.error if isinstance(error, NodeError) else error
    if isinstance(own, BaseException) and not isinstance(own, Exception | asyncio.CancelledError):
        return own
    return error
