"""How a step attempt runs a wide super-step across the worker pool (:mod:`graphq.worker.step.split`).

The step's owner (the step job holding the step's lease):

1. opens the split (its record in Redis, fenced by the step's lease; or joins the record an earlier owner
   of the same step left) and writes the step's first ``progress`` event;
2. keeps helper jobs on the workflow's queue, at its front: one for each other live worker process that
   serves the workflow, counting those queued and the batches others hold (looked up again every second:
   workers that start during the step get helpers too), at most one per batch not handed out. Each runs
   batches while no other job waits on its worker's queues, else enqueues its successor at the back of the
   queue (:mod:`graphq.worker.step.batch`);
3. claims and runs batches itself until none is free, then waits for the batches others hold (waking as
   each ends; a batch whose lease lapsed is claimed again and runs only its unfinished tasks);
4. once every batch is done: a task failure recorded by a batch ends the run Failed (the first in task
   order, as an unsplit step); otherwise the step's outcome is read back from its pending writes in task
   order (with the tasks the batches recorded as stopped at a subgraph's breakpoint), the split is closed,
   and the step commits (or pauses) as an unsplit step does (:func:`graphq.worker.step.job._step_end`), so
   its checkpoint is the one the unsplit step would write.

A cancel with ``interrupt`` or the run's deadline reaches every batch through its lease; the owner then
closes the split (a batch still running is refused its writes) and ends the run as an unsplit step does.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Mapping
from typing import Any

from graphcore.backend.connection import is_transient
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import RunStatus
from graphcore.backend.workers import live_workers
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.config import RunConfig
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.handlers import handled_of
from graphcore.engine.interrupts import resume_plan
from graphcore.engine.step import StepResult
from graphcore.errors import Cancelled, ColdStop, LeaseLostError
from graphcore.settings import Settings
from graphcore.types import TaskWrites
from graphq.worker.step.attempt import RunLimits, StepAttempt
from graphq.worker.step.batch import Batch, call_helpers
from graphq.worker.step.ending import end
from graphq.worker.step.fence import RefusedWriteError
from graphq.worker.step.lease import Phase, PhaseError
from graphq.worker.step.pausing import step_answers
from graphq.worker.step.split import BatchFailure, Split
from graphq.worker.step.tasks import StepTasks

__all__ = ["joins", "run_split", "splits"]

_WAIT_S = 1.0
"""Longest wait for a batch to end before the owner looks again (for lapsed batches, its lease's stop)."""

_LOOK_S = 1.0
"""How often the owner looks for workers that could take helper jobs, seconds."""


def splits(
    graph: CompiledGraph,
    cfg: RunConfig,
    cp: Checkpoint,
    finished: Mapping[str, TaskWrites],
    settings: Settings,
) -> bool:
    """Whether the step after ``cp`` is split: at least the run's ``shard_min_tasks`` (else
    ``GRAPHQ_SHARD_MIN_TASKS``; 0 never) of its tasks are still to run, and the run sets no
    ``max_concurrency`` (a bound on the step's tasks at once, which batches on several processes would
    exceed)."""
    least = cfg.shard_min_tasks if cfg.shard_min_tasks is not None else settings.shard_min_tasks
    wide = len(cp.next_tasks) - len(finished) >= least
    return least > 0 and wide and cfg.max_concurrency is None


def joins(kv: Any, thread_id: str, cp_id: str) -> bool:
    """Whether an earlier attempt split the step after checkpoint ``cp_id`` and its record is still open (its
    owner died): the step is split again to join it, however few of its tasks are left, so that the batches
    held by live helpers go on instead of running again here as well."""
    return Split.read(kv, thread_id, cp_id) is not None


def run_split(attempt: StepAttempt, tasks: StepTasks, limits: RunLimits, finished: int) -> StepResult | str:
    """Run the attempt's step split (see the module): the step's outcome, in task order, for its commit;
    or, when a batch's task failure ended the run, the job's outcome in words. ``finished``: the step's
    tasks finished in earlier attempts.

    Raises:
        Cancelled: canceled with ``interrupt``, or given up (the split is closed first, as on any error
            that ends the run).
        LeaseLostError: the step's lease is no longer held.
    """
    ctx, run, lease, cp = attempt.ctx, attempt.run, attempt.lease, attempt.head
    settings = ctx.settings
    split = Split(ctx.kv, run.thread_id, cp.id, len(cp.next_tasks), settings.shard_batch_tasks)
    lease.limit(limits.deadline, limits.stop, cp.step + 1)
    split.open(lease, run.id, run.step, settings.step_timeout_s * 1000, finished)
    attempt.event("progress", cp.step + 1, {"done": finished, "total": split.tasks})
    try:
        failures, stopped = _work(attempt, split)
    except BaseException as exc:
        if _ends_the_run(exc):  # else its next owner joins the split: its batches go on
            split.close(lease)
        raise
    if failures:
        split.close(lease)
        failure = failures[0]
        end(attempt, RunStatus.FAILED, failure.error)
        return f"failed: {failure.error.type}"
    outcome = _outcome(attempt, tasks, stopped)
    split.close(lease)
    return outcome


def _ends_the_run(exc: BaseException) -> bool:
    """Whether the step job ends its run on ``exc`` (a cancel, a give-up, a failure: the split is closed),
    rather than running the step again (a transient Redis error) or leaving it to crash recovery (the
    process stopping at once, a lease lost or a lease bug)."""
    if isinstance(exc, Cancelled):
        return True
    left = (ColdStop, PhaseError, LeaseLostError)
    return not isinstance(exc, left) and not (isinstance(exc, Exception) and is_transient(exc))


def _work(attempt: StepAttempt, split: Split) -> tuple[list[BatchFailure], dict[str, TaskWrites]]:
    """Claim and run batches until none is free, then wait until every batch is done; returns the batches'
    task failures in task order, and their tasks stopped at a subgraph's breakpoint (task id → record)."""
    ctx, run, lease, cp = attempt.ctx, attempt.run, attempt.lease, attempt.head
    token = uuid.uuid4().hex
    helpers = _Helpers(attempt, split, token)
    left = split.batches
    while True:
        helpers.top_up(left - 1)
        if lease.phase is Phase.LOST:  # the step is someone else's now: its commit would be refused
            raise LeaseLostError(f"run {run.id}: the lease of its split step was lost")
        claim = split.claim(token, lease.ttl_ms)
        if claim is not None:
            left = claim.left
            with contextlib.suppress(RefusedWriteError):  # the batch's lease lapsed: it is claimed again
                Batch(ctx, run, cp, split, claim, token, owner=lease).run()
            continue
        done, failures, stopped = split.state()
        if done >= split.batches:
            return failures, stopped
        if lease.stop is not None:
            raise Cancelled(lease.stop.error.message)
        if lease.cancel.cancelled:
            raise Cancelled("run canceled")
        split.wait(_WAIT_S)


class _Helpers:
    """The helper jobs a split step's owner keeps on the workflow's queue: one for each other live worker
    process that serves the workflow, at most one for each batch not handed out yet, counting the helpers
    queued and the batches other workers hold (:meth:`Split.helpers`). They go to the queue's front; each
    helper enqueues its successor itself when it yields. The owner looks again every :data:`_LOOK_S`
    seconds, so workers that start during the step (``graphq run``'s pool, a scale-up, a process started
    in place of one that died, whose helper died with it) get helpers too."""

    def __init__(self, attempt: StepAttempt, split: Split, token: str) -> None:
        self.attempt, self.split, self.token = attempt, split, token
        self.look_at = 0.0

    def top_up(self, unclaimed: int) -> None:
        """Enqueue helpers up to the other live workers (looked up at most every :data:`_LOOK_S` s), at most
        ``unclaimed`` (the batches not handed out, but the one the owner takes next) in flight."""
        now = time.monotonic()
        if now < self.look_at or unclaimed <= 0:
            return
        self.look_at = now + _LOOK_S
        wanted = min(unclaimed, _other_workers(self.attempt))
        queued, held = self.split.helpers(0, self.token)
        missing = wanted - max(queued, 0) - held
        if missing > 0:
            call_helpers(self.attempt.ctx, self.attempt.run, self.split, missing, at_front=True)


def _outcome(attempt: StepAttempt, tasks: StepTasks, stopped: Mapping[str, TaskWrites]) -> StepResult:
    """The step's outcome read back from its pending writes and the batches' ``stopped`` tasks (stopped at a
    subgraph's breakpoint, they keep no writes: run again, that graph would pass its breakpoint), in task
    order. A task found in neither (none, but for a bug) runs here."""
    run, cp = attempt.run, attempt.head
    written, errors = attempt.store.get_writes_and_errors(run.thread_id, cp.id)
    answers = step_answers(attempt)
    finished, resume = resume_plan(dict(written), answers)
    return tasks.run({**finished, **stopped}, handled_of(errors), resume, answers, persisting=True)


def _other_workers(attempt: StepAttempt) -> int:
    """The live worker processes that listen on the run's queue, besides this one (by their heartbeat's
    queues; a worker of another workflow, or of another version of a pinned run, would never take a helper
    job)."""
    ctx = attempt.ctx
    queue = ctx.queue.of(attempt.run).name
    live = live_workers(ctx.kv, server_ms(ctx.kv))
    return len([w for w in live if queue in w.queues and w.id != ctx.worker_id])
