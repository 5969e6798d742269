"""One batch of a split step (:mod:`graphq.worker.step.split`), run by its step's owner or by a helper job.

A helper job (:func:`batch_job`, on the workflow's queue) claims a free batch of the split step after
checkpoint ``cp_id``, runs the batch's tasks under the batch's lease and marks it done. While batches are
still unclaimed it claims the next one itself when no job waits on this process's queues (a helper job
costs an RQ job), else it enqueues one more helper, at the back of the queue: other runs' steps take their
turns between a wide step's batches. A helper that finds no free batch (the split is closed, or every
batch is taken) does nothing.

A batch runs its tasks as an unsplit step runs them (:class:`graphq.worker.step.tasks.StepTasks`): each
finished task's writes are persisted at once as pending writes of the step, fenced by the batch's lease; a
task whose writes an earlier attempt persisted is not run again (I2). A task failure that ends the run (the
first in task order, as an unsplit step's; a node's error, or an error of graphq's own that is not transient)
is recorded with the batch; any other error (Redis away, a refused write, a bug) leaves the batch to lapse: it
is claimed again and runs only its unfinished tasks.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

from graphcore.backend.connection import is_transient
from graphcore.backend.runs import RunError, RunRecord
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import task_id
from graphcore.engine.handlers import handled_of
from graphcore.engine.interrupts import resume_plan
from graphcore.errors import Cancelled, LeaseLostError, PermanentError
from graphcore.settings import Settings
from graphq.worker import logs, metrics
from graphq.worker.queue import BATCH_FUNC, waiting_jobs
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.context import WorkerContext, get_context
from graphq.worker.step.ending import run_error
from graphq.worker.step.fence import RefusedWriteError
from graphq.worker.step.lease import Lease, PhaseError, retire_if_stuck
from graphq.worker.step.pausing import step_answers
from graphq.worker.step.progress import INTERVAL_S
from graphq.worker.step.split import BatchFailure, BatchLease, Claim, Split
from graphq.worker.step.tasks import StepTasks, step_scope

__all__ = ["Batch", "batch_job", "call_helpers"]

log = logging.getLogger("graphq.step")


def batch_job(thread_id: str, cp_id: str) -> str:
    """A helper job of the split step after checkpoint ``cp_id`` of ``thread_id``: claim free batches and run
    them (see the module). Returns a short outcome for RQ's result. A node thread left running past its
    timeout retires this process afterwards, as after a step job (G10)."""
    ctx = get_context()
    try:
        return _help(ctx, thread_id, cp_id)
    finally:
        retire_if_stuck(ctx.listener)


def _help(ctx: WorkerContext, thread_id: str, cp_id: str) -> str:
    """:func:`batch_job`'s batches."""
    split = Split.read(ctx.kv, thread_id, cp_id)
    if split is None:
        return "skipped: the split step is over"
    split.helpers(-1)  # started: no longer queued
    token, ran, run = uuid.uuid4().hex, 0, None
    while (claim := split.claim(token, int(ctx.settings.lease_ttl_s * 1000))) is not None:
        ran_on = _run_claimed(ctx, split, claim, token, run)
        if isinstance(ran_on, str):
            return ran_on
        run, ran = ran_on, ran + 1
        if claim.left == 0:
            break
        if _others_wait(ctx):  # take turns: the next batch waits behind them
            call_helpers(ctx, run, split, 1, at_front=False)
            break
    return f"ran {ran} batch(es) of {split.batches}" if ran else "skipped: no batch left"


def _run_claimed(
    ctx: WorkerContext, split: Split, claim: Claim, token: str, run: RunRecord | None
) -> RunRecord | str:
    """Run the batch ``claim`` took: the record of its run (``run``, the one read for the job's previous
    batch, is read again only when a continuation took the split over), or why the job stops, in words."""
    fields, bound = logs.bind(run=claim.run_id, thread=split.thread_id)
    try:
        if run is None or run.id != claim.run_id:
            run = ctx.runs.get(claim.run_id, split.thread_id)
        fields["workflow"], fields["tenant"] = run.workflow, run.tenant
        cp = ctx.store(run.workflow).get(split.thread_id, split.cp_id)
        if cp is None:
            return "skipped: the step's checkpoint is gone"
        Batch(ctx, run, cp, split, claim, token).run()
        return run
    except Cancelled as exc:  # canceled with interrupt, or its run's deadline: the owner ends the run
        return f"canceled: {exc}"
    except RefusedWriteError as exc:  # the batch's lease lapsed (this process stalled): it runs elsewhere
        return f"left: {exc}"
    except Exception as exc:
        if not is_transient(exc):
            raise
        log.warning(
            "batch %s left on a Redis error (it runs again once its lease lapses): %s", claim.batch, exc
        )
        return f"left: {type(exc).__name__}: {exc}"
    finally:
        logs.unbind(bound)


