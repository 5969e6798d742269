"""What a super-step's tasks share, and what one task's tries share whether its node is sync
(:mod:`graphcore.engine.step`) or async (:mod:`graphcore.engine.async_step`) (G9, G10).

The task's token is a child of the step's. A node with a retry policy runs each try with a child of the
task's token, so a timeout cancels only its own try while a run cancel reaches every try and cuts a pause
between tries short; a node without one runs its single try with the task's token.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState

from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import Task, task_spec
from graphcore.engine.cancel import CancelToken
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.config import RunConfig, TryInfo
from graphcore.engine.interrupts import GraphInterrupt
from graphcore.engine.timeouts import Progress
from graphcore.errors import Cancelled, ColdStop, GraphqError, NodeTimeoutError, node_error
from graphcore.types import TaskWrites

__all__ = ["RetryHook", "Step", "TaskDone", "Tries", "Writer", "passes_through"]

TaskDone = Callable[[TaskWrites], None]
Writer = Callable[[Task, Any], None]
RetryHook = Callable[[Task, int, BaseException, float], None]
"""``on_retry(task, failed_try, error, wait_s)``: a try failed; the next one starts in ``wait_s`` seconds."""


@dataclass(frozen=True)
class Step:
    """What every task of one super-step shares (the arguments of ``run_step``)."""

    graph: GraphSpec
    cp: Checkpoint
    config: RunConfig
    writer: Writer
    done: TaskDone | None
    cancel: CancelToken | None
    on_retry: RetryHook | None
    cache: Any = None
    """The step's :class:`~graphcore.engine.cache.StepCache` when the graph caches node results."""
    handled: Mapping[str, str] = field(default_factory=dict)
    """Task id → the failure text saved for a task whose node's error handler took its failure in an
    earlier attempt: only the handler runs (:mod:`graphcore.engine.handlers`)."""
    on_handled: TaskDone | None = None
    """Saves a task's failure record (a ``failure_entry`` with ``handled``) before its error handler runs."""


class Tries:
    """One task's tries: its token, its last error and the retry hooks (the running is the subclass's)."""

    def __init__(self, step: Step, task: Task) -> None:
        self.step = step
        self.task = task
        self.spec = task_spec(step.graph, task)
        self.cancel = CancelToken(parent=step.cancel)
        self.last_error: BaseException | None = None
        self.hook_error: BaseException | None = None
        self.tries = 0
        """Tries started so far (each ``once`` counts one)."""
        self.first_try_at: float | None = None
        self.progress: Progress | None = None
        """The current try's progress, for an idle timeout (None without one)."""

    def retry_on(self, exc: BaseException) -> bool:
        """Whether a try that failed with ``exc`` is tried again (never once the task is cancelled)."""
        return self.spec.retry is not None and not self.cancel.cancelled and self.spec.retry.should_retry(exc)

    def begin_try(self) -> CancelToken:
        """Count the next try (:attr:`tries`, :attr:`first_try_at`) and start its :class:`Progress` when the
        node has an idle timeout; returns its cancel token (see the module docstring)."""
        self.tries += 1
        if self.first_try_at is None:
            self.first_try_at = time.time()
        self.progress = None if self.spec.idle is None else Progress(self.spec.idle)
        return self.cancel if self.spec.retry is None else CancelToken(parent=self.cancel)

    @property
    def attempt(self) -> TryInfo:
        """The current try as its node sees it (``runtime.execution_info``, ``runtime.heartbeat``)."""
        return TryInfo(self.tries, self.first_try_at, self.progress)

    @property
    def timed(self) -> bool:
        """Whether a try has a timeout to watch (a cap or an idle timeout)."""
        return self.spec.timeout_s is not None or self.spec.idle is not None

    def wrote(self) -> None:
        """The try wrote a chunk to its stream (progress, :class:`Progress`)."""
        if self.progress is not None:
            self.progress.wrote()

    def overdue(self, cap_at: float | None) -> tuple[NodeTimeoutError | None, float]:
        """Whether the try is past its cap (``cap_at``, monotonic s) or idle timeout: the error then, else
        None and the seconds to wait before asking again (inf: nothing to wait for)."""
        now = time.monotonic()
        cap_left = math.inf if cap_at is None else cap_at - now
        idle_left = math.inf if self.progress is None else self.progress.left_s()
        run_s, idle_s = self.spec.timeout_s, None if self.spec.idle is None else self.spec.idle.seconds
        set_on = "add_node" if self.task.timeout is None else "Send"
        if cap_left <= 0 and run_s is not None:
            return NodeTimeoutError(self.task.node, run_s, idle_timeout=idle_s, set_on=set_on), 0.0
        if idle_left <= 0 and idle_s is not None:
            return NodeTimeoutError(self.task.node, idle_s, "idle", run_timeout=run_s, set_on=set_on), 0.0
        return None, min(cap_left, idle_left)

    def cap_at(self) -> float | None:
        """When the try started now passes its cap (monotonic s), None without one."""
        return None if self.spec.timeout_s is None else time.monotonic() + self.spec.timeout_s

    def before_sleep(self, state: RetryCallState) -> None:
        """tenacity's hook before a pause between tries: records the error, calls the step's ``on_retry``."""
        self.last_error = state.outcome.exception() if state.outcome is not None else None
        if self.step.on_retry is None or self.last_error is None:
            return
        try:
            self.step.on_retry(self.task, state.attempt_number, self.last_error, state.upcoming_sleep)
        except Exception as exc:
            self.hook_error = exc
            raise

    def failure(self, exc: BaseException) -> Exception:
        """What the task fails with when its tries end in ``exc``: a graphq error, or ``on_retry``'s own
        error (e.g. Redis: not the node's fault), unchanged; anything else the node raised as
        :class:`~graphcore.errors.NodeError` that is also an instance of the node's error type
        (:func:`~graphcore.errors.node_error`; a plain NodeError for one that is not an ``Exception``:
        ``SystemExit``, ``KeyboardInterrupt``, ``asyncio.CancelledError``), naming its tries when it had
        several."""
        if isinstance(exc, GraphqError) or exc is self.hook_error:
            assert isinstance(exc, Exception)  # a hook error is caught as an Exception
            return exc
        error = node_error(self.task.node, exc, attempts=self.tries)
        error.__cause__ = exc
        return error


def passes_through(exc: BaseException) -> bool:
    """Whether ``exc``, raised out of a task's tries, is graphq's own control flow rather than the task's
    failure: a cancel (:class:`~graphcore.errors.Cancelled`), a pause (``GraphInterrupt``), a process
    stopping at once on a signal (:class:`~graphcore.errors.ColdStop`). Every other error a node raises,
    ``SystemExit`` and ``KeyboardInterrupt`` included, fails its task (:meth:`Tries.failure`)."""
    return isinstance(exc, Cancelled | GraphInterrupt | ColdStop)
