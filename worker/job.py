"""The step job (R2–R4): one RQ job runs one super-step of one run.

Flow of ``step_job(run, thread, k)``:

1. Load the run; a terminal run or one already past step ``k`` makes this a duplicate → skip.
2. Take the lease (R18); someone else holding it is running this step → skip.
3. Step 0 only: apply the input and commit the input checkpoint (so that task ids are stable, I2).
4. Load the head checkpoint and the pending writes of tasks that finished in an earlier attempt (I2).
5. Run the remaining tasks; persist each task's writes as it finishes, fenced by the lease token.
6. Commit: compare-and-set on (run, step, lease token) with WATCH; in one MULTI write the checkpoint,
   advance the run, append events, and enqueue step ``k+1`` or complete the run (I1, R3).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from redis.exceptions import WatchError

from graphcore import keys
from graphcore.algo import apply_input, apply_writes
from graphcore.checkpoint import Checkpoint
from graphcore.config import RunConfig
from graphcore.connection import redis_retrying
from graphcore.errors import GraphqError, LeaseLostError
from graphcore.events import stage_event
from graphcore.executor import CompiledGraph, step_limit_error
from graphcore.runs import TERMINAL, RunRecord, RunStatus, now_iso
from graphcore.step import run_step
from graphcore.store.layout import decode_writes_map, encode_writes
from graphcore.types import TaskWrites
from worker.context import WorkerContext, get_context
from worker.lease import Lease

__all__ = ["step_job"]

log = logging.getLogger("graphq.step")


def step_job(run_id: str, thread_id: str, step: int) -> str:
    """Run super-step ``step`` of ``run_id``; returns a short outcome for RQ's result.

    Raises:
        UnknownWorkflowError: this worker does not know the run's workflow; the run is left as it is (RQ
            records the job as failed) so that a worker that knows it can take the job again.
    """
    ctx = get_context()
    run = redis_retrying()(ctx.runs.get, run_id, thread_id)
    if run.terminal or run.step != step:
        return f"skipped: run is {run.status.value} at step {run.step}"
    if run.workflow not in ctx.registry.graphs:
        log.error("run %s: this worker has no workflow %r; leaving the job", run_id, run.workflow)
        ctx.registry.get(run.workflow)  # raises UnknownWorkflowError listing the known ones
    lease = Lease(ctx.kv, thread_id, run_id, ctx.settings.lease_ttl_s, ctx.settings.heartbeat_interval_s)
    finished = _claim(ctx, run, lease)
    if finished is None:
        return "skipped: another worker holds the lease"
    try:
        with lease:
            return _attempts(ctx, run, lease, finished)
    except LeaseLostError as exc:
        log.warning("run %s step %s: %s", run_id, step, exc)
        return f"rejected: {exc}"
    except Exception as exc:
        _fail(ctx, run, exc)
        return f"failed: {type(exc).__name__}"
    finally:
        lease.release()


def _claim(ctx: WorkerContext, run: RunRecord, lease: Lease) -> dict[str, TaskWrites] | None:
    """Take the lease and read the step's pending writes in one round trip; None when the lease is taken."""
    pipe = ctx.kv.pipeline(transaction=False)
    lease.stage_acquire(pipe)
    if run.head is not None:
        pipe.hgetall(keys.pending_writes(run.thread_id, "", run.head))
    acquired, *writes = pipe.execute()
    if not acquired:
        return None
    return decode_writes_map(writes[0]) if writes else {}


def _attempts(ctx: WorkerContext, run: RunRecord, lease: Lease, finished: dict[str, TaskWrites]) -> str:
    """Run the step body, again on a transient Redis error: finished tasks are skipped (I2) and the commit
    is fenced (I1), so a retry cannot apply a task's writes twice. Retries re-read the pending writes."""
    for attempt in redis_retrying():
        with attempt:
            first = attempt.retry_state.attempt_number == 1
            return _run(ctx, run, lease, finished if first else None)
    raise AssertionError("unreachable: tenacity re-raises the last error")


def _fail(ctx: WorkerContext, run: RunRecord, exc: BaseException) -> None:
    cause = exc.error if hasattr(exc, "error") and isinstance(exc.error, BaseException) else exc
    tb = "".join(traceback.format_exception(cause))
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


def _config(graph: CompiledGraph, run: RunRecord) -> RunConfig:
    return graph.config_for({**run.config, "thread_id": run.thread_id, "run_id": run.id})