def _others_wait(ctx: WorkerContext) -> bool:
    """Whether a job waits on a queue this process listens on (one round trip)."""
    queues = [ctx.queue.queues[name] for name in ctx.serving] or [
        ctx.queue.queue(n) for n in ctx.registry.names()
    ]
    return any(waiting_jobs(ctx.kv, [queue.key for queue in queues]))


class Batch:
    """One batch of a split step that ``claim`` took (with ``token``), to run under its lease.

    Args:
        ctx: this process's context.
        run: the record of the run that owns the split now (:attr:`record`).
        cp: the step's head checkpoint.
        owner: the step's lease, when its owner runs the batch (giving the step up gives the batch up).
    """

    def __init__(
        self,
        ctx: WorkerContext,
        run: RunRecord,
        cp: Checkpoint,
        split: Split,
        claim: Claim,
        token: str,
        owner: Lease | None = None,
    ) -> None:
        self.ctx, self.record, self.cp, self.split, self.claim, self.owner = ctx, run, cp, split, claim, owner
        ttl_s, every_s = ctx.settings.lease_ttl_s, ctx.settings.heartbeat_interval_s
        self.lease = BatchLease(ctx.kv, run.thread_id, split, claim, token, ttl_s, every_s, ctx.listener)
        self.positions = split.positions(claim.batch)

    def run(self) -> str:
        """Run the batch's unfinished tasks and mark it done (with the task failure that ends the run, if
        any); returns the outcome in words. Counted in ``graphq_batches_total``.

        Raises:
            Cancelled: canceled with ``interrupt``, or given up (its run's deadline, its owner's step given
                up): the batch is left to lapse, and its tasks finishing meanwhile keep nothing.
            RefusedWriteError: the batch's lease lapsed (this process stalled): it runs again elsewhere.
            Exception: anything but a task's failure (Redis, a bug): the batch is left to lapse.
        """
        workflow = self.record.workflow
        try:
            if self.claim.claims - 1 > self.ctx.settings.max_resume_attempts:
                return self._give_up()
            failure = self._run_tasks()
        except Cancelled:
            metrics.batch_done(workflow, "canceled")
            raise
        except RefusedWriteError:
            metrics.batch_done(workflow, "left")
            raise
        metrics.batch_done(workflow, "done" if failure is None else "failed")
        ended = "" if failure is None else f" (task {failure.index} failed)"
        return f"batch {self.claim.batch} of {self.split.batches} done{ended}"

    def _run_tasks(self) -> BatchFailure | None:
        """Run the tasks under the batch's lease and mark it done; the failure it ended with."""
        ctx, run, cp, lease = self.ctx, self.record, self.cp, self.lease
        attempt = StepAttempt(ctx, run, lease, None)
        attempt.cp = cp
        graph = ctx.registry.get(run.workflow)
        limits = attempt.limits(graph)
        ids = [task_id(cp.id, i, cp.next_tasks[i].node) for i in self.positions]
        written, errors = attempt.store.get_writes_of(run.thread_id, cp.id, ids)  # its own tasks' only
        answers = step_answers(attempt)
        finished, resume = resume_plan(dict(written), answers)
        tasks = StepTasks(attempt, graph, limits.cfg, step_scope(attempt, limits.cfg))
        progress = _Progress(attempt, self.split)
        with self._followed(), lease:
            lease.limit(limits.deadline, limits.stop, cp.step + 1)
            if self.owner is not None and self.owner.stop is not None:
                lease.abort(self.owner.stop)
            outcome = tasks.run(
                finished,
                handled_of(errors),
                resume,
                answers,
                persisting=True,
                task_done=progress.task_done,
                only=self.positions,
            )
            progress.flush()
            if lease.stop is not None:
                raise Cancelled(lease.stop.error.message)
            failure = _failure(outcome.failed, cp.step + 1)
            stopped = [r for r in outcome.results if r.stopped is not None]
            lease.dropping()
            self.split.finish(lease.token, failure, stopped)
            lease.dropped()
        return failure

    @contextlib.contextmanager
    def _followed(self) -> Iterator[None]:
        """While the batch runs, giving its owner's step up gives it up too."""
        if self.owner is None:
            yield
            return
        self.owner.followers.add(self.lease)
        try:
            yield
        finally:
            self.owner.followers.discard(self.lease)

    def _give_up(self) -> str:
        """The batch was left (its lease lapsed) more often than ``GRAPHQ_MAX_RESUME_ATTEMPTS`` allows: mark
        it done with the failure that fails the run, instead of running it again."""
        left = _left_error(self.split, self.claim, self.cp.step + 1, self.ctx.settings)
        self.split.finish(self.lease.token, BatchFailure(self.positions.start, left))
        metrics.batch_done(self.record.workflow, "given_up")
        return f"given up: batch {self.claim.batch} was left {self.claim.claims - 1} times"


