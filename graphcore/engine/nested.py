"""Graphs a node invokes and questions a task asks (G6, G7): where each call checkpoints, and the refusal of
pauses made from several threads of one task.

* A node may invoke compiled graphs (``inner.invoke(...)`` in its body, or a subgraph node). Each call
  checkpoints in the parent's thread under a namespace of its own: ``parent_ns|node:task_id`` for the task's
  first call, ``...|node:task_id|N`` for its (N+1)-th, as LangGraph numbers them. A task that runs again
  (resumed, or after a failure) makes its calls in the same order, so each finds its own earlier state.
  A try of a node that its retry policy started again is a new execution, as in LangGraph: the graphs it
  invokes start afresh (:func:`retried`, :func:`fresh_calls`).
* Answers are matched to a task's questions by call order. Threads (or asyncio tasks) of one task do not
  keep an order, so a task that pauses from more than one of them is refused with
  :class:`ConcurrentInterruptError` rather than risk giving one thread's answer to another.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from graphcore.engine.checkpointer import task_ns
from graphcore.engine.config import TaskContext, current_task_or_none
from graphcore.errors import PermanentError

__all__ = [
    "ConcurrentInterruptError",
    "aretried",
    "call_namespace",
    "caller",
    "fresh_calls",
    "keep_caller",
    "refusal",
    "retried",
]

T = TypeVar("T")

_retry: contextvars.ContextVar[bool] = contextvars.ContextVar("graphq_retry", default=False)


class ConcurrentInterruptError(PermanentError, RuntimeError):
    """A task asked questions (``interrupt()``, or a graph it invoked paused) from more than one thread or
    asyncio task: graphq matches answers by call order, which concurrent callers do not keep, so it refuses
    rather than misroute an answer. Also a ``RuntimeError``."""

    def __init__(self, node: str, callers: int) -> None:
        super().__init__(
            f"node {node!r} paused from {callers} threads (or asyncio tasks) of one task: interrupt() and "
            "the graphs a node invokes must pause from one thread per task, because answers are matched to "
            "questions by call order, which concurrent threads do not keep; ask once from one thread (one "
            "interrupt() with every question), or give each question a task of its own with Send"
        )
        self.node = node
        self.callers = callers


_origin: contextvars.ContextVar[tuple[TaskContext, tuple[int, int]] | None] = contextvars.ContextVar(
    "graphq_origin", default=None
)
"""In a thread that runs a graph for an awaiting task (``ainvoke``), the task context that awaits it and the
caller it counts as (:func:`keep_caller`)."""


def caller(task: TaskContext | None = None) -> tuple[int, int]:
    """Who is calling on behalf of ``task``: the thread, and the asyncio task within it (0 outside one); in
    a thread running ``ainvoke`` for ``task``, the asyncio task that awaits it."""
    origin = _origin.get()
    if origin is not None and origin[0] is task:
        return origin[1]
    try:
        current = asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        current = None
    return threading.get_ident(), 0 if current is None else id(current)


def keep_caller() -> None:
    """Run in the copy of the context that a thread will run an awaited graph in (``ainvoke``, ``astream``),
    from the awaiting task: that graph's calls count as made by the awaiting task, which is the caller its
    ``interrupt()`` calls have too."""
    task = current_task_or_none()
    if task is not None:
        _origin.set((task, caller(task)))


def call_namespace(parent_ns: str, task: TaskContext) -> str:
    """The checkpoint namespace of the graph that the running ``task`` invokes now (its next call, counted
    across threads), below the parent's namespace ``parent_ns``; the caller is recorded (:func:`refusal`)."""
    index = task.next_graph_call(caller(task))
    base = task_ns(parent_ns, task.node, task.task_id)
    return base if index == 0 else f"{base}|{index}"


def refusal(task: TaskContext) -> ConcurrentInterruptError | None:
    """The error for a task that paused having asked or invoked graphs from several callers, else None."""
    callers = len(task.callers)
    return ConcurrentInterruptError(task.node, callers) if callers > 1 else None


def retried(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` as a retry of a task (its retry policy's second or later try): the graphs it invokes,
    at any depth, start afresh instead of going on from the namespaces the failed try left."""
    token = _retry.set(True)
    try:
        return fn(*args)
    finally:
        _retry.reset(token)


async def aretried(make: Callable[[], Awaitable[T]]) -> T:
    """:func:`retried` for an async task: awaits ``make()`` as a retry."""
    token = _retry.set(True)
    try:
        return await make()
    finally:
        _retry.reset(token)


def fresh_calls() -> bool:
    """Whether graphs invoked now start afresh (inside a retried try, :func:`retried`)."""
    return _retry.get()
