"""How a step attempt commits (R2, R3): the store's plan for the checkpoint, the fenced commit script
(:mod:`graphq.worker.step.commit_script`) in a round trip of its own or in RQ's success pipeline (P1), the
append guard's second try, and what the outcome means for the run (the next step, completion, a cancel that
won, X1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import NoScriptError

from graphcore.backend.connection import outlast
from graphcore.backend.retention import keep_result, subgraph_keys
from graphcore.backend.runs import CANCEL_ERROR, now_iso
from graphcore.backend.store import stage_prune
from graphcore.checkpoints.layout import Plan
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.stream import update_payload
from graphcore.errors import AppendConflictError, LeaseLostError
from graphcore.types import TaskWrites
from graphq.worker.queue import StepJob
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.commit_script import CommitAhead, Completion, StepCommit, commit_verdict
from graphq.worker.step.ending import after_completion, fail
from graphq.worker.step.fence import refused
from graphq.worker.step.replies import CommitVerdict

__all__ = ["commit", "commit_step"]

log = logging.getLogger("graphq.step")


def commit(
    attempt: StepAttempt,
    cp: Checkpoint,
    extra: StepCommit,
    *,
    may_append: bool,
    writes_of: str,
    drop: Sequence[str] = (),
    ride: Callable[[Any], None] | None = None,
) -> CommitVerdict:
    """Fenced commit of ``cp`` with the run's side ``extra`` (I1), and the next step's job if any; retried
    in place through a Redis outage (a commit applied before a lost reply is recognised, not refused).

    Returns:
        The script's verdict: ``OK``, ``AGAIN`` or (a completing commit) ``CANCELED``.

    ``may_append``: whether ``cp``'s logs may grow in its parent's generations (a hint: the commit's append
    guard decides; when it refuses, the commit is planned again with new generations).
    ``drop``: more keys the commit deletes when it applies, without history (the step's subgraph
    namespaces, R5). ``ride``: queues more commands in the commit's round trip (see
    :meth:`graphq.worker.step.commit_script.CommitScript.run`).

    Raises:
        LeaseLostError: the fence refused: the lease is gone, or the run finished or moved on (logged
            and counted, :mod:`graphq.worker.step.fence`).
    """
    ctx, run, lease = attempt.ctx, attempt.run, attempt.lease

    def stage_prune_of(plan: Plan) -> Callable[[Any], None] | None:
        if plan.prune is None:
            return None
        prune = plan.prune  # no history (R5): drop the previous head, if the commit applies
        return lambda pipe: stage_prune(ctx.kv, pipe, run.thread_id, "", cp.id, prune)

    if extra.drop_lease:
        lease.dropping()  # the keeper must not take the key this commit deletes for a lost lease
    for append in (may_append, False):
        plan = _plan(attempt, cp, append, drop, extra.kept_writes)
        script_keys, argv = ctx.commit.args(
            run.thread_id, run.id, writes_of, lease, run.step, cp.id, plan, extra, run.thread_ttl_s
        )
        try:
            what = f"run {run.id} step {run.step}"
            verdict = outlast(ctx.commit.run, script_keys, argv, what, stage_prune_of(plan), ride)
            break
        except AppendConflictError:
            if not append:
                raise
        except LeaseLostError as exc:
            raise refused("commit", run.id, run.step, "the commit") from exc
    if extra.drop_lease:
        lease.dropped()
    attempt.store.stored(cp, plan)
    run.head = cp.id
    return verdict


def _plan(
    attempt: StepAttempt,
    cp: Checkpoint,
    may_append: bool,
    drop: Sequence[str],
    writes: Sequence[TaskWrites] = (),
) -> Plan:
    """The store's plan for committing ``cp`` (with history, ``writes`` kept as its parent's pending
    writes); without history (R5) its prune deletes ``drop`` too, and an earlier run's result is kept
    before its head goes."""
    plan = attempt.store.plan_put(attempt.run.thread_id, cp, may_append=may_append, writes=writes)
    if plan.prune is not None:
        plan.prune.keys += drop
        _keep_earlier_result(attempt, plan)
    return plan


def _keep_earlier_result(attempt: StepAttempt, plan: Plan) -> None:
    """No history kept (R5): the commit drops the thread's previous head. When another run wrote it (a run
    that ended before this one started), that run's result is read from nowhere else: it is copied into that
    run's record first, if that run completed with it as its head (idempotent)."""
    run, prune = attempt.run, plan.prune
    if prune is None or prune.previous is None or prune.owner in (None, run.id):
        return
    previous = attempt.store.get(run.thread_id, prune.previous)
    if previous is not None:
        outlast(
            keep_result, attempt.ctx.kv, run.thread_id, str(prune.owner), previous.id, previous.channel_values
        )


