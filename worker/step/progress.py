"""Progress inside a super-step: ``progress`` events counting a wide step's finished tasks (C6).

A step with several tasks writes ``{"done": d, "total": n}`` to the run's event stream when its tasks start
(``done`` counts tasks finished in an earlier attempt), then as tasks finish, at most once per
``interval_s`` (throttled, so a 1,790-task step writes a few events a second, not one per task), and always
when the last one finishes. Each event is one XADD from the task's thread, after the task's pending writes
were persisted; a one-task step writes none. Events are emitted under a lock, so ``done`` never goes back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["INTERVAL_S", "StepProgress", "step_progress"]

log = logging.getLogger("graphq.step")

INTERVAL_S = 0.2
"""Shortest time between two ``progress`` events of one step (the last task's event is never held back)."""


class StepProgress:
    """Counts a step's finished tasks and emits throttled ``progress`` events.

    Args:
        emit: writes one event, ``emit(done, total)``.
        total: the step's tasks.
        done: tasks already finished (by an earlier attempt of the step).
        interval_s: throttle; ``clock`` is the time source (seconds).
    """

    def __init__(
        self,
        emit: Callable[[int, int], None],
        total: int,
        done: int = 0,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emit, self.total, self.done = emit, total, min(done, total)
        self.interval_s, self.clock = interval_s, clock
        self.last = float("-inf")
        self._lock = threading.Lock()
        self._broken = False

    def start(self) -> None:
        """The step's tasks start: announce the total (and what an earlier attempt finished)."""
        with self._lock:
            self._emit()

    def task_done(self) -> None:
        """One more task finished (called from its thread)."""
        with self._lock:
            self.done = min(self.done + 1, self.total)
            if self.done == self.total or self.clock() - self.last >= self.interval_s:
                self._emit()

    def _emit(self) -> None:
        if self._broken:
            return
        try:
            self.emit(self.done, self.total)
        except Exception as exc:  # a display event must not fail the step; its writes' own errors will
            log.warning("progress events of this step stop: %s", exc)
            self._broken = True
        self.last = self.clock()


def step_progress(
    step: int, total: int, done: int, send: Callable[[str, int, Any], None]
) -> StepProgress | None:
    """The progress of thread step ``step`` (None for a step of one task or none), already started.

    ``send(mode, step, data)`` writes an event: the step job's, fenced by its lease (I1).
    """
    if total < 2:
        return None

    def emit(finished: int, tasks: int) -> None:
        send("progress", step, {"done": finished, "total": tasks})

    progress = StepProgress(emit, total, done)
    progress.start()
    return progress
