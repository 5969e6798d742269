"""Node error handlers (``add_node(..., error_handler=...)``, ``set_node_defaults(error_handler=...)``), as
LangGraph 1.x runs them.

When a node's tries end in an ``Exception`` (its retries spent; a timeout included), and the node has a
handler, the handler runs in the same super-step, as a task of node ``__error_handler__<node>`` (or
``__default_error_handler__``) with the same task id and input. A parameter named ``error`` gets the
:class:`~graphcore.errors.NodeError` the run would have raised (``.node``, ``.error``). The handler's update
(a dict, a ``Command`` with ``goto``, or None) is the task's writes; the failed node's edges are not
followed. A handler that raises fails the run with its own error (no handler handles a handler).

Not handled, as in LangGraph: a pause (``interrupt()``), a cancel, a ``Command.PARENT`` for the parent
graph, an error that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``), and graphq's own
errors around the node (e.g. Redis failing while its writes are saved).

What is saved: before the handler runs, the node's failure (its text, ``repr`` of its exception) is saved as a
pending write of the step (a :func:`~graphcore.checkpoints.layout.failure_entry` with ``handled``; the step's
``on_handled``: at once in process with a checkpointer, fenced by the lease on the queue; with the step's
other writes when it fails or pauses under ``durability="exit"``), as LangGraph saves its ``__error__``
write. A run continued after the handler failed (or its worker died while it ran) runs only the handler
again, and its ``error.error`` is that text (``"KeyError('x')"``), as LangGraph's. The handler's writes,
once it succeeds, are the task's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from graphcore.checkpoints.layout import HandledFailure, failure_entry
from graphcore.engine.algo import Task
from graphcore.engine.config import NODE_ERROR_KEY
from graphcore.engine.failures import failure_text
from graphcore.engine.tries import Step
from graphcore.errors import NodeError, ParentCommand, node_error

__all__ = ["handled_of", "handler_task", "saved_handling"]


def handler_task(step: Step, task: Task, exc: BaseException, tries: int) -> tuple[Step, Task] | None:
    """The step and task that handle ``task``'s failure ``exc`` (after ``tries`` tries), or None when its node
    has no error handler or ``exc`` is not an error a handler gets (see the module docstring). The failure
    is saved first (the step's ``on_handled``).

    Raises:
        Exception: what ``on_handled`` raises (e.g. a Redis error, ``LeaseLostError``), unchanged.
    """
    if not isinstance(exc, Exception) or isinstance(exc, ParentCommand) or not _has_handler(step, task):
        return None
    if step.on_handled is not None:
        step.on_handled(failure_entry(task.id, task.node, failure_text(exc), handled=True))
    return _handling(step, task, node_error(task.node, exc, attempts=tries))


def saved_handling(step: Step, task: Task) -> tuple[Step, Task] | None:
    """The step and task of ``task``'s error handler when its failure was saved before the handler ran in an
    earlier attempt (``step.handled``): the node does not run again, the handler gets a
    :class:`~graphcore.errors.NodeError` whose ``error`` is the saved text. None otherwise (and for a
    handler's own task)."""
    saved = step.handled.get(task.id)
    if saved is None or not _has_handler(step, task):
        return None
    return _handling(step, task, NodeError(task.node, saved))


def handled_of(errors: Mapping[str, str]) -> dict[str, str]:
    """Of a step's failure texts (task id → text, ``get_writes_and_errors``), those of the failures its
    nodes' error handlers took (what ``run_step``'s ``handled`` takes)."""
    return {task_id: str(text) for task_id, text in errors.items() if isinstance(text, HandledFailure)}


def _has_handler(step: Step, task: Task) -> bool:
    return step.graph.nodes[task.node].error_handler is not None


def _handling(step: Step, task: Task, error: NodeError) -> tuple[Step, Task]:
    handler = step.graph.nodes[task.node].error_handler
    assert handler is not None  # _has_handler
    config = step.config.model_copy(
        update={"configurable": {**step.config.configurable, NODE_ERROR_KEY: error}}
    )
    return dataclasses.replace(step, config=config), dataclasses.replace(task, node=handler, timeout=None)
