"""The step job (R2–R4): one RQ job runs one super-step of one run.

Flow of ``step_job(run, thread, k)``:

1. Load the run; a terminal run or one already past step ``k`` makes this a duplicate → skip.
2. Take the lease (R18); someone else holding it is running this step → skip.
3. Step 0 only: apply the input and commit the input checkpoint (so that task ids are stable, I2).
4. Load the head checkpoint and the pending writes of tasks that finished in an earlier attempt (I2).
5. Run the remaining tasks; persist each task's writes as it finishes, fenced by the lease token.
6. Commit (:mod:`graphq.worker.step.committing`, the script :mod:`graphq.worker.step.commit_script`): one
   Lua compare-and-set on (run, step, lease token) writes the checkpoint, advances the run, appends events
   and enqueues the job of step ``k+1`` (I1, R3).

The step's attempt (:class:`~graphq.worker.step.attempt.StepAttempt`: the run, its lease, the head
checkpoint, this process's context) is built once, from the RQ job, and carries every write of the step,
fenced by its lease. A step that asks a human pauses the run instead (:mod:`graphq.worker.step.pausing`);
one that fails or is canceled ends it (:mod:`graphq.worker.step.ending`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rq import get_current_job

from graphcore import keys
from graphcore.backend.connection import is_transient, outage_retrying
from graphcore.backend.runs import CANCEL_ERROR, RunError, RunRecord, RunStatus, now_iso, run_timeout_error
from graphcore.checkpoints.layout import encode_writes
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import (
    StartTask,
    applied_input,
    apply_writes,
    fork,
    input_writes,
    is_input,
    start_run,
    stored_form,
    stored_writes,
    with_command,
)
from graphcore.engine.breakpoints import stop_of
from graphcore.engine.config import (
    RunConfig,
    budget_from,
    checkpoint_metadata,
    run_scope,
)
from graphcore.engine.executor import CompiledGraph, start_point, step_limit_error
from graphcore.engine.handlers import handled_of
from graphcore.engine.interrupts import resume_plan
from graphcore.engine.step import StepResult
from graphcore.errors import (
    Cancelled,
    ColdStop,
    GraphqError,
    LeaseLostError,
    NodeTimeoutError,
    PermanentError,
    SerializationError,
)
from graphcore.settings import Settings
from graphcore.types import TaskWrites
from graphq.worker import logs, metrics
from graphq.worker.queue import StepJob
from graphq.worker.step.attempt import RunLimits, StepAttempt, commit_ahead_of
from graphq.worker.step.breakpoints import stop_at
from graphq.worker.step.commit_script import StepCommit
from graphq.worker.step.committing import commit, commit_step
from graphq.worker.step.context import get_context
from graphq.worker.step.ending import complete, end, fail
from graphq.worker.step.fence import RefusedWriteError
from graphq.worker.step.hand_back import hand_back
from graphq.worker.step.handover import Stop
from graphq.worker.step.lease import PhaseError, retire_if_stuck
from graphq.worker.step.pausing import pause, seed_answers, step_answers
from graphq.worker.step.progress import step_progress
from graphq.worker.step.replies import ClaimResult
from graphq.worker.step.splitting import joins, run_split, splits
from graphq.worker.step.tasks import StepTasks, custom_writer, step_scope

__all__ = ["step_job"]

log = logging.getLogger("graphq.step")


def step_job(run_id: str, thread_id: str, step: int) -> str:
    """Run super-step ``step`` of ``run_id`` (the run's own count); returns a short outcome for RQ's result.
    Its log lines carry the run, thread, workflow and tenant, and the thread's step once its head checkpoint
    is read (:mod:`graphq.worker.logs`); it is counted and timed (:func:`graphq.worker.metrics.step_done`).

    A job whose run is gone (its thread expired or was deleted while the job waited) is skipped, not failed.
    """
    started = time.perf_counter()
    fields, token = logs.bind(run=run_id, thread=thread_id)  # the thread's step once known: at_step
    current = get_current_job()
    job = current if isinstance(current, StepJob) else None
    result = None
    try:
        result = _step_job(job, run_id, thread_id, step, fields)
        return result
    finally:
        workflow = fields.get("workflow", "")
        ahead = commit_ahead_of(job)
        if ahead is None:
            metrics.step_done(workflow, result, time.perf_counter() - started)
        else:  # counted once the commit's reply is in, with its outcome
            ahead.then = lambda outcome: metrics.step_done(workflow, outcome, time.perf_counter() - started)
        logs.unbind(token)


def _step_job(job: StepJob | None, run_id: str, thread_id: str, step: int, fields: dict[str, Any]) -> str:
    code, attempt = StepAttempt.start(get_context(), job, run_id, thread_id, step)
    if attempt is None:  # its thread expired (GRAPHQ_THREAD_TTL_S) or was deleted while the job waited
        log.info("run %s step %s: no such run (its thread expired or was deleted); job skipped", run_id, step)
        return "skipped: no such run (its thread expired or was deleted)"
    run, lease = attempt.run, attempt.lease
    fields["workflow"], fields["tenant"] = run.workflow, run.tenant
    if code == ClaimResult.OTHER_VERSION:
        return hand_back(attempt.ctx, run, job)
    if code == ClaimResult.HELD_ELSEWHERE:
        return "skipped: another worker holds the lease"
    if code == ClaimResult.STALE:
        return f"skipped: run is {run.status.value} at step {run.step}"
    if code == ClaimResult.CANCELED:
        attempt.release_thread()
        return "canceled before the step"
    try:
        outcome = _leased(attempt)
    except BaseException as exc:
        # Neither committed, paused nor ended (its ending was not written, or the process stops at once: a
        # ColdStop): the run stays where the reaper finds it. Released, the lease would leave it Running for
        # ever, in no index.
        lease.leave()
        log.warning(
            "run %s step %s left unfinished (%s: %s): its lease lapses and the reaper continues the run",
            run.id,
            step,
            type(exc).__name__,
            exc,
        )
        raise
    else:
        lease.release()
    finally:
        retire_if_stuck(attempt.ctx.listener)
    return outcome


def _leased(attempt: StepAttempt) -> str:
    """The step under its claimed ``lease``, and how it ends: committed, paused, failed (also by a
    ``SystemExit`` or ``KeyboardInterrupt`` of user code: the worker goes on), canceled, given up or
    rejected (the fence refused a write). Raises :class:`ColdStop` (the process stopping at once), or when
    that ending could not be written: the caller leaves the lease to lapse, the run to crash recovery."""
    run, lease = attempt.run, attempt.lease
    try:
        with lease:
            return _run_through_outages(attempt, None if attempt.partial else {})
    except LeaseLostError as exc:
        if not isinstance(exc, RefusedWriteError):  # that one was logged where it was refused
            log.warning("run %s step %s: %s", run.id, run.step, exc)
        return f"rejected: {exc}"
    except Cancelled:  # a node stopped on its cancel token after `cancel --interrupt`
        if lease.stop is not None:  # or the step was given up: a shutdown, its deadline
            attempt.abandon(lease.stop)
            return f"{lease.stop.status.value}: {lease.stop.error.message}"
        note = "canceled by request; running nodes were signalled"
        end(attempt, RunStatus.CANCELED, CANCEL_ERROR.model_copy(update={"message": note}))
        return "canceled during the step"
    except (ColdStop, PhaseError):  # the process stops at once (a signal), or a lease bug: the step is crash
        raise  # recovery's, as a killed one's (a bug in graphq must not fail a user's run)
    except BaseException as exc:  # also a SystemExit or KeyboardInterrupt of user code run outside a task (a
        fail(attempt, exc)  # router of START, a reducer): the run fails, the worker goes on
        return f"failed: {type(exc).__name__}"


def _run_through_outages(attempt: StepAttempt, finished: dict[str, TaskWrites] | None) -> str:
    """Run the step body, again on a transient Redis error, for as long as Redis is away (a worker outlives
    an outage): finished tasks are skipped (I2) and every write is fenced (I1), so a retry cannot apply a
    task's writes twice, and one whose lease lapsed meanwhile changes nothing (the step is left to the
    reaper). ``finished`` None reads the pending writes from the store, as every retry does (tasks may have
    finished during the failed run of the body). Writes retry in place (:func:`outlast`); this reruns the
    step when a read failed."""
    try:
        return _run(attempt, finished)
    except Exception as exc:
        if not is_transient(exc):
            raise
        run = attempt.run
        log.warning(
            "run %s step %s: transient Redis error, running the step again: %s", run.id, run.step, exc
        )
    return str(outage_retrying()(_run, attempt, None))


def _run(attempt: StepAttempt, finished: dict[str, TaskWrites] | None) -> str:
    ctx, run, lease = attempt.ctx, attempt.run, attempt.lease
    graph = ctx.registry.get(run.workflow)
    limits = attempt.limits(graph)
    cfg = limits.cfg
    timeout = _timed_out(limits)
    if timeout is not None:
        end(attempt, RunStatus.CANCELED, timeout)
        return "canceled: run timeout"
    _mark_running(attempt, cfg)
    scope = step_scope(attempt, cfg)
    with run_scope(scope):  # the routers from START run in the input's __start__ task
        cp, continued = _head(attempt, graph, cfg)
    attempt.at_step(cp.step + 1)
    pending = finished is None or continued  # the step has pending writes from an earlier attempt
    finished, handled = _earlier(attempt, cp) if pending else (finished or {}, {})
    read = cp  # the head as stored, before an input Command applies
    cp, finished = with_command(graph, cp, finished)  # an input Command's update and goto (LangGraph's)
    attempt.cp = cp  # the same id as head: its tasks' pending writes stay valid
    if not cp.next_tasks:  # continuing a thread that has nothing left to run (a Command's update shows)
        complete(attempt, cp.step, None if cp is read else cp.channel_values)
        return "completed: nothing to run"
    _check_step(graph, run, cfg, cp)
    stop = stop_at(graph, run, cp, finished)
    if stop is not None:  # a static breakpoint: pause before running anything
        return pause(attempt, [], persisted=True, stop=stop)
    answers = step_answers(attempt) if pending else {}
    finished, resume = resume_plan(finished, answers)
    tasks = StepTasks(attempt, graph, cfg, scope)
    # A step run before may have left its split open (its owner died): joined, however few tasks are left.
    joined = pending and cp is read and joins(ctx.kv, run.thread_id, cp.id)
    if cp is read and (joined or splits(graph, cfg, cp, finished, ctx.settings)):
        split = run_split(attempt, tasks, limits, len(finished))
        return split if isinstance(split, str) else _step_end(attempt, graph, split, True, persisted=True)
    # Numbered like the step's updates and values events: the step of the checkpoint it will commit.
    progress = step_progress(cp.step + 1, len(cp.next_tasks), len(finished), attempt.event)
    lease.limit(*_deadline(graph, limits, cp, len(cp.next_tasks) - len(finished), ctx.settings))
    # One task alone commits its writes directly: pending writes only matter while siblings still run.
    persisting = len(cp.next_tasks) > 1
    outcome = tasks.run(
        finished,
        handled,
        resume,
        answers,
        persisting=persisting,
        task_done=progress.task_done if progress is not None else None,
    )
    pending = pending or tasks.saved_failures  # the commit drops the failure records too
    return _step_end(attempt, graph, outcome, pending, persisted=persisting)


def _earlier(attempt: StepAttempt, cp: Checkpoint) -> tuple[dict[str, TaskWrites], dict[str, str]]:
    """What earlier attempts of the step after ``cp`` left: the pending writes of its tasks that finished
    (task id → writes, I2), and the failures saved before their error handlers ran (task id → text: only
    the handlers run again, :mod:`graphcore.engine.handlers`); one read."""
    written, errors = attempt.store.get_writes_and_errors(attempt.run.thread_id, cp.id)
    return dict(written), handled_of(errors)


def _step_end(
    attempt: StepAttempt, graph: CompiledGraph, outcome: StepResult, pending: bool, persisted: bool
) -> str:
    """What the step's tasks make of it: given up (a shutdown, its deadline: what nodes returned after
    their cancel is not committed, and the step runs again in a continuation), failed, a pause for a human,
    or its commit. ``pending``: the step has pending writes from an earlier attempt; ``persisted``: its
    tasks' writes were persisted as they finished."""
    given_up = attempt.lease.stop
    if given_up is not None:
        raise Cancelled(given_up.error.message)
    if outcome.failed:
        task, error = outcome.failed[0]
        if not isinstance(error, PermanentError):  # not the task's fault: e.g. Redis, persisting its writes
            raise error
        fail(attempt, error, task.node)
        return f"failed: {type(error).__name__}"
    stop = stop_of(outcome.results)  # a graph a task ran stopped at its breakpoint
    if stop is not None or any(r.interrupts for r in outcome.results):
        stored = [stored_writes(graph, r) for r in outcome.results]
        return pause(attempt, stored, persisted=persisted, stop=stop)
    meta = checkpoint_metadata(attempt.limits(graph).cfg, attempt.run.id)
    new = stored_form(graph, apply_writes(graph, attempt.head, outcome.results, meta))
    try:
        return commit_step(attempt, graph, new, outcome.results, pending or persisted)
    except SerializationError as exc:
        node = _unstorable(outcome.results)
        if node is None:  # not a node's writes (a reducer's result): the error names where in the state
            raise
        fail(attempt, exc, node)
        return "failed: SerializationError"


