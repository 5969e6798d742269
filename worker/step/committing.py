"""How a step job commits (R2, R3): the store's plan for the checkpoint, the fenced commit script
(:mod:`graphq.worker.step.commit`) in a round trip of its own or in RQ's success pipeline (P1), the append
guard's second try, and what the outcome means for the run (the next step, completion, a cancel that won, X1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import NoScriptError
from rq import get_current_job

from graphcore.backend.connection import outlast
from graphcore.backend.retention import keep_result, subgraph_keys
from graphcore.backend.runs import CANCEL_ERROR, RunRecord, now_iso
from graphcore.backend.store import stage_prune
from graphcore.checkpoints.layout import Plan
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.stream import update_payload
from graphcore.errors import AppendConflictError, LeaseLostError
from graphcore.types import TaskWrites
from graphq.worker.queue import StepJob
from graphq.worker.step.commit import CommitAhead, Completion, StepCommit, commit_verdict
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.endings import after_completion, fail_run, release_thread
from graphq.worker.step.fence import refused
from graphq.worker.step.lease import Lease

__all__ = ["commit", "commit_step"]

log = logging.getLogger("graphq.step")


def commit(
    ctx: WorkerContext,
    run: RunRecord,
    lease: Lease,
    cp: Checkpoint,
    extra: StepCommit,
    *,
    may_append: bool,
    writes_of: str,
    drop: Sequence[str] = (),
    ride: Callable[[Any], None] | None = None,
) -> str:
    """Fenced commit of ``cp`` with the run's side ``extra`` (I1), and the next step's job if any; retried
    in place through a Redis outage (a commit applied before a lost reply is recognised, not refused).

    Returns:
        The script's verdict: ``"ok"``, ``"again"`` or (a completing commit) ``"canceled"``.

    ``may_append``: whether ``cp``'s logs may grow in its parent's generations (a hint: the commit's append
    guard decides; when it refuses, the commit is planned again with new generations).
    ``drop``: more keys the commit deletes when it applies, without history (the step's subgraph
    namespaces, R5). ``ride``: queues more commands in the commit's round trip (see
    :meth:`graphq.worker.step.commit.CommitScript.run`).

    Raises:
        LeaseLostError: the fence refused: the lease is gone, or the run finished or moved on (logged
            and counted, :mod:`graphq.worker.step.fence`).
    """
    store = ctx.store(run.workflow)

    def stage_prune_of(plan: Plan) -> Callable[[Any], None] | None:
        if plan.prune is None:
            return None
        prune = plan.prune  # no history (R5): drop the previous head, if the commit applies
        return lambda pipe: stage_prune(ctx.kv, pipe, run.thread_id, "", cp.id, prune)

    if extra.drop_lease:
        lease.dropping()  # the keeper must not take the key this commit deletes for a lost lease
    for append in (may_append, False):
        plan = _plan(ctx, run, cp, append, drop, extra.kept_writes)
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
    store.stored(cp, plan)
    run.head = cp.id
    return str(verdict)


def _plan(
    ctx: WorkerContext,
    run: RunRecord,
    cp: Checkpoint,
    may_append: bool,
    drop: Sequence[str],
    writes: Sequence[TaskWrites] = (),
) -> Plan:
    """The store's plan for committing ``cp`` (with history, ``writes`` kept as its parent's pending
    writes); without history (R5) its prune deletes ``drop`` too, and an earlier run's result is kept
    before its head goes."""
    plan = ctx.store(run.workflow).plan_put(run.thread_id, cp, may_append=may_append, writes=writes)
    if plan.prune is not None:
        plan.prune.keys += drop
        _keep_earlier_result(ctx, run, plan)
    return plan


def _keep_earlier_result(ctx: WorkerContext, run: RunRecord, plan: Plan) -> None:
    """No history kept (R5): the commit drops the thread's previous head. When another run wrote it (a run
    that ended before this one started), that run's result is read from nowhere else: it is copied into that
    run's record first, if that run completed with it as its head (idempotent)."""
    prune = plan.prune
    if prune is None or prune.previous is None or prune.owner in (None, run.id):
        return
    previous = ctx.store(run.workflow).get(run.thread_id, prune.previous)
    if previous is not None:
        outlast(keep_result, ctx.kv, run.thread_id, str(prune.owner), previous.id, previous.channel_values)


def _subgraphs_of(ctx: WorkerContext, run: RunRecord, parent: Checkpoint) -> list[str]:
    """Without history (R5): the checkpoint keys of the subgraphs the step after ``parent`` ran, dropped
    with its commit (one round trip when it ran none); with history, nothing."""
    if ctx.store(run.workflow).history:
        return []
    return list(outlast(subgraph_keys, ctx.kv, run.thread_id, parent))