def _subgraphs_of(attempt: StepAttempt, parent: Checkpoint) -> list[str]:
    """Without history (R5): the checkpoint keys of the subgraphs the step after ``parent`` ran, dropped
    with its commit (one round trip when it ran none); with history, nothing."""
    if attempt.store.history:
        return []
    return list(outlast(subgraph_keys, attempt.ctx.kv, attempt.run.thread_id, parent))


def commit_step(
    attempt: StepAttempt, graph: CompiledGraph, cp: Checkpoint, results: list[TaskWrites], pending: bool
) -> str:
    """Commit super-step ``run.step`` (its parent the attempt's head): its checkpoint ``cp``, the run's
    progress, events, the next job (R2, R3).
    The last step completes the run, unless a cancel request arrived meanwhile: then it ends Canceled, its
    checkpoint kept (X1). Returns the job's outcome, in words.

    The step's ``updates`` events (one per task, in task order) are appended here, with the commit: a queued
    run's watchers see a step's tasks together, not each as it finishes (in process, ``stream`` yields each
    as it finishes). ``pending``: the step has pending writes (or answers) to drop with the commit (they are
    in the checkpoint now). Unlike in process, the tasks' writes are not kept as ``parent``'s pending writes:
    a queued thread's snapshot of a committed step shows no ``tasks[i].result`` (docs: LangGraph differences).
    """
    ctx, run, parent, job = attempt.ctx, attempt.run, attempt.head, attempt.job
    events: list[tuple[str, int, Any]] = [("updates", cp.step, update_payload(graph, r)) for r in results]
    events.append(("values", cp.step, {"checkpoint_id": cp.id}))
    fields = {"head": cp.id, "step": str(run.step + 1)}
    # A committed step's task writes are not kept (its pending writes are dropped): they would double a
    # thread's Redis memory for append-heavy state (P2); so a queued thread's committed tasks show no result.
    extra = StepCommit(fields, ["partial"] if pending else [], events, True, pending)
    if cp.next_tasks:
        extra.next_job = ctx.queue.prepare(run, run.step + 1)
    else:
        # The result is the head checkpoint's values; it is read from there, not stored twice (I4).
        extra.completes = Completion(cp.step, now_iso(), _LAST_STEP_CANCEL.model_dump_json())
    # The run's head is the thread's head (one active run per thread, I3), so its logs may grow in place,
    # unless it is a fork: a fork shares its source's logs, which have usually grown on the first branch
    # (the append guard would refuse; this saves the round trip).
    may_append = parent.id == run.head and parent.source != "fork"
    if job is not None and job.records_success() and extra.next_job is not None and attempt.store.history:
        return _commit_on_success(attempt, job, cp, extra, may_append=may_append, writes_of=parent.id)
    verdict = commit(
        attempt,
        cp,
        extra,
        may_append=may_append,
        writes_of=parent.id,
        drop=_subgraphs_of(attempt, parent),
        ride=None if job is None else job.heartbeat_ahead,
    )
    run.step += 1
    if extra.completes is not None:
        attempt.release_thread()
        if verdict != CommitVerdict.CANCELED:  # a cancel that won keeps them (X4)
            after_completion(attempt, cp)
    if verdict == CommitVerdict.CANCELED:
        return "canceled: a cancel request arrived during the last step (its checkpoint is kept)"
    return "completed" if extra.completes is not None else f"committed step {run.step}"


