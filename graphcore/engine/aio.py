"""``ainvoke`` and ``astream``: a compiled graph awaited from a running event loop.

graphq's super-step loop (``CompiledGraph._execute``) is a generator shared by every way of running a graph.
``ainvoke`` drives it in one of two ways; both return and raise exactly what ``invoke`` does:

* **On the caller's loop** (:func:`drive`), when nothing in the run can block the loop: a root run (not a
  graph invoked inside a task) of a graph with async nodes or routers, without a checkpointer or with
  graphq's in-memory one, ``stream_mode="values"`` and nothing logged (``debug``, ``print_mode``). The loop
  yields each super-step as a :class:`StepCall`; the driver awaits it here
  (:func:`graphcore.engine.step.arun_step`: async nodes on this loop, sync ones in graphq's pool) and sends
  its result back. No thread is handed anything per step, which is what a chain of async nodes spends most
  in otherwise (about two thread wake-ups per node).
* **In a thread of its own** (:func:`ainvoke`, and every ``astream``): the same loop runs ``invoke`` or
  ``stream`` there and never blocks the caller's loop, whatever the store does (a Redis checkpointer, the
  step job's fenced store); the async nodes still run on the caller's loop (:mod:`graphcore.engine.loops`),
  sync nodes in graphq's pool, as under ``invoke``.

Either way the async nodes run on the caller's loop, as LangGraph's do: objects bound to it (clients, locks,
queues) work inside them, and several async tasks of one super-step run concurrently on it.

When the caller stops waiting (its task is cancelled, or it leaves an ``astream`` early), the async tasks
running for it are cancelled (their nodes see ``asyncio.CancelledError``) and no further super-step starts;
a sync node that is running finishes its step first (Python cannot stop a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

from graphcore.engine.config import Scope, run_scope
from graphcore.engine.loops import CallerLoop, caller_loop
from graphcore.engine.nested import keep_caller
from graphcore.engine.step import StepResult

__all__ = ["StepCall", "ainvoke", "astream", "drive"]


_DONE = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class StepCall:
    """A super-step of a run driven on the caller's loop (:func:`drive`): the run's loop yields it and gets
    back what :meth:`result` returns.

    Args:
        scope: where the run checkpoints (current while the step runs, as ``run_shown`` makes it).
        step: ``arun_step`` with the step's arguments bound.
    """

    def __init__(self, scope: Scope, step: Callable[[], Awaitable[StepResult]]) -> None:
        self.scope = scope
        self.step = step

    async def result(self) -> StepResult:
        """The step's outcome, awaited on the running loop."""
        with run_scope(self.scope):
            return await self.step()


async def drive(run: Generator[Any, Any, None], take: Callable[[Any], None]) -> None:
    """Run ``run`` (a compiled graph's super-step loop started on the loop) to its end on the running loop:
    each :class:`StepCall` it yields is awaited and its result sent back; every other item (a step's
    ``(events, checkpoint, interrupts)``) is passed to ``take``.

    Raises:
        What the run raises; ``asyncio.CancelledError`` when the awaiting task is cancelled (the async
        tasks started for it are cancelled too, and the run is closed between two super-steps).
    """
    caller = CallerLoop(asyncio.get_running_loop())  # the loop of graphs run synchronously inside nodes
    with caller_loop(caller):
        try:
            sent: Any = None
            while True:
                try:
                    item = run.send(sent)
                except StopIteration:
                    return
                if isinstance(item, StepCall):
                    sent = await item.result()
                else:
                    take(item)
                    sent = None
        except asyncio.CancelledError:
            caller.cancel()
            raise
        finally:
            run.close()


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
        caller.cancel()
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
        caller.cancel()
        wanted.release()  # the producer, waiting for a pull, sees the cancel and closes the stream
