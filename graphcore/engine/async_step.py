"""The async tasks of a super-step (``async def`` nodes, nodes with an async router): run concurrently, as
one coroutine on one event loop (:func:`graphcore.engine.loops.run_coroutine` picks it), each task an
``asyncio`` task in its own context (``get_config()``, ``get_stream_writer()``, ``get_cancel_token()`` and
``interrupt()`` work as in a sync node).

:func:`graphcore.engine.step.run_step` hands a step that has any here whole: its sync tasks start from the
loop in graphq's thread pool (as run_step would run them), so that ``max_concurrency`` counts all of them.
The semantics are those of a sync task (:mod:`graphcore.engine.step`): the same retry policy (G9, tenacity's
``AsyncRetrying`` with the policy's stop, wait and predicate), the timeout per try (G10), the same errors.
Where a sync node can only be asked to stop, an async one is stopped: when its cancel token is set (an
interrupting cancel of its run, X3) or it passes its timeout, its asyncio task is cancelled, so the node
sees ``asyncio.CancelledError`` at its ``await``; the task then ends with
:class:`~graphcore.errors.Cancelled` or :class:`~graphcore.errors.NodeTimeoutError` as a sync one does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from tenacity import AsyncRetrying

from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import (
    Task,
    call_node,
    call_router,
    destinations,
    node_run,
    normalise,
    paused_writes,
    route_values,
    routing,
    task_setup,
    task_spec,
    with_pushed,
)
from graphcore.engine.cancel import CancelToken
from graphcore.engine.compiled import GraphSpec, NodeSpec
from graphcore.engine.config import RunConfig, TaskContext, TryInfo, remaining_steps, task_context
from graphcore.engine.handlers import handler_task, saved_handling
from graphcore.engine.interrupts import GraphInterrupt
from graphcore.engine.loops import run_coroutine
from graphcore.engine.nested import aretried
from graphcore.engine.retry import asleep
from graphcore.engine.threads import in_pool, start_thread
from graphcore.engine.tries import Step, Tries, passes_through
from graphcore.errors import Cancelled, NodeTimeoutError
from graphcore.types import PendingTask, TaskWrites

__all__ = ["arun_task", "arun_tasks", "run_async_tasks"]

T = TypeVar("T")

POLL_S = 0.05
"""How often the tasks' cancel tokens are looked at while async tasks run, seconds (as CancelToken.wait)."""


def run_async_tasks(
    step: Step, tasks: Sequence[Task], call_sync: Callable[[Task], TaskWrites] | None = None
) -> dict[str, TaskWrites | Exception]:
    """Run ``tasks`` concurrently on an event loop; block until all ended.

    ``tasks`` may include sync tasks (not in the graph's ``async_tasks``): each runs as ``call_sync(task)``
    in graphq's pool of this depth, as ``run_step`` runs one, and counts under the same ``max_concurrency``.

    Returns:
        Task id → its writes, or the error it failed with (as :func:`graphcore.engine.step.run_step`
        records a sync task's: a :class:`NodeError`, a graphq error, or ``on_task_done``'s own error).

    Raises:
        Cancelled: a task was cancelled (the first such task in order), after every task ended; any other
            error that is not an ``Exception`` likewise.
    """
    return _checked(run_coroutine(_run_all(step, tasks, call_sync)))


async def arun_tasks(
    step: Step, tasks: Sequence[Task], call_sync: Callable[[Task], TaskWrites] | None = None
) -> dict[str, TaskWrites | Exception]:
    """:func:`run_async_tasks` awaited on the running loop (the tasks run on it): the same result and
    errors."""
    return _checked(await _run_all(step, tasks, call_sync))


def _checked(outcomes: dict[str, TaskWrites | BaseException]) -> dict[str, TaskWrites | Exception]:
    """``outcomes`` of the tasks; the first that is neither writes nor an ``Exception`` is raised."""
    done: dict[str, TaskWrites | Exception] = {}
    for task_id, outcome in outcomes.items():
        if not isinstance(outcome, Exception | TaskWrites):
            raise outcome
        done[task_id] = outcome
    return done


async def _run_all(
    step: Step, tasks: Sequence[Task], call_sync: Callable[[Task], TaskWrites] | None
) -> dict[str, TaskWrites | BaseException]:
    watch = _Watch() if step.cancel is not None else None
    watcher = asyncio.ensure_future(watch.run()) if watch is not None else None

    def outcome(task: Task) -> Awaitable[TaskWrites | BaseException]:
        if call_sync is not None and task.node not in step.graph.async_tasks:
            return _pooled(call_sync, task)
        return _outcome(step, task, watch)

    try:
        if len(tasks) == 1:  # awaited here: no task of its own, two loop iterations where gather takes five
            results = [await outcome(tasks[0])]
        else:
            limit = step.config.max_concurrency
            gate = asyncio.Semaphore(limit) if limit is not None and limit < len(tasks) else None
            results = await asyncio.gather(*(_gated(gate, outcome(task)) for task in tasks))
    finally:
        if watcher is not None:
            watcher.cancel()
    return {task.id: result for task, result in zip(tasks, results, strict=True)}


