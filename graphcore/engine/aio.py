"""``ainvoke`` and ``astream``: a compiled graph awaited from a running event loop.

graphq's super-step loop is synchronous (the queue worker runs it too), so the awaitable forms run that
same loop, ``invoke`` or ``stream``, in a thread of their own and never block the caller's loop; they return
and yield exactly what ``invoke`` and ``stream`` do. The async nodes and routers of the run execute on the
caller's loop, as LangGraph's do (:mod:`graphcore.engine.loops`): objects bound to that loop (clients,
locks, queues) work inside them, and several async tasks of one super-step run concurrently on it. Sync
nodes run in graphq's thread pool, as under ``invoke``.

When the caller stops waiting (its task is cancelled, or it leaves an ``astream`` early), the async tasks
running for it are cancelled (their nodes see ``asyncio.CancelledError``) and no further super-step starts;
a sync node that is running finishes its step first (Python cannot stop a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from graphcore.engine.loops import CallerLoop, caller_loop
from graphcore.engine.nested import keep_caller

__all__ = ["ainvoke", "astream"]


_DONE = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


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
    """``invoke(*args, **kwargs)`` (a compiled graph's ``invoke``), awaited; see the module docstring.

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
