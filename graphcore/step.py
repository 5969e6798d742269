"""Running one super-step's tasks: concurrently, persisting each finished task's writes at once (G3, I2).

This is the piece both loops share: the in-process executor and the RQ step job call :func:`run_step`.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from graphcore.algo import Task, prepare_tasks, run_task
from graphcore.checkpoint import Checkpoint
from graphcore.config import RunConfig
from graphcore.errors import GraphqError, NodeError
from graphcore.settings import get_settings
from graphcore.types import TaskWrites

if TYPE_CHECKING:
    from graphcore.executor import CompiledGraph

__all__ = ["StepResult", "run_step"]

TaskDone = Callable[[TaskWrites], None]
Writer = Callable[[Task, Any], None]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(get_settings().max_workers_per_step, thread_name_prefix="graphq-task")
        return _pool


class StepResult:
    """Outcome of a super-step's tasks.

    Attributes:
        results: every task's writes, in task order (including those recovered from pending writes).
        error: the first failure in task order: a :class:`NodeError` for an exception a node raised, a
            graphq error for invalid writes, or the raw error of ``on_task_done`` (e.g. a Redis error);
            None when all succeeded.
    """

    def __init__(self, results: list[TaskWrites], error: Exception | None) -> None:
        self.results = results
        self.error = error


def _call(
    graph: CompiledGraph, cp: Checkpoint, task: Task, config: RunConfig, writer: Writer, done: TaskDone | None
) -> TaskWrites:
    try:
        result = run_task(graph, cp, task, config, lambda chunk: writer(task, chunk))
    except GraphqError:
        raise
    except Exception as exc:
        raise NodeError(task.node, exc) from exc
    if done is not None:  # persistence errors (e.g. a dropped Redis connection) propagate unwrapped

        done(result)
    return result


def run_step(
    graph: CompiledGraph,
    cp: Checkpoint,
    config: RunConfig,
    *,
    finished: Mapping[str, TaskWrites] | None = None,
    on_task_done: TaskDone | None = None,
    writer: Writer | None = None,
) -> StepResult:
    """Run the tasks of the super-step after ``cp``.

    Args:
        graph: the compiled graph.
        cp: the checkpoint the step starts from.
        config: the run's config.
        finished: task id → writes already persisted by an earlier attempt; those tasks are not run (I2).
        on_task_done: called with each task's writes as soon as it finishes (from the task's thread).
        writer: receives ``(task, chunk)`` for each ``get_stream_writer()`` call.

    Returns:
        The writes of all tasks in order, and the first error (in task order) if any task failed. Tasks
        that succeeded alongside a failing one still have their writes passed to ``on_task_done``.
    """
    finished = finished or {}
    emit: Writer = writer or (lambda task, chunk: None)
    tasks = prepare_tasks(graph, cp)
    todo = [t for t in tasks if t.id not in finished]
    outcomes: dict[str, TaskWrites | Exception] = dict(finished)
    if len(todo) == 1:
        try:
            outcomes[todo[0].id] = _call(graph, cp, todo[0], config, emit, on_task_done)
        except Exception as exc:
            outcomes[todo[0].id] = exc
    elif todo:
        pool = _shared_pool()
        futures: list[tuple[Task, Future[TaskWrites]]] = [
            (t, pool.submit(contextvars.copy_context().run, _call, graph, cp, t, config, emit, on_task_done))
            for t in todo
        ]
        for task, future in futures:
            failure = future.exception()
            if failure is not None and not isinstance(failure, Exception):
                raise failure  # KeyboardInterrupt, SystemExit, a shutdown signal: not a task failure
            outcomes[task.id] = failure if failure is not None else future.result()
    return _collect(tasks, outcomes)


def _collect(tasks: Sequence[Task], outcomes: Mapping[str, TaskWrites | Exception]) -> StepResult:
    results: list[TaskWrites] = []
    error: Exception | None = None
    for task in tasks:
        outcome = outcomes[task.id]
        if isinstance(outcome, Exception):
            error = error or outcome
        else:
            results.append(outcome)
    return StepResult(results, error)