async def _gated(gate: asyncio.Semaphore | None, outcome: Awaitable[T]) -> T:
    """``outcome`` awaited within the run's ``max_concurrency`` (counted among the step's tasks)."""
    if gate is None:
        return await outcome
    async with gate:
        return await outcome


async def _pooled(call: Callable[[Task], TaskWrites], task: Task) -> TaskWrites | BaseException:
    """A sync task's writes, or what it failed with: ``call(task)`` in graphq's pool, awaited."""
    try:
        return await asyncio.wrap_future(in_pool(call, task))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # collected like an async task's (run_async_tasks raises the non-Exceptions)
        return exc


async def _outcome(step: Step, task: Task, watch: _Watch | None) -> TaskWrites | BaseException:
    """One task's writes, or what it failed with (never raised: the step collects them in task order)."""
    saved = saved_handling(step, task)
    if saved is not None:  # its failure was saved before its handler ran: only the handler runs again
        return await _outcome(*saved, watch)
    tries = _Tries(step, task, watch)
    try:
        result = await tries.run()
    except asyncio.CancelledError as exc:
        current = asyncio.current_task()
        if current is not None and current.cancelling():  # the step itself is cancelled (its ainvoke was)
            raise
        return tries.failure(exc)  # the node raised it itself: its failure, as LangGraph's NodeCancelledError
    except BaseException as exc:  # SystemExit, KeyboardInterrupt a node raised fail its task too
        if passes_through(exc):
            return exc
        try:
            handling = None if exc is tries.hook_error else handler_task(step, task, exc, tries.tries)
        except Exception as saving:  # saving the failure first failed (e.g. Redis), unwrapped as step.done's
            return saving
        if handling is None:
            return tries.failure(exc)
        return await _outcome(*handling, watch)  # the handler's writes are the task's (engine.handlers)
    if step.done is not None and result.stopped is None:  # a stopped task did not end: nothing to keep
        try:
            step.done(result)
        except Exception as exc:  # persistence errors (e.g. a dropped Redis connection), unwrapped
            return exc
    return result


class _Watch:
    """Cancels the asyncio task of a running try once its cancel token is set (X3)."""

    def __init__(self) -> None:
        self.running: dict[asyncio.Task[Any], CancelToken] = {}
        self.fired: set[asyncio.Task[Any]] = set()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            for task, token in list(self.running.items()):
                if token.cancelled and task not in self.fired:
                    self.fired.add(task)
                    task.cancel(token.reason)


class _Tries(Tries):
    """One async task's tries (:class:`graphcore.engine.tries.Tries`), as :mod:`graphcore.engine.step`'s for
    a sync one."""

    def __init__(self, step: Step, task: Task, watch: _Watch | None) -> None:
        super().__init__(step, task)
        self.watch = watch

    async def run(self) -> TaskWrites:
        policy = self.spec.retry
        if policy is None:
            return await self.once()
        sync = policy.retrying(retry_on=self.retry_on, before_sleep=self.before_sleep)
        retrying = AsyncRetrying(
            sleep=self._sleep,
            stop=sync.stop,
            wait=sync.wait,
            retry=sync.retry,
            before_sleep=sync.before_sleep,
            reraise=True,
        )
        result: TaskWrites = await retrying(self.once)
        return result

    async def once(self) -> TaskWrites:
        """One try; past the node's timeout (or idle timeout), its token is cancelled and
        :class:`NodeTimeoutError` raised."""
        token = self.begin_try()
        current = asyncio.current_task()
        assert current is not None  # a coroutine of _run_all's gather
        if self.watch is not None:
            self.watch.running[current] = token
        late: list[NodeTimeoutError | None] = [None]  # set once the try is abandoned: its chunks are dropped
        timer = self._timer(current, token, late)
        try:
            result = await self._attempt(token, late)
        except asyncio.CancelledError:
            if late[0] is not None or (self.watch is not None and current in self.watch.fired):
                current.uncancel()  # ours, handled here: the task goes on (to its error, or a retry)
                raise self._stopped(token, late) from None
            raise
        finally:
            if timer:
                timer[0].cancel()
            if self.watch is not None:
                self.watch.running.pop(current, None)
                self.watch.fired.discard(current)
        if late[0] is not None:  # the node caught its cancellation and returned after its timeout: late
            raise self._stopped(token, late)
        return result

    def _timer(
        self, current: asyncio.Task[Any], token: CancelToken, late: list[NodeTimeoutError | None]
    ) -> list[asyncio.TimerHandle]:
        """The pending check of the node's timeouts (empty without one): when the try is overdue, the token is
        set, then the task cancelled (the node sees both); until then the check comes again."""
        if not self.timed:
            return []
        cap_at = self.cap_at()
        loop = asyncio.get_running_loop()
        pending: list[asyncio.TimerHandle] = []

        def check() -> None:
            error, wait_s = self.overdue(cap_at)
            if error is None:
                pending[0] = loop.call_later(wait_s, check)
                return
            late[0] = error
            token.cancel(error.reason)
            if self.watch is not None:
                self.watch.fired.add(current)  # cancelled here, not again by the watch
            current.cancel()

        pending.append(loop.call_later(self.overdue(cap_at)[1], check))
        return pending

    def _stopped(self, token: CancelToken, late: list[NodeTimeoutError | None]) -> BaseException:
        """The error of a try stopped by its timeout or by a cancel."""
        return late[0] if late[0] is not None else Cancelled(token.reason)

    async def _attempt(self, token: CancelToken, late: list[NodeTimeoutError | None]) -> TaskWrites:
        def emit(chunk: Any) -> None:
            if late[0] is None:
                self.wrote()
                self.step.writer(self.task, chunk)

        args = (self.step.graph, self.step.cp, self.task, self.step.config, emit, token, self.attempt)
        if self.last_error is not None:  # a retry: the graphs the node invokes start afresh (LangGraph's)
            return await aretried(lambda: arun_task(*args))
        return await arun_task(*args)

    async def _sleep(self, seconds: float) -> None:
        """The pause between two tries: ``asyncio.sleep`` as LangGraph's when nothing but the awaiting
        task can cancel the run (a root run in process); else a cancel of the task's token ends it at
        once, and the task with its last error."""
        if self.step.cancel is None:
            await asleep(seconds)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while not self.cancel.cancelled and (left := deadline - loop.time()) > 0:
            await asyncio.sleep(min(POLL_S, left))
        if self.cancel.cancelled and self.last_error is not None:
            raise self.last_error