def _unstorable(results: list[TaskWrites]) -> str | None:
    """The first node whose writes (state updates, Sends) cannot be stored, of a step whose commit could
    not store its checkpoint; None when each node's can (the value came from a reducer)."""
    for result in results:
        try:
            encode_writes(result)
        except SerializationError:
            return result.node
    return None


def _check_step(graph: CompiledGraph, run: RunRecord, cfg: RunConfig, cp: Checkpoint) -> None:
    """Raise :class:`InvalidUpdateError` when the step's tasks name nodes the graph lacks (the thread's
    checkpoint is another workflow's), :class:`StepLimitError` when the run has taken its
    ``max_super_steps`` (C1)."""
    graph.check_tasks(run.thread_id, cp.id, cp.next_tasks)
    limit = cfg.step_limit()
    if run.step + run.budget_from >= limit:
        raise step_limit_error(limit, cp, run.budget_from)


def _timed_out(limits: RunLimits) -> RunError | None:
    """The timeout error when the run is older than its run timeout (R15: from creation, queue included)."""
    now = time.time()
    if now <= limits.deadline:
        return None
    return run_timeout_error(limits.limit_s, f"after {now - (limits.deadline - limits.limit_s):.1f} s")


def _deadline(
    graph: CompiledGraph, limits: RunLimits, cp: Checkpoint, todo: int, settings: Settings
) -> tuple[float, Stop, int]:
    """When the step is given up if still running, how the run then ends, and the step's thread number
    (R17): at the run's deadline (R15, Canceled), or earlier when every task's node has a timeout and no
    retry policy and the ``todo`` tasks still to run all start at once (no more than the threads that run
    them: ``GRAPHQ_MAX_WORKERS_PER_STEP``, the run's ``max_concurrency``; else some start as others end)
    (G10, Failed at the longest of them)."""
    threads = min(settings.max_workers_per_step, limits.cfg.max_concurrency or settings.max_workers_per_step)
    at, stop = limits.deadline, limits.stop
    specs = [graph.nodes[t.node] for t in cp.next_tasks]
    if specs and todo <= threads and all(s.timeout_s is not None and s.retry is None for s in specs):
        slowest = max(specs, key=lambda s: s.timeout_s or 0.0)
        node_at = time.time() + (slowest.timeout_s or 0.0)
        if node_at < at:
            message = str(NodeTimeoutError(slowest.name, slowest.timeout_s or 0.0))
            error = RunError(type="NodeTimeoutError", message=message, node=slowest.name, step=cp.step + 1)
            at, stop = node_at, Stop(RunStatus.FAILED, error)
    return at, stop, cp.step + 1