def _commit_on_success(
    attempt: StepAttempt, job: StepJob, cp: Checkpoint, extra: StepCommit, *, may_append: bool, writes_of: str
) -> str:
    """Commit a step that has a next one (with history kept) in the pipeline in which RQ records the job's
    success, right after this function returns (:class:`graphq.worker.step.commit_script.CommitAhead`, P1):
    the same script, fenced the same way, and the lease the commit's until its reply
    (:meth:`Lease.commit_later`). Returns the job's outcome if the commit applies;
    :meth:`_LaterCommit.on_reply` handles the reply."""
    run = attempt.run
    plan = _plan(attempt, cp, may_append, ())  # a step's task writes are not kept (commit_step)
    call = attempt.ctx.commit.args(
        run.thread_id, run.id, writes_of, attempt.lease, run.step, cp.id, plan, extra, run.thread_ttl_s
    )
    attempt.lease.commit_later()
    later = _LaterCommit(attempt, job, cp, extra, plan, *call, writes_of)
    job.commit_on_success(CommitAhead(attempt.ctx.commit, *call, later.on_reply))
    return f"committed step {run.step + 1}"


@dataclass
class _LaterCommit:
    """A commit sent in RQ's success pipeline (:func:`_commit_on_success`): what was sent (its plan, KEYS
    and ARGV, the checkpoint whose pending writes it drops), to act on its reply."""

    attempt: StepAttempt
    job: StepJob
    cp: Checkpoint
    extra: StepCommit
    plan: Plan
    script_keys: list[str]
    argv: list[Any]
    writes_of: str

    def on_reply(self, reply: Any) -> str:
        """The commit's ``reply``; returns the job's outcome, as :func:`commit_step` would have. NOSCRIPT
        (Redis lost its scripts) sends the same call again once loaded (applied before a lost reply, it
        answers 'again'); an append conflict plans again without appending, in a round trip of its own (as
        :func:`commit`); a refusal is logged and counted (I1); any other error fails the run, as in the step
        job. The job's result in RQ is written again when the commit did not apply. A run whose failure
        cannot be written is left to the reaper: its lease lapses (:meth:`Lease.leave`). Never raises: it
        runs in RQ's bookkeeping."""
        attempt, run, lease = self.attempt, self.attempt.run, self.attempt.lease
        what = f"run {run.id} step {run.step}"
        try:
            try:
                if isinstance(reply, NoScriptError):
                    outlast(attempt.ctx.commit.run, self.script_keys, self.argv, what)
                else:
                    commit_verdict(reply, what)
                attempt.store.stored(self.cp, self.plan)
            except AppendConflictError:
                commit(attempt, self.cp, self.extra, may_append=False, writes_of=self.writes_of)
            except LeaseLostError as exc:
                raise refused("commit", run.id, run.step, "the commit") from exc
        except LeaseLostError as exc:
            outcome = f"rejected: {exc}"
        except Exception as exc:
            outcome = f"failed: {type(exc).__name__}"
            if not _logged(fail, attempt, exc):
                lease.leave()  # the run is left unfinished: its lease lapses, the reaper continues it (R14)
        else:
            _logged(lease.settle, committed=True)
            return f"committed step {run.step + 1}"
        _logged(lease.settle, committed=False)
        self.job.rewrite_result(outcome)
        return outcome


def _logged(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """``fn(*args, **kwargs)``, an error logged, not raised (after a step job's end, in RQ's bookkeeping);
    returns whether it worked."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        log.warning("%s failed after the step job's end: %s", getattr(fn, "__name__", fn), exc)
        return False
    return True


_LAST_STEP_CANCEL = CANCEL_ERROR.model_copy(
    update={"message": "canceled by request during the last super-step; its checkpoint is kept"}
)
