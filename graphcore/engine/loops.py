"""Which event loop runs async nodes and routers, and how synchronous code waits for them.

graphq's step loop is synchronous (the in-process executor and the queue worker share
:func:`graphcore.engine.step.run_step`); the async tasks of a super-step are run as one coroutine on an
event loop, chosen by :func:`run_coroutine`:

1. the caller's loop, when the run was started by ``ainvoke``/``astream`` from it (:func:`caller_loop`):
   async nodes run on the loop that awaits the run, as LangGraph's do, while graphq's step loop waits in a
   thread of its own so that the caller's loop is never blocked (a root ``ainvoke`` whose store does no
   I/O drives its step loop on the caller's loop instead and awaits its steps there,
   :func:`graphcore.engine.aio.drive`: this function is then only called by sync code in threads);
2. otherwise (``invoke``, ``stream``, a queue worker) a loop kept per thread (and per process, so a forked
   worker never shares its parent's), reused step after step;
3. when the waiting thread already runs a loop (a synchronous ``invoke`` called from a coroutine), a new loop
   in a thread of its own, for that one coroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import os
import threading
from collections.abc import Awaitable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from graphcore.engine.threads import start_thread
from graphcore.errors import Cancelled

__all__ = [
    "CallerLoop",
    "caller_loop",
    "is_async_callable",
    "raise_if_abandoned",
    "run_coroutine",
    "use_caller_loop",
]

T = TypeVar("T")


class CallerLoop:
    """The event loop that awaits a run (``ainvoke``, ``astream``) and the steps it runs for it.

    Args:
        loop: the caller's running loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.cancelled = False
        self._running: set[asyncio.Task[Any]] = set()
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """The caller stopped waiting (its task was cancelled): cancel the async tasks running for it (their
        nodes see ``asyncio.CancelledError``) and every later one; the run then ends with that error."""
        with self._lock:
            self.cancelled = True
            running = list(self._running)
        for task in running:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing runs on it any more
                self.loop.call_soon_threadsafe(task.cancel)

    async def stop(self) -> None:
        """:meth:`cancel`, awaited on the caller's loop: it returns once the async tasks running for the
        caller have ended (their nodes' ``except asyncio.CancelledError`` and ``finally`` blocks have run),
        as LangGraph's ``ainvoke`` and ``astream`` return only then. A task that had not started yet never
        runs its node."""
        self.cancel()
        with self._lock:
            running = list(self._running)
        if running:
            await asyncio.wait(running)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the caller's loop (in a copy of this thread's context) and wait for it here.

        A lock handed between the two threads, not ``run_coroutine_threadsafe``: a quarter less time per
        super-step, which is what ``ainvoke`` of a chain of async nodes spends most in.
        """
        done = threading.Lock()
        done.acquire()
        started: list[asyncio.Task[T]] = []

        def finished(task: asyncio.Task[T]) -> None:
            with self._lock:
                self._running.discard(task)
            done.release()

        def start() -> None:
            task = self.loop.create_task(coro)
            started.append(task)
            with self._lock:
                self._running.add(task)
                if self.cancelled:
                    task.cancel()
            task.add_done_callback(finished)

        self.loop.call_soon_threadsafe(start)
        done.acquire()
        return started[0].result()


_caller: contextvars.ContextVar[CallerLoop | None] = contextvars.ContextVar(
    "graphq_caller_loop", default=None
)
_local = threading.local()


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine: an ``async def`` function, a ``functools.partial`` of
    one, or an object whose ``__call__`` is ``async def``."""
    call = getattr(type(fn), "__call__", None)  # noqa: B004  (the class's __call__, not callable())
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


@contextmanager
def caller_loop(caller: CallerLoop) -> Iterator[None]:
    """Run the async tasks of the runs started in the block on ``caller``'s loop (the one awaiting them)."""
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


def use_caller_loop(caller: CallerLoop) -> None:
    """Make ``caller`` the loop of the runs started from now on in this context: a context copied for one
    run (:func:`graphcore.engine.aio.drive`), so nothing resets it."""
    _caller.set(caller)


def raise_if_abandoned() -> None:
    """Stop a run whose caller stopped waiting (its ``ainvoke`` task was cancelled) before its next
    super-step; a no-op outside ``ainvoke``/``astream``.

    Raises:
        Cancelled: the caller's task was cancelled (nobody receives the error: it only ends the run).
    """
    caller = _caller.get()
    if caller is not None and caller.cancelled:
        raise Cancelled("the task awaiting the run was cancelled")


def run_coroutine(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` (a coroutine, a future) to its end and return its result (or raise its error),
    blocking this thread.

    It runs in a copy of the current context, on the loop described in the module docstring.
    """
    coro = _awaited(awaitable)
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    caller = _caller.get()
    if caller is not None and caller.loop is not running and caller.loop.is_running():
        return caller.run(coro)
    if running is None:
        return _own_loop().run_until_complete(coro)
    return start_thread(lambda: asyncio.run(coro), "graphq-loop").result()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _own_loop() -> asyncio.AbstractEventLoop:
    """This thread's loop (a new one in a forked process: an inherited loop shares its parent's selector)."""
    pid = os.getpid()
    if getattr(_local, "pid", None) != pid or _local.loop.is_closed():
        _local.loop, _local.pid = asyncio.new_event_loop(), pid
    loop: asyncio.AbstractEventLoop = _local.loop
    return loop
