"""The step job (R2–R4): one RQ job runs one super-step of one run.

Flow of ``step_job(run, thread, k)``:

1. Load the run; a terminal run or one already past step ``k`` makes this a duplicate → skip.
2. Take the lease (R18); someone else holding it is running this step → skip.
3. Step 0 only: apply the input and commit the input checkpoint (so that task ids are stable, I2).
4. Load the head checkpoint and the pending writes of tasks that finished in an earlier attempt (I2).
5. Run the remaining tasks; persist each task's writes as it finishes, fenced by the lease token.
6. Commit (:mod:`worker.commit`): one Lua compare-and-set on (run, step, lease token) writes the
   checkpoint, advances the run, appends events and enqueues the job of step ``k+1`` (I1, R3).
"""

from __future__ import annotations

import logging
import time
import traceback
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from redis.exceptions import NoScriptError
from rq import get_current_job

from graphcore import keys
from graphcore.backend.admission import release as free_slot
from graphcore.backend.connection import is_transient, outage_retrying, outlast
from graphcore.backend.events import encode_event
from graphcore.backend.expiry import DEADLINE_FIELD, deadline_fields, request_deadline
from graphcore.backend.lua import script
from graphcore.backend.retention import keep_result, remove_after_completion, subgraph_keys
from graphcore.backend.runs import (
    CANCEL_ERROR,
    RunError,
    RunRecord,
    RunStatus,
    now_iso,
    run_timeout_error,
    run_timeout_s,
)
from graphcore.backend.store import stage_prune
from graphcore.backend.threads import hand_over
from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import Plan, encode_writes
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import apply_input, apply_writes, fork, task_id
from graphcore.engine.breakpoints import Stop as Breakpoint
from graphcore.engine.config import RunConfig, Scope, run_scope
from graphcore.engine.executor import CompiledGraph, start_point, step_limit_error, with_resume
from graphcore.engine.interrupts import interrupt_id, resume_plan
from graphcore.engine.step import RetryHook, run_step
from graphcore.engine.stream import update_payload
from graphcore.errors import (
    AppendConflictError,
    Cancelled,
    GraphqError,
    LeaseLostError,
    NodeTimeoutError,
)
from graphcore.types import TaskWrites
from worker import logs, metrics
from worker.breakpoints import stop_at, stopped
from worker.claim import CANCEL_ERROR_JSON, ClaimAhead
from worker.commit import CommitAhead, Completion, StepCommit, commit_verdict
from worker.context import WorkerContext, get_context
from worker.fence import REFUSED, RefusedWriteError, refused
from worker.handover import Stop, abandon
from worker.lease import Lease, retire_if_stuck
from worker.progress import step_progress
from worker.queue import StepJob
from worker.substore import FencedStore

__all__ = ["step_job"]

log = logging.getLogger("graphq.step")
ends = logging.getLogger("graphq.runs")
"""A run's failure or cancel, at WARNING: ``graphq worker`` shows it at its default level; the commands that
run a worker in process (``graphq run``, ``--wait``) report the end themselves and quiet this logger."""


def step_job(run_id: str, thread_id: str, step: int) -> str:
    """Run super-step ``step`` of ``run_id``; returns a short outcome for RQ's result. Its log lines carry
    the run, thread, step, workflow and tenant (:mod:`worker.logs`); it is counted and timed
    (:func:`worker.metrics.step_done`).

    A job whose run is gone (its thread expired or was deleted while the job waited) is skipped, not failed.
    """
    started = time.perf_counter()
    fields, token = logs.bind(run=run_id, thread=thread_id, step=step)
    result = None
    try:
        result = _step_job(run_id, thread_id, step, fields)
        return result
    finally:
        workflow = fields.get("workflow", "")
        ahead = _commit_ahead_of(get_current_job())
        if ahead is None:
            metrics.step_done(workflow, result, time.perf_counter() - started)
        else:  # counted once the commit's reply is in, with its outcome
            ahead.then = lambda outcome: metrics.step_done(workflow, outcome, time.perf_counter() - started)
        logs.unbind(token)


