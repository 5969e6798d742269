"""What an in-process run refuses before it starts, as LangGraph's loop does: a graph with a checkpointer run
without a thread, no input with nothing to continue, an answer with nothing waiting for it.

:meth:`CompiledGraph._placement <graphcore.engine.executor.CompiledGraph._placement>` and ``_start`` call
these; a queued run always has a thread (the client makes one) and is not checked here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphcore.engine.config import RunConfig
from graphcore.errors import EmptyInputError, InvalidUpdateError, NoCheckpointerError, ThreadRequiredError
from graphcore.types import START

__all__ = ["check_thread", "empty_input", "nothing_to_resume"]


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


def nothing_to_resume(has_store: bool, thread: str) -> NoCheckpointerError | InvalidUpdateError:
    """The error for ``Command(resume=...)`` without a checkpointer (a ``RuntimeError``, as LangGraph's, and
    a ``ValueError``) or on a thread without a checkpoint (graphq stays stricter than LangGraph, which runs
    the graph from its start and drops the answer): the message says which is missing."""
    if not has_store:
        return NoCheckpointerError(
            "Command(resume=...) needs a checkpointer: compile(checkpointer=InMemorySaver()) and run on a "
            "thread, config={'configurable': {'thread_id': '<id>'}}"
        )
    return InvalidUpdateError(
        f"Command(resume=...): thread {thread!r} has no checkpoint, so no interrupt waits for an answer; "
        "start the run with its input first"
    )
