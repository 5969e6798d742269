"""How a step attempt ends its run when the step does not commit: failed, canceled, completed with nothing
to run; then the thread goes to its next run (I3) and, after a completion, the checkpoints may go (R7).
Every status write is fenced by the lease (:meth:`graphq.worker.step.attempt.StepAttempt.set_status`).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from typing import Any

from graphcore.backend.connection import outlast
from graphcore.backend.retention import keep_result, remove_after_completion
from graphcore.backend.runs import RunError, RunStatus, now_iso
from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import GraphqError, LeaseLostError, SerializationError, where
from graphq.worker.step.attempt import StepAttempt

__all__ = ["after_completion", "complete", "end", "fail", "run_error"]

log = logging.getLogger("graphq.step")
ends = logging.getLogger("graphq.runs")
"""A run's failure or cancel, at WARNING: ``graphq worker`` shows it at its default level; the commands that
run a worker in process (``graphq run``, ``--wait``) report the end themselves and quiet this logger."""


def fail(attempt: StepAttempt, exc: BaseException, node: str | None = None) -> None:
    """Mark the run Failed with ``exc`` (:func:`run_error`), raised in the thread step the job runs (the
    attempt's :attr:`~graphq.worker.step.attempt.StepAttempt.step_number`, else the step after the run's
    head) by the task of ``node``, if a task raised it."""
    step = attempt.step_number if attempt.step_number is not None else attempt.after_head()
    end(attempt, RunStatus.FAILED, run_error(exc, step, node))


def run_error(exc: BaseException, step: int, node: str | None = None) -> RunError:
    """The error record of a run that failed with ``exc`` in thread step ``step``: its type, its message, its
    traceback (with the node's own error, chained as cause), the step, and the node it came from (the one
    the error names, else the task's ``node``). A value a node wrote that cannot be stored says so:
    ``node 'a' wrote state.x[1]: type 'object' is not serializable; ...``."""
    named = getattr(exc, "node", None) if isinstance(exc, GraphqError) else None
    node = named if isinstance(named, str) else node
    message = str(exc)
    if isinstance(exc, SerializationError) and node is not None:
        message = f"{where(node)} wrote {message}"
    tb = "".join(traceback.format_exception(exc))
    return RunError(type=type(exc).__name__, message=message, traceback=tb, node=node, step=step)


def complete(attempt: StepAttempt, step: int, values: Mapping[str, Any] | None = None) -> None:
    """Complete a run that has no step to run (its result is the values of the head checkpoint, of thread
    step ``step``; or ``values``, the head's channel values with an input Command's update applied, which
    no checkpoint holds: kept as the run's result, as in process ``invoke`` returns them)."""
    run = attempt.run
    done = [("status", step, {"status": "completed"})]
    if attempt.set_status(RunStatus.COMPLETED, fields={"ended_at": now_iso()}, events=done):
        if values is not None and run.head is not None:
            outlast(keep_result, attempt.ctx.kv, run.thread_id, run.id, run.head, values)
        attempt.release_thread()
        after_completion(attempt, None)


def after_completion(attempt: StepAttempt, head: Checkpoint | None) -> None:
    """``GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false`` (R7): the completed run's thread loses its
    checkpoints, unless another of its runs needs them (:mod:`graphcore.backend.retention`). After the
    commit and the hand-over, never in them; a failure is logged and leaves them, which is safe."""
    ctx, run = attempt.ctx, attempt.run
    if ctx.settings.keep_checkpoints_after_completion:
        return
    try:
        remove_after_completion(ctx.kv, run.thread_id, run.id, head)
    except Exception as exc:  # the run is complete either way; its checkpoints stay, as by default
        log.warning("run %s: its checkpoints were not removed after completion: %s", run.id, exc)


def end(attempt: StepAttempt, status: RunStatus, error: RunError) -> None:
    """End the run (compare-and-set from a non-terminal status, I7, fenced by the lease, I1) and record
    why, in the error's step (else the step after the run's head); a worker that lost its lease changes
    nothing (the refusal is logged and counted)."""
    fields = {"error": error.model_dump_json(), "ended_at": now_iso()}
    event = {"status": status.value, "error": f"{error.type}: {error.message}"}
    step = error.step if error.step is not None else attempt.after_head()
    try:
        ended = attempt.set_status(status, fields=fields, events=[("status", step, event)])
    except LeaseLostError:
        return
    if ended:
        attempt.release_thread()
    run = attempt.run
    ends.warning("run %s %s at step %s: %s", run.id, status.value, step, error.message)  # the thread's number