def _commit_ahead_of(job: Any) -> CommitAhead | None:
    """The commit ``job`` (the current RQ job) sends in RQ's success pipeline, if any."""
    return job.commit_ahead if isinstance(job, StepJob) else None


def _step_job(run_id: str, thread_id: str, step: int, fields: dict[str, Any]) -> str:
    ctx = get_context()
    ahead, claimed = _claimed_ahead(run_id, thread_id, step)
    lease = ahead or Lease(
        ctx.kv, thread_id, run_id, ctx.settings.lease_ttl_s, ctx.settings.heartbeat_interval_s
    )
    if claimed is None:
        claimed = outlast(lease.claim, step, now_iso(), CANCEL_ERROR_JSON, ctx.worker_id)
    code, raw = claimed
    if code == 0:  # its thread expired (GRAPHQ_THREAD_TTL_S) or was deleted while the job waited
        log.info("run %s step %s: no such run (its thread expired or was deleted); job skipped", run_id, step)
        return "skipped: no such run (its thread expired or was deleted)"
    run = RunRecord.from_hash(raw)
    fields["workflow"], fields["tenant"] = run.workflow, run.tenant
    if code in (1, 2):
        held = (
            "another worker holds the lease" if code == 2 else f"run is {run.status.value} at step {run.step}"
        )
        return f"skipped: {held}"
    if code == 4:
        _release_thread(ctx, run)
        return "canceled before the step"
    try:
        with lease:
            return _attempts(ctx, run, lease, None if b"partial" in raw else {})
    except LeaseLostError as exc:
        if not isinstance(exc, RefusedWriteError):  # that one was logged where it was refused
            log.warning("run %s step %s: %s", run_id, step, exc)
        return f"rejected: {exc}"
    except Cancelled:  # a node stopped on its cancel token after `cancel --interrupt`
        if lease.stop is not None:  # or the step was given up: a shutdown, its deadline
            abandon(ctx.kv, ctx.settings, thread_id, run_id, lease.token, lease.stop, lease.step_number)
            return f"{lease.stop.status.value}: {lease.stop.error.message}"
        note = "canceled by request; running nodes were signalled"
        _end(ctx, run, lease, RunStatus.CANCELED, CANCEL_ERROR.model_copy(update={"message": note}))
        return "canceled during the step"
    except Exception as exc:
        _fail(ctx, run, lease, exc)
        return f"failed: {type(exc).__name__}"
    finally:
        lease.release()
        retire_if_stuck()


def _claimed_ahead(
    run_id: str, thread_id: str, step: int
) -> tuple[Lease | None, tuple[int, dict[bytes, bytes]] | None]:
    """The lease and reply of the claim sent in RQ's start pipeline for this job (:mod:`worker.claim`):
    ``(None, None)`` when there was none; ``(lease, None)`` when it has no usable reply (claim again with
    that lease's token)."""
    job = get_current_job()
    ahead = getattr(job, "claim", None)
    if not isinstance(ahead, ClaimAhead):
        return None, None
    return ahead.lease, ahead.result(run_id, thread_id, step)


def _attempts(
    ctx: WorkerContext, run: RunRecord, lease: Lease, finished: dict[str, TaskWrites] | None
) -> str:
    """Run the step body, again on a transient Redis error, for as long as Redis is away (a worker outlives
    an outage): finished tasks are skipped (I2) and every write is fenced (I1), so a retry cannot apply a
    task's writes twice, and one whose lease lapsed meanwhile changes nothing (the step is left to the
    reaper). ``finished`` None reads the pending writes from the store, as every retry does (tasks may have
    finished during the failed attempt). Writes retry in place (:func:`outlast`); this reruns the step when
    a read failed."""
    try:
        return _run(ctx, run, lease, finished)
    except Exception as exc:
        if not is_transient(exc):
            raise
        log.warning(
            "run %s step %s: transient Redis error, running the step again: %s", run.id, run.step, exc
        )
    return str(outage_retrying()(_run, ctx, run, lease, None))


