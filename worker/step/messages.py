"""A queued run's ``messages`` events (``stream_mode="messages"``, LangGraph's ``(message, metadata)`` pairs):
the LLM tokens of the chat models its nodes call and the messages its nodes write, in its event stream.

Only a run that asks for them records them (the run option ``stream_mode=["messages"]``, C6): a run that
does not gets no LangChain callback and its step sends nothing more to Redis.

Each pair is one stream entry, mode ``messages``, data ``[message, metadata]``, in the thread step of the
checkpoint the step commits (as ``custom`` chunks). They are batched: pairs are buffered and sent in one
fenced script call (:meth:`graphq.worker.step.attempt.StepAttempt.events`, one round trip) when
:data:`INTERVAL_S` has passed since the last call, when :data:`MAX_BATCH` pairs wait, and when a task finishes
(its written messages first, :func:`graphcore.engine.messages_stream.written`); what is left at the step's end
goes before the step's commit. A model streaming fast thus costs a round trip per interval, not per token; the
last tokens before a pause in a model's output wait for its next token or its task's end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.config import RunConfig
from graphcore.engine.messages_stream import MessagesHandler, known_ids, listening, written
from graphcore.engine.task_metadata import step_metadata
from graphcore.types import TaskWrites

__all__ = ["INTERVAL_S", "MAX_BATCH", "StepMessages", "step_messages"]

log = logging.getLogger("graphq.step")

INTERVAL_S = 0.1
"""Longest time a pair waits in the buffer while more come (seconds)."""

MAX_BATCH = 200
"""Most pairs sent in one call."""

Send = Callable[[list[tuple[str, int, Any]]], None]
"""Writes events ``(mode, step, data)`` in one call: the step job's, fenced by its lease (I1)."""


class StepMessages:
    """The ``messages`` events of one super-step of a queued run.

    Args:
        send: writes a batch of events (see :data:`Send`).
        cp: the checkpoint the step starts from (messages already in its state are not shown again).
        clock: the time source (seconds).
    """

    def __init__(self, send: Send, cp: Checkpoint, clock: Callable[[], float] = time.monotonic) -> None:
        self.send, self.step, self.clock = send, cp.step + 1, clock
        self.known = known_ids(cp.channel_values)
        self.tasks = step_metadata(cp, "")  # a queued run is a root graph
        self.shows = MessagesHandler(self.put)
        self.buffer: list[tuple[str, int, Any]] = []
        self.last = clock()
        self._lock = threading.Lock()
        self._broken = False

    def put(self, ns: tuple[str, ...], pair: tuple[Any, dict[str, Any]]) -> None:
        """Buffer one ``(message, metadata)`` pair (from a node's thread; ``ns`` is always ``()``: a queued
        run shows its own nodes' messages, not its subgraphs', as a stream without ``subgraphs=True``);
        send the buffer when it is due."""
        with self._lock:
            self.buffer.append(("messages", self.step, list(pair)))
            if len(self.buffer) >= MAX_BATCH or self.clock() - self.last >= INTERVAL_S:
                self._flush()

    def task_done(self, result: TaskWrites) -> None:
        """A task finished: show the messages it wrote (with the metadata they have in process), then send
        what waits."""
        written(self.shows, result, self.known, self.tasks)
        self.flush()

    def flush(self) -> None:
        """Send what waits (at a task's end, before the step's commit)."""
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        batch, self.buffer = self.buffer, []
        self.last = self.clock()
        if not batch or self._broken:
            return
        try:
            self.send(batch)
        except Exception as exc:  # a display event must not fail the step; its writes' own errors will
            log.warning("messages events of this step stop: %s", exc)
            self._broken = True


def step_messages(cfg: RunConfig, cp: Checkpoint, send: Send) -> tuple[RunConfig, StepMessages | None]:
    """``cfg`` with the LangChain callback of the step's :class:`StepMessages` when the run asked for
    ``messages`` events (its ``stream_mode`` option), and those; ``(cfg, None)`` otherwise."""
    if "messages" not in cfg.stream_mode:
        return cfg, None
    messages = StepMessages(send, cp)
    cfg, messages.shows = listening(cfg, messages.put)
    return cfg, messages
