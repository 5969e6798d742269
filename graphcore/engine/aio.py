"""``ainvoke`` and ``astream``: a compiled graph awaited from a running event loop.

graphq's super-step loop (``CompiledGraph._execute``) is a generator shared by every way of running a graph.
``ainvoke`` drives it in one of two ways; both return and raise exactly what ``invoke`` does:

* **On the caller's loop** (:func:`drive`), when no part of the run waits on I/O or on the caller's loop
  from the loop's own thread: a root run (not a graph invoked inside a task) of a graph with async nodes or
  routers (none routing from START: the input's routing runs in the step loop's own code), without a
  checkpointer or with graphq's in-memory one, ``stream_mode="values"`` and nothing printed (``debug``,
  ``print_mode``). The step loop's own code (applying the input and each step's writes, reducers, the
  in-memory saves) runs on the loop's thread, as LangGraph's does under ``ainvoke``; it yields each
  super-step as a :class:`StepCall`, which the driver runs as an asyncio task of its own
  (:func:`graphcore.engine.step.arun_step`: async nodes on this loop, sync ones in threads) and whose
  result it sends back. No thread is handed anything per node, which is what a chain of async nodes spends
  most in otherwise (about two thread wake-ups per node).
* **In a thread of its own** (:func:`ainvoke`, and every ``astream``): the same loop runs ``invoke`` or
  ``stream`` there and never blocks the caller's loop, whatever the store does (a Redis checkpointer, the
  step job's fenced store); the async nodes still run on the caller's loop (:mod:`graphcore.engine.loops`),
  sync nodes in graphq's pool, as under ``invoke``.

Either way the async nodes run on the caller's loop, as LangGraph's do: objects bound to it (clients, locks,
queues) work inside them, and several async tasks of one super-step run concurrently on it, each in a
copy of the caller's context and an asyncio task of its own.

When the caller stops waiting (its task is cancelled, or it leaves an ``astream`` early: ``break`` then
``aclose()``), the async tasks running for it are cancelled (their nodes see ``asyncio.CancelledError``)
and awaited until they end before the cancel (or ``aclose()``) returns, as LangGraph's; no further
super-step starts; a sync node that is running finishes its step first (Python cannot stop a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator
from typing import Any

from graphcore.engine.config import Scope, run_scope
from graphcore.engine.loops import CallerLoop, caller_loop, use_caller_loop
from graphcore.engine.nested import keep_caller
from graphcore.engine.step import StepResult

__all__ = ["StepCall", "ainvoke", "astream", "drive"]


_DONE = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class StepCall:
    """A super-step of a run driven on the caller's loop (:func:`drive`): the run's loop yields it and gets
    back what ``step()`` returns.

    Args:
        scope: where the run checkpoints (current while the step runs, as ``run_shown`` makes it).
        step: ``arun_step`` with the step's arguments bound.
        stoppable: the step runs async tasks, which are cancelled when the caller stops waiting; a step of
            sync nodes only is left to finish and is committed (Python cannot stop a thread).
    """

    def __init__(
        self, scope: Scope, step: Callable[[], Coroutine[Any, Any, StepResult]], stoppable: bool
    ) -> None:
        self.scope = scope
        self.step = step
        self.stoppable = stoppable


async def drive(run: Generator[Any, Any, None]) -> Any:
    """Run ``run`` (a compiled graph's super-step loop started on the loop) to its end on the running loop,
    as the threaded path runs it: its own code in a copy of the caller's context (what it sets stays
    there), each :class:`StepCall` it yields as an asyncio task of its own (in a copy of that context, as
    LangGraph's tasks: a node's context variables and ``asyncio.current_task()`` are not the caller's; the
    loop serves its other tasks between two steps), whose result is sent back.

    Returns:
        The last item the run yielded other than a step call: ``(events, checkpoint, interrupts)`` of its
        last step; None when it yielded none.

    Raises:
        What the run raises; ``asyncio.CancelledError`` when the awaiting task is cancelled: the async
        tasks of the step in flight are cancelled first (their nodes see ``asyncio.CancelledError``) and
        awaited until they end, as LangGraph's; a step of sync nodes only is not awaited (it finishes and is
        committed), and no further super-step starts.
    """
    caller = CallerLoop(asyncio.get_running_loop())
    ctx = contextvars.copy_context()
    ctx.run(use_caller_loop, caller)  # the loop of the graphs that nodes run synchronously
    last: Any = None
    sent: Any = None
    handed = False
    try:
        while True:
            try:
                item = ctx.run(run.send, sent)
            except StopIteration:
                return last
            if not isinstance(item, StepCall):
                last, sent = item, None
                continue
            own = ctx.copy()  # the step's context: discarded after it, so the scope set here is never reset
            own.run(run_scope(item.scope).__enter__)
            task = asyncio.create_task(item.step(), context=own)
            try:
                sent = await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.cancelled():  # the step's own cancellation (a node raised it)
                    raise
                caller.cancel()
                task.add_done_callback(functools.partial(_finish, ctx, run))
                handed = True  # _finish closes the run
                if item.stoppable and not task.done():
                    task.cancel()
                    await asyncio.wait({task})  # its async nodes have seen their cancellation
                raise
    finally:
        if not handed:
            ctx.run(run.close)


def _finish(ctx: contextvars.Context, run: Generator[Any, Any, None], step: asyncio.Task[StepResult]) -> None:
    """The end of a step whose caller stopped waiting: its outcome is committed as the run would commit it
    (nobody receives the run's events or errors any more), then the run is closed before its next step."""
    try:
        if not step.cancelled() and step.exception() is None:
            ctx.run(run.send, step.result())
    except (StopIteration, Exception):  # the run ended, or failed: nobody awaits it any more
        pass
    finally:
        ctx.run(run.close)


def _start(caller: CallerLoop, target: Callable[[], None]) -> None:
    """Run ``target`` in a new daemon thread, in a copy of the current context with ``caller`` set.

    A thread per call, not a pool: a run awaited inside a node of another run must never wait for a thread
    that its parent run holds.
    """
    ctx = contextvars.copy_context()
    ctx.run(keep_caller)  # the graph's calls count as the awaiting task's (graphcore.engine.nested)

    def run() -> None:
        with caller_loop(caller):
            target()

    threading.Thread(target=ctx.run, args=(run,), name="graphq-aio", daemon=True).start()


def _hand(loop: asyncio.AbstractEventLoop, put: Callable[[Any], None], item: Any) -> None:
    """Pass ``item`` to the caller's loop (dropped when that loop is closed: nobody waits any more)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(put, item)


async def ainvoke(invoke: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``invoke(*args, **kwargs)`` (a compiled graph's ``invoke``) awaited, run in a thread of its own; see
    the module docstring.

    Raises:
        What ``invoke`` raises; ``asyncio.CancelledError`` when the caller's task is cancelled.
    """
    loop = asyncio.get_running_loop()
    caller = CallerLoop(loop)
    done: asyncio.Future[Any] = loop.create_future()

    def settle(item: Any) -> None:
        if done.done():
            return
        if isinstance(item, _Failed):
            done.set_exception(item.error)
        else:
            done.set_result(item)

    def target() -> None:
        try:
            item: Any = invoke(*args, **kwargs)
        except BaseException as exc:  # handed to the awaiting task, which raises it
            item = _Failed(exc)
        _hand(loop, settle, item)

    _start(caller, target)
    try:
        return await done
    except asyncio.CancelledError:
        await caller.stop()
        raise


async def astream(stream: Callable[..., Iterator[Any]], *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
    """``stream(*args, **kwargs)`` (a compiled graph's ``stream``) as an async iterator; see the module
    docstring.

    As lazy as ``stream``: the next super-step runs when the next event is asked for.

    Raises:
        What ``stream`` raises.
    """
    loop = asyncio.get_running_loop()
    caller = CallerLoop(loop)
    events: asyncio.Queue[Any] = asyncio.Queue()
    wanted = threading.Semaphore(0)

    def target() -> None:
        events_of: Iterator[Any] | None = None
        item: Any = None
        try:
            while item is not _DONE and not isinstance(item, _Failed):
                wanted.acquire()
                if caller.cancelled:
                    return
                try:
                    events_of = events_of or iter(stream(*args, **kwargs))
                    item = next(events_of, _DONE)
                except BaseException as exc:  # handed to the consumer, which raises it
                    item = _Failed(exc)
                _hand(loop, events.put_nowait, item)
        finally:
            close = getattr(events_of, "close", None)
            if close is not None:  # a generator left early: its run stops between two super-steps
                close()

    _start(caller, target)
    try:
        while True:
            wanted.release()
            item = await events.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        wanted.release()  # the producer, waiting for a pull, sees the cancel and closes the stream
        await caller.stop()