def _first_step(attempt: StepAttempt, cfg: RunConfig) -> int:
    """The thread's number of the step this job runs, before :func:`_head` sets the run's head: after the
    start point (C2, C3), and after the input checkpoint when there is an input to apply."""
    run = attempt.run
    if run.head is not None:
        return attempt.after_head()
    parent, _ = start_point(attempt.store, run.thread_id, cfg)
    if run.input is not None:  # its input checkpoint, the input applied, then this step (LangGraph's)
        return 1 if parent is None else parent.step + 3
    if parent is None:
        return 0
    return parent.step + (2 if is_input(parent) else 1)


def _mark_running(attempt: StepAttempt, cfg: RunConfig) -> None:
    run = attempt.run
    if run.status == RunStatus.QUEUED:  # its first step starts: how long after its creation (queue, slot)
        metrics.run_started(run.workflow, time.time() - datetime.fromisoformat(run.created_at).timestamp())
        started = {"started_at": now_iso()} if run.started_at is None else {}
        running = [("status", _first_step(attempt, cfg), {"status": "running"})]
        attempt.set_status(RunStatus.RUNNING, allowed=(RunStatus.QUEUED,), fields=started, events=running)


def _head(attempt: StepAttempt, graph: CompiledGraph, cfg: RunConfig) -> tuple[Checkpoint, bool]:
    """The checkpoint the step starts from, and whether it continues the thread where it stopped.

    At step 0: with ``resume_if_exists`` (C2) the thread's latest checkpoint is the parent; a run without
    input continues that checkpoint's next tasks (an input checkpoint's: its input applied first);
    otherwise the input checkpoint and the input applied (entry node again) are committed first, in one
    call, so that task ids are stable (I2).
    """
    run, store = attempt.run, attempt.store
    if run.head is not None:
        cp = store.get(run.thread_id, run.head)
        if cp is None:
            raise GraphqError(f"run {run.id}: head checkpoint {run.head} is missing")
        return cp, False
    parent, forks = start_point(store, run.thread_id, cfg, answering=bool(run.preset_answers))
    meta = checkpoint_metadata(cfg, run.id)
    if forks and parent is not None:
        parent = fork(parent, meta)
        _commit_start(attempt, parent, may_append=False)
    if run.preset_answers and parent is not None:
        seed_answers(attempt, parent)
    remaining = cfg.step_limit() + 1  # the run's super-steps and its input's (managed values)
    if run.input is None and parent is not None and is_input(parent):  # its input not applied yet
        run.budget_from = budget_from(False, False)  # no input checkpoint spent (LangGraph's)
        entry = _start_task(attempt, cfg, parent.step + 1)
        cp = stored_form(graph, applied_input(graph, parent, meta, remaining - run.budget_from, entry))
        writes = [stored_writes(graph, w) for w in input_writes(graph, parent)]
        _commit_start(attempt, cp, may_append=True, writes=writes)
        return cp, False
    if run.input is None and parent is not None:
        run.budget_from = budget_from(False, True)  # it goes on without input: LangGraph's count
        head = {"head": parent.id, "budget_from": str(run.budget_from)}
        attempt.hset("head", (keys.run(run.thread_id, run.id), head))
        run.head = parent.id
        return parent, True
    applies = 0 if parent is None else parent.step + 2  # the input applied's step: an error here is its
    attempt.at_step(applies)
    entry = _start_task(attempt, cfg, applies)
    first, applied = start_run(graph, parent, run.input, meta, remaining, entry)
    first, cp = stored_form(graph, first), stored_form(graph, applied)
    writes = [stored_writes(graph, w) for w in input_writes(graph, first)]
    _commit_start(attempt, cp, may_append=parent is not None, before=first, writes=writes)
    return cp, False