def _fail(ctx: WorkerContext, run: RunRecord, lease: Lease, exc: BaseException) -> None:
    """Mark the run Failed with ``exc`` (its traceback includes the node's own error, chained as cause)."""
    tb = "".join(traceback.format_exception(exc))
    _end(ctx, run, lease, RunStatus.FAILED, RunError(type=type(exc).__name__, message=str(exc), traceback=tb))


def _release_thread(ctx: WorkerContext, run: RunRecord) -> None:
    """The run ended: the next run waiting for its thread starts (I3)."""
    outlast(hand_over, ctx.kv, ctx.runs, ctx.queue, run.thread_id, run.id)


def _set_status(ctx: WorkerContext, run: RunRecord, lease: Lease, status: RunStatus, **options: Any) -> bool:
    """:meth:`RunStore.set_status` fenced by the step's lease (I1, I7), retried through a Redis outage.

    Raises:
        LeaseLostError: the lease is no longer this worker's; logged and counted (:mod:`worker.fence`).
    """
    try:
        return bool(outlast(ctx.runs.set_status, run, status, fence=(lease.key, lease.token), **options))
    except LeaseLostError:
        raise refused("status", run.id, run.step, f"status {status.value}") from None


def _end_completed(ctx: WorkerContext, run: RunRecord, lease: Lease, step: int) -> None:
    """Complete a run that has no step to run (its result is the values of the head checkpoint, of thread
    step ``step``)."""
    done = [("status", step, {"status": "completed"})]
    if _set_status(ctx, run, lease, RunStatus.COMPLETED, fields={"ended_at": now_iso()}, events=done):
        _release_thread(ctx, run)
        _after_completion(ctx, run, None)


def _after_completion(ctx: WorkerContext, run: RunRecord, head: Checkpoint | None) -> None:
    """``GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false`` (R7): the completed run's thread loses its
    checkpoints, unless another of its runs needs them (:mod:`graphcore.backend.retention`). After the
    commit and the hand-over, never in them; a failure is logged and leaves them, which is safe."""
    if ctx.settings.keep_checkpoints_after_completion:
        return
    try:
        remove_after_completion(ctx.kv, run.thread_id, run.id, head)
    except Exception as exc:  # the run is complete either way; its checkpoints stay, as by default
        log.warning("run %s: its checkpoints were not removed after completion: %s", run.id, exc)


def _end(ctx: WorkerContext, run: RunRecord, lease: Lease, status: RunStatus, error: RunError) -> None:
    """End the run (compare-and-set from a non-terminal status, I7, fenced by the lease, I1) and record
    why; a worker that lost its lease changes nothing (the refusal is logged and counted)."""
    fields = {"error": error.model_dump_json(), "ended_at": now_iso()}
    event = {"status": status.value, "error": f"{error.type}: {error.message}"}
    step = _after_head(ctx, run)
    try:
        ended = _set_status(ctx, run, lease, status, fields=fields, events=[("status", step, event)])
    except LeaseLostError:
        return
    if ended:
        _release_thread(ctx, run)
    ends.warning("run %s %s at step %s: %s", run.id, status.value, run.step, error.message)


@dataclass(frozen=True)
class _Attempt:
    """What is fixed for one attempt of a run (a run started again by the reaper may pin where it starts),
    built once per attempt and process: its config, and when its run timeout falls (R15: counted from
    the run's creation, queue included).

    Attributes:
        cfg: the run's config.
        limit_s: its run timeout, seconds (:func:`graphcore.backend.runs.run_timeout_s`).
        deadline: ``time.time()`` at which it times out.
        stop: how a step still running at ``deadline`` ends the run (Canceled, ``RunTimeout``).
    """

    cfg: RunConfig
    limit_s: float
    deadline: float
    stop: Stop


def _attempt(ctx: WorkerContext, graph: CompiledGraph, run: RunRecord) -> _Attempt:
    """The run's :class:`_Attempt`, from this process's cache."""
    key = f"{run.id}:{run.attempt}"
    fixed = ctx.attempts.get(key)
    if fixed is None:
        cfg = graph.config_for({**run.config, "thread_id": run.thread_id, "run_id": run.id})
        limit = run_timeout_s(run, cfg)
        stop = Stop(RunStatus.CANCELED, run_timeout_error(limit, "while its step was running"))
        fixed = _Attempt(cfg, limit, datetime.fromisoformat(run.created_at).timestamp() + limit, stop)
        ctx.attempts.put(key, fixed)
    return fixed


