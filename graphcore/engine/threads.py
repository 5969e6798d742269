"""The threads tasks run in: a pool per nesting depth for a super-step's sync work, and a thread of its own
for work that may outlive its caller's wait (a timed node's try, a loop run for one coroutine).

A task that runs a graph (a subgraph node, ``inner.invoke(...)`` in a node, a ToolNode) holds its thread
while that graph's tasks run. Those run one depth deeper, in the next pool (:func:`in_pool` counts the depth
in a context variable), so a thread only ever waits on threads of a deeper pool and nesting never deadlocks,
however many such tasks run at once. Nothing of graphq's waits in a thread of an event loop's default
executor, which a nested graph would need as well (and the application shares).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from graphcore.settings import get_settings

__all__ = ["in_pool", "start_thread"]

T = TypeVar("T")

_pools: dict[int, ThreadPoolExecutor] = {}
_pool_lock = threading.Lock()
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("graphq_step_depth", default=0)
"""How many pool threads the running code is nested in: 0 outside any task, d + 1 in a task of pool d."""


def _pool_at(depth: int) -> ThreadPoolExecutor:
    """The pool of nesting ``depth`` (``GRAPHQ_MAX_WORKERS_PER_STEP`` threads, started as needed), made on
    first use."""
    pool = _pools.get(depth)
    if pool is None:
        with _pool_lock:
            pool = _pools.get(depth)
            if pool is None:
                pool = ThreadPoolExecutor(
                    get_settings().max_workers_per_step, thread_name_prefix=f"graphq-task-{depth}"
                )
                _pools[depth] = pool
    return pool


def in_pool(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Start ``fn(*args)`` on the pool of the current nesting depth, in a copy of the current context one
    depth deeper (the graphs it runs use the next pool); its future."""
    depth = _depth.get()
    ctx = contextvars.copy_context()
    ctx.run(_depth.set, depth + 1)
    return _pool_at(depth).submit(ctx.run, fn, *args)


def start_thread(fn: Callable[[], T], name: str, *, deeper: bool = False) -> Future[T]:
    """Run ``fn`` in a new daemon thread named ``name`` (in a copy of the current context, one depth deeper
    when ``deeper``: ``fn`` is a task, as one :func:`in_pool` starts); its future.

    For work the caller may stop waiting for (Python cannot kill a thread, so a timed node that ignores its
    cancel token runs on past its timeout): a daemon thread neither holds a pool worker nor blocks the
    interpreter's exit (a pool's threads are joined at exit).
    """
    future: Future[T] = Future()
    future.set_running_or_notify_cancel()  # running from now on: cancel() can no longer drop its result
    ctx = contextvars.copy_context()
    if deeper:
        ctx.run(_depth.set, _depth.get() + 1)

    def target() -> None:
        try:
            future.set_result(ctx.run(fn))
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            future.set_exception(exc)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future