async def arun_task(
    graph: GraphSpec,
    cp: Checkpoint,
    task: Task,
    config: RunConfig,
    writer: Callable[[Any], None],
    cancel: CancelToken | None = None,
    attempt: TryInfo | None = None,
) -> TaskWrites:
    """:func:`graphcore.engine.algo.run_task` for an async task: the node's and the routers' coroutines are
    awaited; a sync node (one with an async router) runs off the loop as a sync task's try does, in graphq's
    pool of this nesting depth (a node with a timeout: in a thread of its own), so it holds neither the loop
    nor a thread of its default executor, which the graphs the node invokes (and the application) may need.

    Raises:
        InvalidUpdateError: the node returned something that is not a valid update.
        Cancelled: ``cancel`` was set before the node started.
    """
    ctx = task_setup(graph, cp, task, config, writer, cancel, attempt)
    try:  # the node's run hears the pause (on_chain_error), as LangGraph's
        with node_run(ctx, task.input) as shown, task_context(ctx):
            spec = task_spec(graph, task)
            if task.node in graph.async_nodes:
                output = await call_node(spec, task, ctx.config)
            else:
                output = await asyncio.wrap_future(_off_loop(spec, task, ctx.config))
            shown(output)
            writes, goto = normalise(graph, task.node, output)
            writes = with_pushed(graph, ctx, writes)
            remaining = remaining_steps(ctx.config)
            goto += await _aroutes(graph, task.node, cp.channel_values, writes, remaining, ctx)
    except GraphInterrupt as paused:
        return paused_writes(task, ctx, paused)
    return TaskWrites(task.id, task.node, writes, goto, from_subgraph=ctx.from_subgraph)


def _off_loop(spec: NodeSpec, task: Task, config: RunConfig) -> Future[Any]:
    """A sync node's call started off the loop as a sync task's try runs: in graphq's pool of this depth,
    or, when the node has a timeout, in a thread of its own (one stuck past its timeout holds no pool
    thread)."""
    if spec.timeout_s is None and spec.idle is None:
        return in_pool(call_node, spec, task, config)
    return start_thread(lambda: call_node(spec, task, config), f"graphq-node-{task.node}", deeper=True)


async def _aroutes(
    graph: GraphSpec,
    node: str,
    values: Mapping[str, Any],
    writes: Sequence[tuple[str, Any]],
    remaining: int,
    ctx: TaskContext,
) -> list[PendingTask]:
    """``node``'s conditional edges on ``values`` (the state before the step; with the managed values of a
    super-step leaving ``remaining`` steps), each router awaited when it is async, and its call reported to
    the callbacks of the node's task ``ctx`` (:func:`~graphcore.engine.algo.router_run`)."""
    branches = graph.branches_from.get(node, ())
    if not branches:
        return []
    local = route_values(graph, node, values, writes, remaining)
    out: list[PendingTask] = []
    for branch in branches:
        with routing(ctx, graph, branch, local) as (state, shown):
            chosen = call_router(branch, state)
            if inspect.isawaitable(chosen):
                chosen = await chosen
            shown(chosen)
        out += destinations(graph, branch, chosen)
    return out