def _run(ctx: WorkerContext, run: RunRecord, lease: Lease, finished: dict[str, TaskWrites] | None) -> str:
    graph = ctx.registry.get(run.workflow)
    attempt = _attempt(ctx, graph, run)
    cfg = attempt.cfg
    timeout = _timed_out(attempt)
    if timeout is not None:
        _end(ctx, run, lease, RunStatus.CANCELED, timeout)
        return "canceled: run timeout"
    _mark_running(ctx, run, lease, cfg)
    cp, continued = _head(ctx, graph, run, lease, cfg)
    if not cp.next_tasks:  # continuing a thread that has nothing left to run
        _end_completed(ctx, run, lease, cp.step)
        return "completed: nothing to run"
    _check_limit(run, cfg, cp)
    pending = finished is None or continued  # the step has pending writes from an earlier attempt
    if pending:
        finished = dict(ctx.store(run.workflow).get_writes(run.thread_id, cp.id))
    stop = stop_at(graph, run, cp, finished or {})
    if stop is not None:  # a static breakpoint: pause before running anything
        return _pause(ctx, run, lease, cp, [], persisted=True, stop=stop)
    answers = _answers(ctx, run, cp) if pending else {}
    finished, resume = resume_plan(finished or {}, answers)
    # Numbered like the step's updates and values events: the step of the checkpoint it will commit.
    progress = step_progress(
        cp.step + 1, len(cp.next_tasks), len(finished), lambda *event: _event(ctx, run, lease, *event)
    )

    def persist(tw: TaskWrites) -> None:
        _put_writes(ctx, run, cp, lease, tw)
        if progress is not None:
            progress.task_done()

    def emit(task: Any, chunk: Any) -> None:  # a node's stream write waits out a Redis outage
        _event(ctx, run, lease, "custom", cp.step + 1, {"node": task.node, "chunk": chunk})

    lease.limit(*_deadline(graph, attempt, cp))
    # One task alone commits its writes directly: pending writes only matter while siblings still run.
    on_done = persist if len(cp.next_tasks) > 1 else None
    timed = metrics.node_timer(run.workflow, time.perf_counter(), on_done)  # on_done itself: metrics off
    run_key = keys.run(run.thread_id, run.id)
    subgraphs = FencedStore(ctx.store(run.workflow), lease.key, lease.token, run_key, (run.id, run.step))
    with run_scope(Scope(subgraphs, run.thread_id)):  # subgraphs checkpoint here, fenced (G7, I1)
        outcome = run_step(
            graph,
            cp,
            with_resume(cfg, resume, answers),
            finished=finished,
            on_task_done=timed,
            writer=emit,
            cancel=lease.cancel,
            on_retry=_retry_events(ctx, run, lease, cp.step + 1),
        )
    if outcome.error is not None:
        raise outcome.error
    if any(r.interrupts for r in outcome.results):
        return _pause(ctx, run, lease, cp, outcome.results, persisted=on_done is not None)
    new = apply_writes(graph, cp, outcome.results, {"run_id": run.id})
    return _commit_step(ctx, graph, run, lease, cp, new, outcome.results, pending or on_done is not None)


def _check_limit(run: RunRecord, cfg: RunConfig, cp: Checkpoint) -> None:
    """Raise :class:`StepLimitError` when the run has taken its ``max_super_steps`` (C1)."""
    limit = cfg.step_limit()
    if run.step >= limit:
        raise step_limit_error(limit, cp)


def _timed_out(attempt: _Attempt) -> RunError | None:
    """The timeout error when the run is older than its run timeout (R15: from creation, queue included)."""
    now = time.time()
    if now <= attempt.deadline:
        return None
    return run_timeout_error(attempt.limit_s, f"after {now - (attempt.deadline - attempt.limit_s):.1f} s")


