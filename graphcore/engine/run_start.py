"""What an in-process run refuses before it starts, as LangGraph's loop does: a graph with a checkpointer run
without a thread, no input with nothing to continue, an answer without a checkpointer; and what a run does
with an answer nothing waits for (it warns and drops it, as LangGraph drops it).

:meth:`CompiledGraph._placement <graphcore.engine.executor.CompiledGraph._placement>` and ``_start`` call
these; a queued run always has a thread (the client makes one) and is not checked here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from graphcore.engine.config import RunConfig
from graphcore.errors import EmptyInputError, NoCheckpointerError, ThreadRequiredError, warn_caller
from graphcore.types import START, Command

__all__ = ["check_thread", "empty_input", "nothing_to_resume", "unasked"]


def check_thread(
    checkpointer: Any, defaults: RunConfig, config: Mapping[str, Any] | RunConfig | None
) -> None:
    """Refuse a root run of a graph compiled with a checkpoint store but given no thread id, neither in
    ``config`` (``configurable``'s ``thread_id``, graphq's top-level one, a RunConfig's) nor in the graph's
    ``defaults`` (LangGraph's ``ValueError``); ``checkpointer`` None, True or False needs none.

    Raises:
        ThreadRequiredError: (a ``ValueError``) naming ``thread_id`` and how to pass it.
    """
    if checkpointer in (None, True, False) or defaults.thread_id or _thread_of(config):
        return
    raise ThreadRequiredError(
        "Checkpointer requires a thread_id: a graph compiled with a checkpointer runs on a thread; pass "
        "config={'configurable': {'thread_id': '<id>'}} (or RunConfig(thread_id='<id>'))"
    )


def _thread_of(config: Mapping[str, Any] | RunConfig | None) -> Any:
    if config is None or isinstance(config, RunConfig):
        return config.thread_id if config is not None else None
    return (config.get("configurable") or {}).get("thread_id") or config.get("thread_id")


def empty_input(has_store: bool, thread: str) -> EmptyInputError:
    """The error for ``invoke(None, ...)`` with nothing to continue: no checkpointer, or a thread without
    a checkpoint. Its message starts with LangGraph's, ``Received no input for __start__``."""
    why = f"thread {thread!r} has no checkpoint to continue" if has_store else "the graph has no checkpointer"
    return EmptyInputError(
        f"Received no input for {START}: {why}; pass the run's input (invoke(None, config) continues a "
        "thread's paused, stopped or failed run)"
    )


def nothing_to_resume() -> NoCheckpointerError:
    """The error for ``Command(resume=...)`` without a checkpointer: a ``RuntimeError``, as LangGraph's, and
    a ``ValueError``; the message says what to add."""
    return NoCheckpointerError(
        "Command(resume=...) needs a checkpointer: compile(checkpointer=InMemorySaver()) and run on a "
        "thread, config={'configurable': {'thread_id': '<id>'}}"
    )


def unasked(command: Command[Any], thread: str, fresh: bool) -> Any:
    """What a run given ``Command(resume=...)`` on a thread where no interrupt waits for an answer (a fresh
    thread, or one whose run ended) starts with instead, as LangGraph's: the command without its answer,
    or when it holds nothing else ``{}`` (a fresh thread: the graph runs from its start) or None (an ended
    thread: nothing runs, the state is returned). Warns (``UserWarning``) that the answer is dropped."""
    why = "has no checkpoint, so the graph runs from its start" if fresh else "has ended, so nothing runs"
    warn_caller(
        f"Command(resume=...) on thread {thread!r}: no interrupt waits for an answer, the answer is dropped "
        f"(the thread {why})"
    )
    rest = dataclasses.replace(command, resume=None)
    if rest.update is not None or rest.goto:
        return rest
    return {} if fresh else None
