"""Running one super-step's tasks: concurrently, persisting each finished task's writes at once (G3, I2).

This is the piece both loops share: the in-process executor and the RQ step job call :func:`run_step`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, wait
from typing import Any

from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import Task, prepare_tasks, run_task
from graphcore.engine.async_step import arun_tasks, run_async_tasks
from graphcore.engine.cache import StepCache
from graphcore.engine.cancel import CancelToken
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.config import RunConfig, remaining_steps
from graphcore.engine.handlers import handler_task, saved_handling
from graphcore.engine.nested import retried
from graphcore.engine.retry import sleep
from graphcore.engine.threads import in_pool, start_thread
from graphcore.engine.tries import RetryHook, Step, TaskDone, Tries, Writer, passes_through
from graphcore.types import PendingTask, TaskWrites

__all__ = ["RetryHook", "StepResult", "arun_step", "has_async_tasks", "run_step"]


class StepResult:
    """Outcome of a super-step's tasks.

    Attributes:
        results: every task's writes, in task order (including those recovered from pending writes).
        error: the first failure in task order: a :class:`NodeError` for an exception a node raised, a
            graphq error for invalid writes, or the raw error of ``on_task_done`` (e.g. a Redis error);
            None when all succeeded.
        failed: every task that failed and its error, in task order (empty when all succeeded).
    """

    def __init__(self, results: list[TaskWrites], failed: Sequence[tuple[Task, Exception]] = ()) -> None:
        self.results = results
        self.failed = failed

    @property
    def error(self) -> Exception | None:
        """The first failure in task order (see the class docstring), None when all succeeded."""
        return self.failed[0][1] if self.failed else None


def _call(step: Step, task: Task) -> TaskWrites:
    """Run ``task`` to its writes; raises what it fails with (:meth:`Tries.failure`), or graphq's own control
    flow (:func:`passes_through`) unchanged. A failure its node's error handler takes is handled
    (:mod:`graphcore.engine.handlers`): the handler's writes are the task's; a failure saved in an earlier
    attempt goes to the handler without running the node again."""
    saved = saved_handling(step, task)
    if saved is not None:
        return _handle(*saved)
    tries = _Tries(step, task)
    try:
        result = tries.run()
    except BaseException as exc:  # SystemExit, KeyboardInterrupt a node raised fail its task too
        if passes_through(exc):
            raise
        handling = None if exc is tries.hook_error else handler_task(step, task, exc, tries.tries)
        if handling is None:
            raise tries.failure(exc)  # noqa: B904  (a NodeError has exc as its cause already)
        return _handle(*handling)
    if step.done is not None and result.stopped is None:  # a stopped task did not end: nothing to keep
        step.done(result)  # persistence errors (e.g. a dropped Redis connection) propagate unwrapped
    return result


def _handle(step: Step, task: Task) -> TaskWrites:
    """The writes of the error handler's ``task`` (run on an event loop when the handler is async)."""
    if task.node not in step.graph.async_tasks:
        return _call(step, task)
    outcome = run_async_tasks(step, [task])[task.id]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


class _Tries(Tries):
    """One sync task's tries (:class:`graphcore.engine.tries.Tries`): each under the node's timeout (a
    try that has one runs in a thread of its own), repeated under its retry policy."""

    def run(self) -> TaskWrites:
        """Run the task to success or to its final error (the last try's, unchanged)."""
        policy = self.spec.retry
        if policy is None:
            return self.once()
        retrying = policy.retrying(retry_on=self.retry_on, sleep=self._sleep, before_sleep=self.before_sleep)
        result: TaskWrites = retrying(self.once)
        return result

    def once(self) -> TaskWrites:
        """One try; past the node's timeout (or idle timeout), its token is cancelled and
        :class:`NodeTimeoutError` raised."""
        token = self.begin_try()
        if not self.timed:
            return self._attempt(token, None)
        cap_at = self.cap_at()
        late = threading.Event()  # set once the try is abandoned: its stream chunks are dropped
        future = start_thread(lambda: self._attempt(token, late), f"graphq-node-{self.task.node}")
        while True:
            error, wait_s = self.overdue(cap_at)
            if error is not None:
                late.set()
                token.cancel(error.reason)
                raise error
            if wait([future], timeout=wait_s).done:
                return future.result()

    def _attempt(self, token: CancelToken, late: threading.Event | None) -> TaskWrites:
        def emit(chunk: Any) -> None:
            if late is None or not late.is_set():
                self.wrote()
                self.step.writer(self.task, chunk)

        args = (self.step.graph, self.step.cp, self.task, self.step.config, emit, token, self.attempt)
        if self.last_error is not None:  # a retry: the graphs the node invokes start afresh (LangGraph's)
            return retried(run_task, *args)
        return run_task(*args)

    def _sleep(self, seconds: float) -> None:
        """The pause between two tries: ``time.sleep`` as LangGraph's when nothing can cancel the run
        (a root run in process); else a wait on the task's token, which a cancel cuts short."""
        if self.step.cancel is None:
            sleep(seconds)
        elif self.cancel.wait(seconds) and self.last_error is not None:
            raise self.last_error  # cancelled while waiting: no more tries, the task ends with its last error