def _deadline(graph: CompiledGraph, attempt: _Attempt, cp: Checkpoint) -> tuple[float, Stop, int]:
    """When the step is given up if still running, how the run then ends, and the step's thread number
    (item 5 of issue 8): at the run's deadline (R15, Canceled), or earlier when every task's node has a
    timeout and no retry policy (G10, Failed at the longest of them)."""
    at, stop = attempt.deadline, attempt.stop
    specs = [graph.nodes[t.node] for t in cp.next_tasks]
    if specs and all(s.timeout_s is not None and s.retry is None for s in specs):
        slowest = max(specs, key=lambda s: s.timeout_s or 0.0)
        node_at = time.time() + (slowest.timeout_s or 0.0)
        if node_at < at:
            error = NodeTimeoutError(slowest.name, slowest.timeout_s or 0.0)
            at, stop = node_at, Stop(RunStatus.FAILED, RunError(type="NodeTimeoutError", message=str(error)))
    return at, stop, cp.step + 1


def _retry_events(ctx: WorkerContext, run: RunRecord, lease: Lease, step: int) -> RetryHook:
    """Record each retry of a node in the run's events (G9), in thread step ``step``."""

    def on_retry(task: Any, attempt: int, error: BaseException, wait_s: float) -> None:
        event = {
            "node": task.node,
            "attempt": attempt,
            "error": f"{type(error).__name__}: {error}",
            "wait_s": round(wait_s, 3),
        }
        _event(ctx, run, lease, "retry", step, event)

    return on_retry


def _after_head(ctx: WorkerContext, run: RunRecord) -> int:
    """The thread's number of the step after the run's head checkpoint: the step this job runs (events are
    numbered like checkpoints, ``graphq state --history``); the run's own count before it has a head, or
    when the head cannot be read (this also serves the failure path: an unknown workflow, a bad record)."""
    if run.head is None:
        return run.step
    try:
        head = ctx.store(run.workflow).get(run.thread_id, run.head)
    except Exception:  # recording how the run ended matters more than the step's number
        return run.step
    return run.step if head is None else head.step + 1


def _first_step(ctx: WorkerContext, run: RunRecord, cfg: RunConfig) -> int:
    """The thread's number of the step this job runs, before :func:`_head` sets the run's head: after the
    start point (C2, C3), and after the input checkpoint when there is an input to apply."""
    if run.head is not None:
        return _after_head(ctx, run)
    parent, _ = start_point(ctx.store(run.workflow), run.thread_id, cfg)
    if parent is None:
        return 0
    return parent.step + (1 if run.input is None else 2)


def _mark_running(ctx: WorkerContext, run: RunRecord, lease: Lease, cfg: RunConfig) -> None:
    if run.status == RunStatus.QUEUED:  # its first step starts: how long after its creation (queue, slot)
        metrics.run_started(run.workflow, time.time() - datetime.fromisoformat(run.created_at).timestamp())
        started = {"started_at": now_iso()} if run.started_at is None else {}
        running = [("status", _first_step(ctx, run, cfg), {"status": "running"})]
        _set_status(
            ctx, run, lease, RunStatus.RUNNING, allowed=(RunStatus.QUEUED,), fields=started, events=running
        )


def _answers(ctx: WorkerContext, run: RunRecord, cp: Checkpoint) -> dict[str, Any]:
    """Interrupt id → answer, as given with ``graphq runs answer`` for the step after ``cp``."""
    raw = ctx.kv.hgetall(keys.answers(run.thread_id, "", cp.id))
    return {k.decode(): serde.loads(v) for k, v in raw.items()}