def _run(ctx: WorkerContext, run: RunRecord, lease: Lease, finished: dict[str, TaskWrites] | None) -> str:
    graph = ctx.registry.get(run.workflow)
    cfg = _config(graph, run)
    store = ctx.store(run.workflow)
    if run.status == RunStatus.QUEUED:
        ctx.runs.set_status(
            run, RunStatus.RUNNING, allowed=(RunStatus.QUEUED,), fields={"started_at": now_iso()}
        )
        stage_event(ctx.kv, run.thread_id, run.id, "status", run.step, {"status": "running"})
    cp = _head(ctx, graph, run, lease, cfg)
    limit = cfg.step_limit()
    if run.step >= limit:
        raise step_limit_error(limit, cp)
    if finished is None:  # a retry: tasks may have finished during the failed attempt
        finished = dict(store.get_writes(run.thread_id, cp.id))

    def persist(tw: TaskWrites) -> None:
        _put_writes(ctx, run, cp, lease, tw)

    def emit(task: Any, chunk: Any) -> None:
        stage_event(ctx.kv, run.thread_id, run.id, "custom", run.step, {"node": task.node, "chunk": chunk})

    outcome = run_step(graph, cp, cfg, finished=finished, on_task_done=persist, writer=emit)
    if outcome.error is not None:
        raise outcome.error
    new = apply_writes(graph, cp, outcome.results, {"run_id": run.id})
    _commit(ctx, run, lease, cp, new, outcome.results)
    return "completed" if not new.next_tasks else f"committed step {run.step}"


def _head(
    ctx: WorkerContext, graph: CompiledGraph, run: RunRecord, lease: Lease, cfg: RunConfig
) -> Checkpoint:
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
    if not ctx.fenced_hset(keys=[lease.key, key], args=[lease.token, tw.task_id, blob]):
        raise LeaseLostError(f"lease lost while run {run.id} step {run.step} was running")


def _check_fence(ctx: WorkerContext, pipe: Any, run: RunRecord, lease: Lease) -> None:
    run_key = keys.run(run.thread_id, run.id)
    pipe.watch(run_key, lease.key)
    status, step, token = ctx.fence_read(keys=[run_key, lease.key], client=pipe)
    if token is None or token.decode() != lease.token:
        raise LeaseLostError(f"commit of run {run.id} step {run.step} rejected: lease no longer held")
    if status is None or RunStatus(status.decode()) in TERMINAL or int(step) != run.step:
        raise LeaseLostError(f"commit of run {run.id} step {run.step} rejected: run moved on")


def _commit(
    ctx: WorkerContext,
    run: RunRecord,
    lease: Lease,
    parent: Checkpoint | None,
    cp: Checkpoint,
    results: list[TaskWrites],
) -> None:
    """Fenced commit of ``cp`` (I1). ``parent`` None means the input checkpoint of step 0."""
    store = ctx.store(run.workflow)
    # The run's head is the thread's head (one active run per thread, I3), so logs may grow in place.
    plan = store.plan_put(run.thread_id, cp, parent_is_head=parent is not None and parent.id == run.head)
    for _ in range(3):
        with ctx.kv.pipeline(transaction=True) as pipe:
            try:
                _check_fence(ctx, pipe, run, lease)
                pipe.multi()
                store.stage(pipe, run.thread_id, cp, plan)
                _stage_run_update(ctx, pipe, run, parent, cp, results)
                if parent is not None:
                    # Give the lease back in the commit itself (WATCHed above, so still ours): the next
                    # step's job, enqueued in this same MULTI, can take it at once, and no release is needed.
                    pipe.delete(lease.key)
                pipe.execute()
                if parent is not None:
                    lease.dropped()
                store.stored(cp, plan)
                run.head = cp.id
                run.step += 0 if parent is None else 1
                return
            except WatchError:
                continue
    raise LeaseLostError(f"commit of run {run.id} step {run.step} kept racing; giving up")


def _stage_run_update(
    ctx: WorkerContext,
    pipe: Any,
    run: RunRecord,
    parent: Checkpoint | None,
    cp: Checkpoint,
    results: list[TaskWrites],
) -> None:
    run_key = keys.run(run.thread_id, run.id)
    if parent is None:
        pipe.hset(run_key, "head", cp.id)
        stage_event(pipe, run.thread_id, run.id, "values", cp.step, {"checkpoint_id": cp.id})
        return
    pipe.delete(keys.pending_writes(run.thread_id, "", parent.id))
    for r in results:
        stage_event(pipe, run.thread_id, run.id, "updates", cp.step, {r.node: dict(r.writes)})
    stage_event(pipe, run.thread_id, run.id, "values", cp.step, {"checkpoint_id": cp.id})
    fields: dict[str, str | bytes] = {"head": cp.id, "step": str(run.step + 1)}
    if cp.next_tasks:
        ctx.queue.stage(pipe, run.model_copy(update={"step": run.step + 1}))
    else:
        # The result is the head checkpoint's values; it is read from there, not stored twice (I4).
        fields |= {"status": RunStatus.COMPLETED.value, "ended_at": now_iso()}
        stage_event(pipe, run.thread_id, run.id, "status", cp.step, {"status": "completed"})
    pipe.hset(run_key, mapping=fields)