def run_step(
    graph: GraphSpec,
    cp: Checkpoint,
    config: RunConfig,
    *,
    finished: Mapping[str, TaskWrites] | None = None,
    on_task_done: TaskDone | None = None,
    writer: Writer | None = None,
    cancel: CancelToken | None = None,
    on_retry: RetryHook | None = None,
    handled: Mapping[str, str] | None = None,
    on_handled: TaskDone | None = None,
    only: range | None = None,
) -> StepResult:
    """Run the tasks of the super-step after ``cp``.

    Args:
        graph: the compiled graph.
        cp: the checkpoint the step starts from.
        config: the run's config.
        finished: task id → writes already persisted by an earlier attempt; those tasks are not run (I2).
        on_task_done: called with each task's writes as soon as it finishes (from the task's thread).
        writer: receives ``(task, chunk)`` for each ``get_stream_writer()`` call.
        cancel: the run's cancel token; each task runs with a child of it (``get_cancel_token()``), and a
            cancel also ends a pause between retries at once (the task then fails with its last error).
        on_retry: called (from the task's thread) before each pause between two tries of a node with a
            retry policy, with the task, the number of the try that failed (1 for the first), its error and
            the pause in seconds.
        handled: task id → the failure text saved for a task whose node's error handler took its failure
            in an earlier attempt: only the handler runs (:mod:`graphcore.engine.handlers`).
        on_handled: saves a task's failure record (a ``failure_entry`` with ``handled``) before its error
            handler runs; what it raises fails the task unchanged.
        only: the positions of the step's tasks to run (a batch of a split step,
            :mod:`graphq.worker.step.split`); the result holds those tasks only. None: every task.

    Returns:
        The writes of all tasks in order, and the first error (in task order) if any task failed. Tasks
        that succeeded alongside a failing one still have their writes passed to ``on_task_done``. A node
        past its timeout (G10) fails with :class:`NodeTimeoutError`; its thread may go on running (Python
        cannot stop a thread) but its late result and stream chunks are ignored.
    """
    step, tasks, todo, outcomes = _plan(
        graph, cp, config, finished, on_task_done, writer, cancel, on_retry, handled, on_handled, only
    )
    if has_async_tasks(graph, todo):
        # on one event loop (graphcore.engine.async_step), the sync ones in the pool: one max_concurrency
        outcomes.update(run_async_tasks(step, todo, lambda task: _call(step, task)))
    else:
        outcomes.update(_run_sync(step, todo))
    if step.cache is not None:
        step.cache.remember(todo, outcomes)
    return _collect(tasks, outcomes)


def has_async_tasks(graph: GraphSpec, tasks: Iterable[Task | PendingTask]) -> bool:
    """Whether any of ``tasks`` (prepared, or a checkpoint's next tasks) runs on an event loop: an async
    node, or a node with an async router."""
    return bool(graph.async_tasks) and any(t.node in graph.async_tasks for t in tasks)


def _run_sync(step: Step, todo: Sequence[Task]) -> dict[str, TaskWrites | Exception]:
    """The outcomes of ``todo``, tasks of sync nodes: one in this thread, several in the pool."""
    if len(todo) == 1:
        try:
            return {todo[0].id: _call(step, todo[0])}
        except Exception as exc:
            return {todo[0].id: exc}
    outcomes: dict[str, TaskWrites | Exception] = {}
    for task, future in _submit(step, todo):
        failure = future.exception()
        if failure is not None and not isinstance(failure, Exception):
            raise failure  # graphq's own control flow (a cancel, a cold stop): not a task failure
        outcomes[task.id] = failure if failure is not None else future.result()
    return outcomes