def _pause(
    ctx: WorkerContext,
    run: RunRecord,
    lease: Lease,
    cp: Checkpoint,
    results: list[TaskWrites],
    persisted: bool,
    stop: Breakpoint | None = None,
) -> str:
    """A node asked a human (G6): keep every task's outcome as pending writes, then AwaitingInput, unless a
    cancel request arrived during the step (X1): then the run ends Canceled, nobody is asked. With ``stop``
    (and no ``results``) the run stopped at a static breakpoint instead (:mod:`worker.breakpoints`)."""
    if not persisted:
        for tw in results:
            _put_writes(ctx, run, cp, lease, tw)
    if _cancel_requested(ctx, run):
        _end(ctx, run, lease, RunStatus.CANCELED, _PAUSE_CANCEL)
        return "canceled: a cancel request arrived during the step"
    requests = [
        {"id": i.id, "node": i.node, "value": i.value, "created_at": i.created_at}
        for r in results
        for i in r.interrupts
    ]
    _record_requests(ctx, run, lease, cp, results)
    where, fields = stopped(stop, cp)
    events = [
        ("interrupt", cp.step + 1, {"requests": requests, **where}),
        ("status", cp.step + 1, {"status": "awaiting_input"}),
    ]
    # The lease goes back in the same script as the status: an answer's job can claim the step at once.
    # The same script indexes the run under its earliest request deadline, if a request has one (R13).
    lease.dropping()
    release = (keys.lease_index(), lease.member)
    waiting = (RunStatus.RUNNING,)
    due = request_deadline([i for r in results for i in r.interrupts], cp.step + 1)
    options: dict[str, Any] = {"allowed": waiting, "events": events, "release": release, "fields": fields}
    if due is not None:
        options |= {"deadline_ms": due[0], "fields": {DEADLINE_FIELD: due[1]}}
    if _set_status(ctx, run, lease, RunStatus.AWAITING_INPUT, **options):
        lease.dropped()
        outlast(free_slot, ctx.kv, ctx.queue, run.thread_id, run.id)  # R8: the answer waits for a slot
    if _cancel_requested(ctx, run):  # requested just before the pause (later ones end the waiting run)
        _cancel_paused(ctx, run, cp.step + 1)
        return "canceled: a cancel request arrived during the step"
    if stop is not None:
        return f"stopped at a breakpoint: {stop.when} {list(stop.nodes)}"
    return f"awaiting input: {len(requests)} request(s)"


def _cancel_paused(ctx: WorkerContext, run: RunRecord, step: int) -> None:
    """End a run that just paused, Canceled (a cancel request came in while it paused). Its lease went back
    with the pause; from AwaitingInput only this compare-and-set or an answer moves the run on."""
    fields = {"error": _PAUSE_CANCEL.model_dump_json(), "ended_at": now_iso()}
    event = {"status": "canceled", "error": f"{_PAUSE_CANCEL.type}: {_PAUSE_CANCEL.message}"}
    waiting = (RunStatus.AWAITING_INPUT,)
    options: dict[str, Any] = {"allowed": waiting, "fields": fields, "events": [("status", step, event)]}
    if outlast(ctx.runs.set_status, run, RunStatus.CANCELED, **options):
        _release_thread(ctx, run)


_PAUSE_CANCEL = CANCEL_ERROR.model_copy(
    update={"message": "canceled by request during the step that asked for input; nobody is asked"}
)


def _cancel_requested(ctx: WorkerContext, run: RunRecord) -> bool:
    """Whether a cancel request is recorded on the run (``cancel`` asked while a step of it ran)."""
    return bool(outlast(ctx.kv.hexists, keys.run(run.thread_id, run.id), "cancel"))


def _record_requests(
    ctx: WorkerContext, run: RunRecord, lease: Lease, cp: Checkpoint, results: list[TaskWrites]
) -> None:
    """Remember where each request of the run was made (checkpoint, task index, call index), so that a
    second answer can start a branch there (R16). Requests made inside subgraphs are not recorded."""
    order = {task_id(cp.id, i, t.node): i for i, t in enumerate(cp.next_tasks)}
    records = {
        i.id: serde.dumps(
            {
                "checkpoint_id": cp.id,
                "task": order[r.task_id],
                "call": i.index,
                "node": i.node,
                "value": i.value,
                **deadline_fields(i.deadline_ms),
            },
            path="request",
        )
        for r in results
        for i in r.interrupts
        if i.task_id == r.task_id
    }
    if records:
        _fenced_hset(ctx, run, lease, "requests", (keys.requests(run.thread_id, run.id), records))


