"""The step job (R2–R4): one RQ job runs one super-step of one run.

Flow of ``step_job(run, thread, k)``:

1. Load the run; a terminal run or one already past step ``k`` makes this a duplicate → skip.
2. Take the lease (R18); someone else holding it is running this step → skip.
3. Step 0 only: apply the input and commit the input checkpoint (so that task ids are stable, I2).
4. Load the head checkpoint and the pending writes of tasks that finished in an earlier attempt (I2).
5. Run the remaining tasks; persist each task's writes as it finishes, fenced by the lease token.
6. Commit (:mod:`worker.commit`): in one MULTI, a Lua compare-and-set on (run, step, lease token) writes
   the checkpoint, advances the run and appends events, beside the enqueue of step ``k+1`` (I1, R3).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from graphcore import keys
from graphcore.algo import apply_input, apply_writes
from graphcore.checkpoint import Checkpoint
from graphcore.config import RunConfig
from graphcore.connection import is_transient, redis_retrying, retry_transient
from graphcore.errors import GraphqError, LeaseLostError, RunNotFoundError
from graphcore.events import stage_event
from graphcore.executor import CompiledGraph, step_limit_error
from graphcore.runs import RunRecord, RunStatus, now_iso
from graphcore.step import run_step
from graphcore.store.layout import encode_writes
from graphcore.types import TaskWrites
from worker.commit import StepCommit
from worker.context import WorkerContext, get_context
from worker.lease import Lease

__all__ = ["step_job"]

log = logging.getLogger("graphq.step")


def step_job(run_id: str, thread_id: str, step: int) -> str:
    """Run super-step ``step`` of ``run_id``; returns a short outcome for RQ's result.

    Raises:
        RunNotFoundError: the run record is gone.
    """
    ctx = get_context()
    lease = Lease(ctx.kv, thread_id, run_id, ctx.settings.lease_ttl_s, ctx.settings.heartbeat_interval_s)
    code, raw = retry_transient(lease.claim, keys.run(thread_id, run_id), step)
    if code == 0:
        raise RunNotFoundError(f"no run with id {run_id!r}")
    run = RunRecord.from_hash(raw)
    if code == 1:
        return f"skipped: run is {run.status.value} at step {run.step}"
    if code == 2:
        return "skipped: another worker holds the lease"
    try:
        with lease:
            return _attempts(ctx, run, lease, None if b"partial" in raw else {})
    except LeaseLostError as exc:
        log.warning("run %s step %s: %s", run_id, step, exc)
        return f"rejected: {exc}"
    except Exception as exc:
        _fail(ctx, run, exc)
        return f"failed: {type(exc).__name__}"
    finally:
        lease.release()


def _attempts(
    ctx: WorkerContext, run: RunRecord, lease: Lease, finished: dict[str, TaskWrites] | None
) -> str:
    """Run the step body, again on a transient Redis error: finished tasks are skipped (I2) and the commit
    is fenced (I1), so a retry cannot apply a task's writes twice. ``finished`` None reads the pending
    writes from the store, as every retry does (tasks may have finished during the failed attempt)."""
    try:
        return _run(ctx, run, lease, finished)
    except Exception as exc:
        if not is_transient(exc):
            raise
        log.warning(
            "run %s step %s: transient Redis error, running the step again: %s", run.id, run.step, exc
        )
    return str(redis_retrying()(_run, ctx, run, lease, None))


def _fail(ctx: WorkerContext, run: RunRecord, exc: BaseException) -> None:
    """Mark the run Failed with ``exc`` (its traceback includes the node's own error, chained as cause)."""
    tb = "".join(traceback.format_exception(exc))
    if ctx.runs.fail(run, exc, tb):
        stage_event(
            ctx.kv,
            run.thread_id,
            run.id,
            "status",
            run.step,
            {"status": "failed", "error": f"{type(exc).__name__}: {exc}"},
        )
    log.info("run %s failed at step %s: %s", run.id, run.step, exc)


def _config(ctx: WorkerContext, graph: CompiledGraph, run: RunRecord) -> RunConfig:
    """The run's config (fixed for the whole run, so built once per run and process)."""
    cfg = ctx.configs.get(run.id)
    if cfg is None:
        cfg = graph.config_for({**run.config, "thread_id": run.thread_id, "run_id": run.id})
        ctx.configs.put(run.id, cfg)
    return cfg


def _run(ctx: WorkerContext, run: RunRecord, lease: Lease, finished: dict[str, TaskWrites] | None) -> str:
    graph = ctx.registry.get(run.workflow)
    cfg = _config(ctx, graph, run)
    store = ctx.store(run.workflow)
    if run.status == RunStatus.QUEUED:
        ctx.runs.set_status(
            run, RunStatus.RUNNING, allowed=(RunStatus.QUEUED,), fields={"started_at": now_iso()}
        )
        stage_event(ctx.kv, run.thread_id, run.id, "status", run.step, {"status": "running"})
    cp = _head(ctx, graph, run, lease)
    limit = cfg.step_limit()
    if run.step >= limit:
        raise step_limit_error(limit, cp)
    if finished is None:  # a retry: tasks may have finished during the failed attempt
        finished = dict(store.get_writes(run.thread_id, cp.id))

    def persist(tw: TaskWrites) -> None:
        _put_writes(ctx, run, cp, lease, tw)

    def emit(task: Any, chunk: Any) -> None:
        stage_event(ctx.kv, run.thread_id, run.id, "custom", run.step, {"node": task.node, "chunk": chunk})

    # One task alone commits its writes directly: pending writes only matter while siblings still run.
    on_done = persist if len(cp.next_tasks) > 1 else None
    outcome = run_step(graph, cp, cfg, finished=finished, on_task_done=on_done, writer=emit)
    if outcome.error is not None:
        raise outcome.error
    new = apply_writes(graph, cp, outcome.results, {"run_id": run.id})
    _commit(ctx, run, lease, cp, new, outcome.results)
    return "completed" if not new.next_tasks else f"committed step {run.step}"


def _head(ctx: WorkerContext, graph: CompiledGraph, run: RunRecord, lease: Lease) -> Checkpoint:
    """The checkpoint the step starts from; at step 0 the input is applied and committed first."""
    store = ctx.store(run.workflow)
    if run.head is not None:
        cp = store.get(run.thread_id, run.head)
        if cp is None:
            raise GraphqError(f"run {run.id}: head checkpoint {run.head} is missing")
        return cp
    cp = apply_input(graph, None, run.input, {"run_id": run.id})
    _commit(ctx, run, lease, None, cp, [])
    return cp


def _put_writes(ctx: WorkerContext, run: RunRecord, cp: Checkpoint, lease: Lease, tw: TaskWrites) -> None:
    blob = encode_writes(tw)
    key = keys.pending_writes(run.thread_id, "", cp.id)
    run_key = keys.run(run.thread_id, run.id)
    if not ctx.fenced_hset(keys=[lease.key, key, run_key], args=[lease.token, tw.task_id, blob]):
        raise LeaseLostError(f"lease lost while run {run.id} step {run.step} was running")


def _commit(
    ctx: WorkerContext,
    run: RunRecord,
    lease: Lease,
    parent: Checkpoint | None,
    cp: Checkpoint,
    results: list[TaskWrites],
) -> None:
    """Fenced commit of ``cp`` (I1); ``parent`` None means the input checkpoint of step 0.

    Raises:
        LeaseLostError: the fence refused: the lease is gone, or the run finished or moved on.
    """
    store = ctx.store(run.workflow)
    # The run's head is the thread's head (one active run per thread, I3), so logs may grow in place.
    plan = store.plan_put(run.thread_id, cp, parent_is_head=parent is not None and parent.id == run.head)
    extra, next_run = _run_update(run, parent, cp, results)
    writes_of = parent.id if parent is not None else cp.id
    script_keys, argv = ctx.commit.args(run.thread_id, run.id, writes_of, lease, run.step, cp.id, plan, extra)

    def stage_next(pipe: Any) -> None:
        if next_run is not None:
            ctx.queue.stage(pipe, next_run)

    ctx.commit.run(stage_next, script_keys, argv, f"run {run.id} step {run.step}")
    if extra.drop_lease:
        lease.dropped()
    store.stored(cp, plan)
    run.head = cp.id
    run.step += 0 if parent is None else 1


def _run_update(
    run: RunRecord, parent: Checkpoint | None, cp: Checkpoint, results: list[TaskWrites]
) -> tuple[StepCommit, RunRecord | None]:
    """The run's side of a commit, and the run as its next step's job sees it (None: no next step)."""
    values_event = ("values", cp.step, {"checkpoint_id": cp.id})
    if parent is None:
        return StepCommit(run_fields={"head": cp.id}, events=[values_event]), None
    events: list[tuple[str, int, Any]] = [("updates", cp.step, {r.node: dict(r.writes)}) for r in results]
    events.append(values_event)
    fields = {"head": cp.id, "step": str(run.step + 1)}
    next_run = None
    if cp.next_tasks:
        next_run = run.model_copy(update={"step": run.step + 1})
    else:
        # The result is the head checkpoint's values; it is read from there, not stored twice (I4).
        fields |= {"status": RunStatus.COMPLETED.value, "ended_at": now_iso()}
        events.append(("status", cp.step, {"status": "completed"}))
    had_pending = len(parent.next_tasks) > 1
    extra = StepCommit(fields, ["partial"] if had_pending else [], events, True, had_pending)
    return extra, next_run