async def arun_step(
    graph: GraphSpec,
    cp: Checkpoint,
    config: RunConfig,
    *,
    finished: Mapping[str, TaskWrites] | None = None,
    on_task_done: TaskDone | None = None,
    writer: Writer | None = None,
    cancel: CancelToken | None = None,
    on_retry: RetryHook | None = None,
    handled: Mapping[str, str] | None = None,
    on_handled: TaskDone | None = None,
) -> StepResult:
    """:func:`run_step` awaited on the running event loop (``ainvoke`` driven on the caller's loop,
    :mod:`graphcore.engine.aio`): the same arguments, result and errors, and no node ever runs on the loop's
    thread. A step with async tasks runs them on that loop (:func:`graphcore.engine.async_step.arun_tasks`,
    its sync tasks in graphq's pool); a step of sync tasks only runs as :func:`run_step` runs it, in a thread
    of its own (as the threaded ``ainvoke`` does: concurrent runs never wait for each other's pool places).
    """
    step, tasks, todo, outcomes = _plan(
        graph, cp, config, finished, on_task_done, writer, cancel, on_retry, handled, on_handled
    )
    if has_async_tasks(graph, todo):
        outcomes.update(await arun_tasks(step, todo, lambda task: _call(step, task)))
    elif todo:
        outcomes.update(await asyncio.wrap_future(start_thread(lambda: _run_sync(step, todo), "graphq-step")))
    if step.cache is not None:
        step.cache.remember(todo, outcomes)
    return _collect(tasks, outcomes)


def _plan(
    graph: GraphSpec,
    cp: Checkpoint,
    config: RunConfig,
    finished: Mapping[str, TaskWrites] | None,
    on_task_done: TaskDone | None,
    writer: Writer | None,
    cancel: CancelToken | None,
    on_retry: RetryHook | None,
    handled: Mapping[str, str] | None,
    on_handled: TaskDone | None,
    only: range | None = None,
) -> tuple[Step, list[Task], list[Task], dict[str, TaskWrites | Exception]]:
    """What a step shares, its tasks, those still to run (not in ``finished``, nor found in the graph's
    cache: :mod:`graphcore.engine.cache`) and the outcomes known (a cache hit is passed to
    ``on_task_done`` here, as a task that finished). ``only``: the positions of the tasks wanted."""
    finished = finished or {}
    tasks = prepare_tasks(graph, cp, remaining_steps(config), only)
    todo = [t for t in tasks if t.id not in finished]
    cache = StepCache(graph, todo) if graph.cache is not None else None
    write = writer or (lambda task, chunk: None)
    step = Step(graph, cp, config, write, on_task_done, cancel, on_retry, cache, handled or {}, on_handled)
    hits = cache.hits() if cache is not None else {}
    for hit in hits.values():
        if step.done is not None:
            step.done(hit)
    known = {t.id: finished[t.id] for t in tasks if t.id in finished}
    return step, tasks, [t for t in todo if t.id not in hits], {**known, **hits}


def _submit(step: Step, todo: Sequence[Task]) -> list[tuple[Task, Future[TaskWrites]]]:
    """Start ``todo`` on the pool of this nesting depth (:func:`graphcore.engine.threads.in_pool`), at most
    ``max_concurrency`` of them at once when the run sets it (LangGraph's option: the next task starts as one
    ends)."""
    limit = step.config.max_concurrency
    gate = threading.BoundedSemaphore(limit) if limit is not None and limit < len(todo) else None
    futures: list[tuple[Task, Future[TaskWrites]]] = []
    for task in todo:
        if gate is not None:
            gate.acquire()
        future = in_pool(_call, step, task)
        if gate is not None:
            future.add_done_callback(_releasing(gate))
        futures.append((task, future))
    return futures


def _releasing(gate: threading.BoundedSemaphore) -> Callable[[Future[TaskWrites]], None]:
    """A done-callback that frees a place of ``gate``."""
    return lambda _: gate.release()


def _collect(tasks: Sequence[Task], outcomes: Mapping[str, TaskWrites | Exception]) -> StepResult:
    results: list[TaskWrites] = []
    failed: list[tuple[Task, Exception]] = []
    for task in tasks:
        outcome = outcomes[task.id]
        if isinstance(outcome, Exception):
            failed.append((task, outcome))
        else:
            results.append(outcome)
    return StepResult(results, failed)