def _seed_answers(ctx: WorkerContext, run: RunRecord, lease: Lease, cp: Checkpoint) -> None:
    """A branch run (R16): store its preset answers under the interrupt ids of the branch's tasks."""
    answers = {}
    for where, value in run.preset_answers.items():
        task_index, call = (int(part) for part in where.split(":"))
        node = cp.next_tasks[task_index].node
        answers[interrupt_id(task_id(cp.id, task_index, node), call)] = serde.dumps(value, path="answer")
    _fenced_hset(ctx, run, lease, "answers", (keys.answers(run.thread_id, "", cp.id), answers))


def _head(
    ctx: WorkerContext, graph: CompiledGraph, run: RunRecord, lease: Lease, cfg: RunConfig
) -> tuple[Checkpoint, bool]:
    """The checkpoint the step starts from, and whether it continues the thread where it stopped.

    At step 0: with ``resume_if_exists`` (C2) the thread's latest checkpoint is the parent; a run without
    input continues that checkpoint's next tasks; otherwise the input is applied (entry node again) and the
    input checkpoint committed first, so that task ids are stable (I2).
    """
    store = ctx.store(run.workflow)
    if run.head is not None:
        cp = store.get(run.thread_id, run.head)
        if cp is None:
            raise GraphqError(f"run {run.id}: head checkpoint {run.head} is missing")
        return cp, False
    parent, forks = start_point(store, run.thread_id, cfg)
    if forks and parent is not None:
        parent = fork(parent, {"run_id": run.id})
        _commit_start(ctx, run, lease, parent, may_append=False)
    if run.preset_answers and parent is not None:
        _seed_answers(ctx, run, lease, parent)
    if run.input is None and parent is not None:
        _fenced_hset(ctx, run, lease, "head", (keys.run(run.thread_id, run.id), {"head": parent.id}))
        run.head = parent.id
        return parent, True
    cp = apply_input(graph, parent, run.input, {"run_id": run.id})
    _commit_start(ctx, run, lease, cp, may_append=parent is not None)
    return cp, False


def _commit_start(ctx: WorkerContext, run: RunRecord, lease: Lease, cp: Checkpoint, may_append: bool) -> None:
    """Commit a checkpoint that starts the run (input or fork): it becomes the run's head; no step runs."""
    extra = StepCommit(run_fields={"head": cp.id}, events=[("values", cp.step, {"checkpoint_id": cp.id})])
    _commit(ctx, run, lease, cp, extra, may_append=may_append, writes_of=cp.id)


def _put_writes(ctx: WorkerContext, run: RunRecord, cp: Checkpoint, lease: Lease, tw: TaskWrites) -> None:
    """Persist a finished task's writes (I2), marking the run as having pending writes."""
    pending = (keys.pending_writes(run.thread_id, "", cp.id), {tw.task_id: encode_writes(tw)})
    _fenced_hset(ctx, run, lease, "pending", pending, (keys.run(run.thread_id, run.id), {"partial": "1"}))


_told: weakref.WeakSet[Lease] = weakref.WeakSet()
"""Leases whose step was told (logged) that its events are refused: once a step, not once an event."""


def _event(ctx: WorkerContext, run: RunRecord, lease: Lease, mode: str, step: int, data: Any) -> None:
    """Append one event of the step (custom chunk, retry, progress) to the run's stream, only while this
    worker holds the lease (I1; retried through a Redis outage). A refused event is counted (in the run hash
    and :data:`worker.fence.REFUSED`); the node goes on (its writes and commit will be refused too)."""
    fields = encode_event(mode, step, data)
    script_keys = [lease.key, keys.run(run.thread_id, run.id), keys.run_events(run.thread_id, run.id)]
    args = [lease.token, fields["mode"], fields["step"], fields["data"]]
    if outlast(script(ctx.kv, "fenced_xadd"), keys=script_keys, args=args):
        return
    if lease in _told:
        REFUSED.add("events")
        return
    _told.add(lease)
    refused("events", run.id, run.step, f"a {mode} event (and any later one of this step)")


_WHAT = {
    "pending": "a task's pending writes",
    "head": "the run's head",
    "answers": "the branch run's answers",
    "requests": "the run's request records",
}


