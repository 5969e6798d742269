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

What is committed: the task's pending writes are saved once, with the handler's result. The node's failure
is not saved on its own, so a run continued after its handler failed (or its worker died before that save)
runs the node again, as any unfinished task. LangGraph saves the failure's text first and runs only the
handler again, giving it that text as ``error.error``.
"""

from __future__ import annotations

import dataclasses

from graphcore.engine.algo import Task
from graphcore.engine.config import NODE_ERROR_KEY
from graphcore.engine.tries import Step
from graphcore.errors import ParentCommand, node_error

__all__ = ["handler_task"]


def handler_task(step: Step, task: Task, exc: BaseException, tries: int) -> tuple[Step, Task] | None:
    """The step and task that handle ``task``'s failure ``exc`` (after ``tries`` tries), or None when its node
    has no error handler or ``exc`` is not an error a handler gets (see the module docstring)."""
    handler = step.graph.nodes[task.node].error_handler
    if handler is None or not isinstance(exc, Exception) or isinstance(exc, ParentCommand):
        return None
    error = node_error(task.node, exc, attempts=tries)
    config = step.config.model_copy(
        update={"configurable": {**step.config.configurable, NODE_ERROR_KEY: error}}
    )
    return dataclasses.replace(step, config=config), dataclasses.replace(task, node=handler, timeout=None)