def _left_error(split: Split, claim: Claim, step: int, settings: Settings) -> RunError:
    """The error that fails a run whose batch was left (its lease lapsed: its worker died, stopped or held
    the GIL past the lease) more often than ``GRAPHQ_MAX_RESUME_ATTEMPTS`` allows, as the reaper fails a run
    whose continuations reach it."""
    return RunError(
        type="WorkerLost",
        message=(
            f"batch {claim.batch} of {split.batches} of the split step was left {claim.claims - 1} times "
            "(its worker died or stopped renewing its lease); not run again: the chain reached "
            f"GRAPHQ_MAX_RESUME_ATTEMPTS={settings.max_resume_attempts}"
        ),
        step=step,
    )


def _failure(failed: Any, step: int) -> BatchFailure | None:
    """The batch's first task failure (``failed``: :attr:`graphcore.engine.step.StepResult.failed`),
    recorded as the run's error as an unsplit step fails its run with it: a task's own failure names its
    node; an error of graphq's own that no retry fixes (one a node raised unwrapped, e.g.
    ``RedisUnavailableError``) does not.

    Raises:
        Exception: the first failure when it does not fail the run: a transient Redis error (an unsplit step
            runs again), a refused write or a lease bug (:class:`PhaseError`); the batch is left to lapse.
    """
    if not failed:
        return None
    task, error = failed[0]
    if is_transient(error) or isinstance(error, LeaseLostError | PhaseError):
        raise error
    node = task.node if isinstance(error, PermanentError) else None
    return BatchFailure(task.index, run_error(error, step, node))


class _Progress:
    """A batch's finished tasks shown as the step's ``progress`` events (:meth:`Split.progress`: at most one
    call every :data:`~graphq.worker.step.progress.INTERVAL_S` seconds a batch, and at its end)."""

    def __init__(self, attempt: StepAttempt, split: Split) -> None:
        self.attempt, self.split = attempt, split
        self.step = attempt.head.step + 1
        self.pending, self.last = 0, time.monotonic()

    def task_done(self) -> None:
        self.pending += 1
        if time.monotonic() - self.last >= INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        if self.pending == 0:
            return
        self.pending, self.last = 0, time.monotonic()
        try:
            self.split.progress(self.attempt.lease.token, self.step)
        except Exception as exc:  # a display count must not fail the batch; its writes' own errors will
            log.warning("progress of a split step not counted: %s", exc)


def call_helpers(ctx: WorkerContext, run: RunRecord, split: Split, count: int, *, at_front: bool) -> None:
    """Enqueue ``count`` helper jobs of ``split`` on ``run``'s queue (its version's when it is pinned; at
    its front for the first wave: a running step's batches go ahead of new runs' first steps)."""
    queue = ctx.queue.of(run)
    split.helpers(count)
    for _ in range(count):
        queue.enqueue_call(
            BATCH_FUNC,
            args=(run.thread_id, split.cp_id),
            timeout=ctx.settings.step_timeout_s,
            result_ttl=0,
            failure_ttl=ctx.settings.result_ttl_s,
            description=f"{run.workflow} run {run.id}: a batch of its split step",
            at_front=at_front,
        )