def _fenced_hset(
    ctx: WorkerContext, run: RunRecord, lease: Lease, kind: str, *writes: tuple[str, dict[str, Any]]
) -> None:
    """HSET each ``(hash key, fields)`` of ``writes`` in one script, only while this worker holds the step's
    lease (I1); retried through a Redis outage.

    Raises:
        LeaseLostError: the lease is no longer this worker's; nothing was written (logged and counted).
    """
    args: list[Any] = [lease.token, kind]
    for _, fields in writes:
        args.append(len(fields))
        args += [x for pair in fields.items() for x in pair]
    thread_keys = keys.thread_keys(run.thread_id)
    script_keys = [lease.key, keys.run(run.thread_id, run.id), thread_keys, *(key for key, _ in writes)]
    if not outlast(script(ctx.kv, "fenced_hset"), keys=script_keys, args=args):
        raise refused(kind, run.id, run.step, _WHAT[kind])


def _commit(
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
    :meth:`worker.commit.CommitScript.run`).

    Raises:
        LeaseLostError: the fence refused: the lease is gone, or the run finished or moved on (logged
            and counted, :mod:`worker.fence`).
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
        plan = _plan(ctx, run, cp, append, drop)
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


def _plan(ctx: WorkerContext, run: RunRecord, cp: Checkpoint, may_append: bool, drop: Sequence[str]) -> Plan:
    """The store's plan for committing ``cp``; without history (R5) its prune deletes ``drop`` too, and an
    earlier run's result is kept before its head goes."""
    plan = ctx.store(run.workflow).plan_put(run.thread_id, cp, may_append=may_append)
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


def _commit_step(
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
    as it finishes). ``pending``: the step has pending writes (or answers) to drop with the commit.
    """
    events: list[tuple[str, int, Any]] = [("updates", cp.step, update_payload(graph, r)) for r in results]
    events.append(("values", cp.step, {"checkpoint_id": cp.id}))
    fields = {"head": cp.id, "step": str(run.step + 1)}
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
    if (
        job is not None
        and job.records_success()
        and extra.next_job is not None
        and ctx.store(run.workflow).history
    ):
        return _commit_on_success(ctx, job, run, lease, cp, extra, may_append=may_append, writes_of=parent.id)
    verdict = _commit(
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
        _release_thread(ctx, run)
        if verdict != "canceled":  # a cancel that won keeps them (X4)
            _after_completion(ctx, run, cp)
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
    success, right after this function returns (:class:`worker.commit.CommitAhead`, P1): the same script,
    fenced the same way, and the lease the commit's until its reply (:meth:`Lease.commit_later`). Returns
    the job's outcome if the commit applies; :func:`_committed_on_success` handles the reply."""
    plan = _plan(ctx, run, cp, may_append, ())
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
    KEYS and ARGV); returns the job's outcome, as :func:`_commit_step` would have. NOSCRIPT (Redis lost its
    scripts) sends the same call again once loaded (applied before a lost reply, it answers 'again'); an
    append conflict plans again without appending, in a round trip of its own (as :func:`_commit`); a
    refusal is logged and counted (I1); any other error fails the run, as in the step job. The job's result
    in RQ is written again when the commit did not apply. Never raises: it runs in RQ's bookkeeping."""
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
            _commit(ctx, run, lease, cp, extra, may_append=False, writes_of=writes_of)
        except LeaseLostError as exc:
            raise refused("commit", run.id, run.step, "the commit") from exc
    except LeaseLostError as exc:
        outcome = f"rejected: {exc}"
    except Exception as exc:
        outcome = f"failed: {type(exc).__name__}"
        _logged(_fail, ctx, run, lease, exc)
    else:
        _logged(lease.settle, committed=True)
        return f"committed step {run.step + 1}"
    _logged(lease.settle, committed=False)
    job.rewrite_result(outcome)
    return outcome


def _logged(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``fn(*args, **kwargs)``, an error logged, not raised (after a step job's end, in RQ's bookkeeping)."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        log.warning("%s failed after the step job's end: %s", getattr(fn, "__name__", fn), exc)


_LAST_STEP_CANCEL = CANCEL_ERROR.model_copy(
    update={"message": "canceled by request during the last super-step; its checkpoint is kept"}
)