def commit_step(
    ctx: WorkerContext,
    graph: CompiledGraph,
    run: RunRecord,
    lease: Lease,
    parent: Checkpoint,
    cp: Checkpoint,
    results: list[TaskWrites],
    pending: bool,
) -> str:
    """Commit super-step ``run.step``: its checkpoint, the run's progress, events, the next job (R2, R3).
    The last step completes the run, unless a cancel request arrived meanwhile: then it ends Canceled, its
    checkpoint kept (X1). Returns the job's outcome, in words.

    The step's ``updates`` events (one per task, in task order) are appended here, with the commit: a queued
    run's watchers see a step's tasks together, not each as it finishes (in process, ``stream`` yields each
    as it finishes). ``pending``: the step has pending writes (or answers) to drop with the commit (they are
    in the checkpoint now). Unlike in process, the tasks' writes are not kept as ``parent``'s pending writes:
    a queued thread's snapshot of a committed step shows no ``tasks[i].result`` (docs: LangGraph differences).
    """
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
    job = get_current_job()
    job = job if isinstance(job, StepJob) else None
    history = ctx.store(run.workflow).history
    if job is not None and job.records_success() and extra.next_job is not None and history:
        return _commit_on_success(ctx, job, run, lease, cp, extra, may_append=may_append, writes_of=parent.id)
    verdict = commit(
        ctx,
        run,
        lease,
        cp,
        extra,
        may_append=may_append,
        writes_of=parent.id,
        drop=_subgraphs_of(ctx, run, parent),
        ride=None if job is None else job.heartbeat_ahead,
    )
    run.step += 1
    if extra.completes is not None:
        release_thread(ctx, run)
        if verdict != "canceled":  # a cancel that won keeps them (X4)
            after_completion(ctx, run, cp)
    if verdict == "canceled":
        return "canceled: a cancel request arrived during the last step (its checkpoint is kept)"
    return "completed" if extra.completes is not None else f"committed step {run.step}"


def _commit_on_success(
    ctx: WorkerContext,
    job: StepJob,
    run: RunRecord,
    lease: Lease,
    cp: Checkpoint,
    extra: StepCommit,
    *,
    may_append: bool,
    writes_of: str,
) -> str:
    """Commit a step that has a next one (with history kept) in the pipeline in which RQ records the job's
    success, right after this function returns (:class:`graphq.worker.step.commit.CommitAhead`, P1): the same
    script,
    fenced the same way, and the lease the commit's until its reply (:meth:`Lease.commit_later`). Returns
    the job's outcome if the commit applies; :func:`_committed_on_success` handles the reply."""
    plan = _plan(ctx, run, cp, may_append, ())  # a step's task writes are not kept (commit_step)
    call = ctx.commit.args(
        run.thread_id, run.id, writes_of, lease, run.step, cp.id, plan, extra, run.thread_ttl_s
    )
    lease.commit_later()

    def on_reply(reply: Any) -> str:
        return _committed_on_success(ctx, job, run, lease, cp, extra, (plan, *call), reply, writes_of)

    job.commit_on_success(CommitAhead(ctx.commit, *call, on_reply))
    return f"committed step {run.step + 1}"


def _committed_on_success(
    ctx: WorkerContext,
    job: StepJob,
    run: RunRecord,
    lease: Lease,
    cp: Checkpoint,
    extra: StepCommit,
    sent: tuple[Plan, list[str], list[Any]],
    reply: Any,
    writes_of: str,
) -> str:
    """The reply of a commit sent in RQ's success pipeline (:func:`_commit_on_success`; ``sent``: its plan,
    KEYS and ARGV); returns the job's outcome, as :func:`commit_step` would have. NOSCRIPT (Redis lost its
    scripts) sends the same call again once loaded (applied before a lost reply, it answers 'again'); an
    append conflict plans again without appending, in a round trip of its own (as :func:`commit`); a
    refusal is logged and counted (I1); any other error fails the run, as in the step job. The job's result
    in RQ is written again when the commit did not apply. A run whose failure cannot be written is left to
    the reaper: its lease lapses (:meth:`Lease.leave`). Never raises: it runs in RQ's bookkeeping."""
    plan, script_keys, argv = sent
    what = f"run {run.id} step {run.step}"
    try:
        try:
            if isinstance(reply, NoScriptError):
                outlast(ctx.commit.run, script_keys, argv, what)
            else:
                commit_verdict(reply, what)
            ctx.store(run.workflow).stored(cp, plan)
        except AppendConflictError:
            commit(ctx, run, lease, cp, extra, may_append=False, writes_of=writes_of)
        except LeaseLostError as exc:
            raise refused("commit", run.id, run.step, "the commit") from exc
    except LeaseLostError as exc:
        outcome = f"rejected: {exc}"
    except Exception as exc:
        outcome = f"failed: {type(exc).__name__}"
        if not _logged(fail_run, ctx, run, lease, exc):
            lease.leave()  # the run is left unfinished: its lease lapses, the reaper continues it (R14)
    else:
        _logged(lease.settle, committed=True)
        return f"committed step {run.step + 1}"
    _logged(lease.settle, committed=False)
    job.rewrite_result(outcome)
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