def _start_task(attempt: StepAttempt, cfg: RunConfig, step: int) -> StartTask:
    """What the routers from START get when this job applies the run's input (LangGraph runs them in the
    ``__start__`` task, :func:`~graphcore.engine.algo.start_routes`): the run's config, and a stream writer
    whose chunks go into the run's events as ``custom`` events of ``step`` (the input applied's), as a
    node's do."""
    return StartTask(cfg, custom_writer(attempt, step))


def _commit_start(
    attempt: StepAttempt,
    cp: Checkpoint,
    may_append: bool,
    before: Checkpoint | None = None,
    writes: Sequence[TaskWrites] = (),
) -> None:
    """Commit a checkpoint that starts the run (the input applied, or a fork): it becomes the run's head;
    no step runs. ``before``: the run's input checkpoint, ``cp``'s parent, written in the same call (the
    first step job makes no round trip more for it); without history (R5) it is not kept (``cp`` replaces
    the thread's previous head as its parent). ``writes``: the input's, kept with ``cp`` (its ``__start__``
    task's result)."""
    run, store = attempt.run, attempt.store
    fields = {"head": cp.id, "budget_from": str(run.budget_from)}
    extra = StepCommit(run_fields=fields, events=[("values", cp.step, {"checkpoint_id": cp.id})])
    extra.kept_writes = writes
    if before is not None and not store.history:
        cp.parent_id = before.parent_id
    elif before is not None:
        plan = store.plan_put(run.thread_id, before, may_append=False)
        store.stored(before, plan)  # in the cache before the write: cp's plan reuses its refs (O(change))
        extra.before = (before.id, plan)
    try:
        commit(attempt, cp, extra, may_append=may_append, writes_of=cp.id)
    except BaseException:
        if before is not None:
            store.forget(before.id)  # not written: no read may find it in the cache
        raise
