"""Running a step attempt's tasks (all of the step's, or one batch of a split step) under its lease.

What an unsplit step job and a batch of a split step share (:mod:`graphq.worker.step.job`,
:mod:`graphq.worker.step.batch`): the scope the tasks run in (their subgraphs checkpoint through the fenced
store, nodes share the workers' long-term store), each finished task's writes persisted as pending writes of
the step (I2), the failures an error handler takes saved before it runs, the stream writer, retry events,
``messages`` events and node timings. Every write is fenced by the attempt's lease: the step's, or the
batch's (:mod:`graphq.worker.step.split`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from graphcore import keys
from graphcore.engine.algo import stored_writes
from graphcore.engine.checkpointer import replay_of
from graphcore.engine.config import (
    RunConfig,
    Scope,
    named_checkpoints,
    run_scope,
    with_remaining_steps,
    worker_step,
)
from graphcore.engine.executor import CompiledGraph, with_resume
from graphcore.engine.step import RetryHook, StepResult, run_step
from graphcore.types import TaskWrites
from graphq.worker import metrics
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.context import DRAIN
from graphq.worker.step.messages import step_messages
from graphq.worker.step.substore import FencedStore

__all__ = ["StepTasks", "custom_writer", "step_scope"]


def step_scope(attempt: StepAttempt, cfg: RunConfig) -> Scope:
    """The scope an attempt's tasks (and the routers from START) run in: subgraphs checkpoint through the
    store fenced by the attempt's lease (G7, I1), back in time when the run replays (a fork), nodes share the
    workers' long-term store, and ``runtime.control`` is the process's drain flag."""
    ctx, run, lease = attempt.ctx, attempt.run, attempt.lease
    run_key = keys.run(run.thread_id, run.id)
    subgraphs = FencedStore(attempt.store, lease.key, lease.token, run_key, (run.id, run.step))
    named = named_checkpoints(cfg)  # a subgraph's config names its checkpoints (LangGraph's checkpoint_map)
    replay = replay_of(subgraphs, run.thread_id, cfg.checkpoint_id, run.created_at, named)
    return Scope(
        subgraphs, run.thread_id, memory=ctx.memory(run.workflow), control=DRAIN, replay=replay, run_id=run.id
    )


class StepTasks:
    """The tasks of an attempt's step, to run under its lease.

    Args:
        attempt: the step attempt (its ``cp`` known), or a batch's (:mod:`graphq.worker.step.batch`).
        graph: the run's workflow.
        cfg: the run's config.
        scope: :func:`step_scope` of the attempt.
    """

    def __init__(self, attempt: StepAttempt, graph: CompiledGraph, cfg: RunConfig, scope: Scope) -> None:
        self.attempt, self.graph, self.cfg, self.scope = attempt, graph, cfg, scope
        self.saved_failures = False
        """Whether a failure record was saved (before its error handler ran): the commit drops it too."""

    def run(
        self,
        finished: dict[str, TaskWrites],
        handled: Mapping[str, str],
        resume: Mapping[str, list[Any]],
        answers: Mapping[str, Any],
        *,
        persisting: bool,
        task_done: Callable[[], None] | None = None,
        only: range | None = None,
    ) -> StepResult:
        """Run the tasks not in ``finished`` (of positions ``only``, when given) and return their outcome
        (:func:`graphcore.engine.step.run_step`).

        Args:
            finished: task id → writes of the tasks that finished in an earlier attempt (not run again, I2).
            handled: task id → the failure an error handler took in an earlier attempt.
            resume, answers: the answers to the step's interrupts
                (:func:`graphcore.engine.interrupts.resume_plan`).
            persisting: persist each finished task's writes at once (a step of several tasks, a batch).
            task_done: called after each task's writes are persisted (progress).
            only: the positions of the tasks to run (a batch); None: all.
        """
        attempt, graph = self.attempt, self.graph
        run, lease, cp = attempt.run, attempt.lease, attempt.head

        def persist(tw: TaskWrites) -> None:
            if lease.stop is not None:  # given up: a task ending now ran under a cancel; the step runs again
                return
            attempt.put_writes(stored_writes(graph, tw))
            if task_done is not None:
                task_done()

        cfg, messages = step_messages(self.cfg, cp, attempt.events)
        on_done = _hooks(
            persist if persisting else None, messages.task_done if messages is not None else None
        )
        timed = metrics.node_timer(run.workflow, time.perf_counter(), on_done)  # on_done itself: metrics off
        with run_scope(self.scope), worker_step():
            outcome = run_step(
                graph,
                cp,
                with_remaining_steps(
                    with_resume(cfg, dict(resume), dict(answers)), run.step + run.budget_from
                ),
                finished=finished,
                on_task_done=timed,
                writer=custom_writer(attempt, cp.step + 1),
                cancel=lease.cancel,
                on_retry=_retry_events(attempt, cp.step + 1),
                handled=handled,
                on_handled=self._save_failure,
                only=only,
            )
        if messages is not None:
            messages.flush()
        return outcome

    def _save_failure(self, record: TaskWrites) -> None:
        """Save a failure its error handler takes, fenced, before the handler runs."""
        self.attempt.put_writes(record)
        self.saved_failures = True


def _hooks(*hooks: Callable[[TaskWrites], None] | None) -> Callable[[TaskWrites], None] | None:
    """An ``on_task_done`` hook calling each of ``hooks`` that is not None, in order; None for none."""
    given = [h for h in hooks if h is not None]
    if len(given) < 2:
        return given[0] if given else None

    def each(tw: TaskWrites) -> None:
        for hook in given:
            hook(tw)

    return each


def custom_writer(attempt: StepAttempt, step: int) -> Callable[[Any, Any], None]:
    """The stream writer of the tasks of the thread's super-step ``step``: each chunk a ``custom`` event of
    the run (fenced by the attempt's lease; it waits out a Redis outage), with the writing task's node."""

    def emit(task: Any, chunk: Any) -> None:
        attempt.event("custom", step, {"node": task.node, "chunk": chunk})

    return emit


def _retry_events(attempt: StepAttempt, step: int) -> RetryHook:
    """Record each retry of a node in the run's events (G9), in thread step ``step``."""

    def on_retry(task: Any, failed_try: int, error: BaseException, wait_s: float) -> None:
        event = {
            "node": task.node,
            "attempt": failed_try,
            "error": f"{type(error).__name__}: {error}",
            "wait_s": round(wait_s, 3),
        }
        attempt.event("retry", step, event)

    return on_retry
