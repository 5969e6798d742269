"""The record of a super-step's failed tasks, where ``get_state`` finds it (LangGraph's ``PregelTask.error``).

When a step fails, the executor stores, beside the finished tasks' pending writes, one
:func:`~graphcore.checkpoints.layout.failure_entry` per failed task; the snapshot's task then has ``error``
set to the text LangGraph's has there: the ``repr`` of the exception the node raised (``"KeyError('x')"``,
not graphq's :class:`~graphcore.errors.NodeError` around it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence

from graphcore.checkpoints.layout import failure_entry
from graphcore.engine.algo import Task
from graphcore.errors import NodeError
from graphcore.types import TaskWrites

__all__ = ["failure_entries", "failure_text", "raised"]


def failure_text(error: BaseException) -> str:
    """``repr`` of the node's own exception (``error.error`` for a NodeError, unless that is the text
    already), else of ``error``."""
    if isinstance(error, NodeError):
        return error.error if isinstance(error.error, str) else repr(error.error)
    return repr(error)


def failure_entries(failed: Sequence[tuple[Task, Exception]], kept: Collection[str]) -> list[TaskWrites]:
    """The pending-writes entries recording each ``(task, error)`` of a failed step; none for a task in
    ``kept`` (ids of the tasks whose node's failure an error handler took, saved before the handler ran:
    :mod:`graphcore.engine.handlers`), whose record stays the node's failure, as LangGraph's, whatever the
    handler raised (the error it was given names the node too)."""
    return [failure_entry(t.id, t.node, failure_text(error)) for t, error in failed if t.id not in kept]


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
