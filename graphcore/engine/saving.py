"""Saving each task's writes of an in-process super-step as the task finishes (I2).

The step job persists each task's writes as it finishes (``run_step``'s ``on_task_done``). A graph run in
process does the same when it has a store and its step runs more than one task: at the root, and inside a
node (a subgraph node, ``inner.invoke(...)``, ToolNode's calls), whose store on the queue is the step job's
fenced sub-store (:mod:`graphq.worker.step.substore`). So a worker killed mid-step leaves the finished tasks'
writes behind, and when the step job runs that node again its graph replays them instead of running them
again.

Nothing is saved per task for a step of one task (a crash runs it again anyway: its writes are saved when
it pauses or fails, as before), nor under ``durability="exit"`` (LangGraph saves a task's writes then only
when the run ends: :mod:`graphcore.engine.durability`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from graphcore.checkpoints.layout import FAILED_PREFIX
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import stored_writes
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.config import Scope
from graphcore.engine.durability import ExitStore
from graphcore.engine.tries import TaskDone
from graphcore.types import TaskWrites

__all__ = ["TaskSaver"]

R = TypeVar("R")


class TaskSaver:
    """Saves the writes of the step after ``cp`` as each of its tasks finishes (or pauses), when the run
    has a store, is not ``durability="exit"`` and runs ``running`` > 1 tasks in the step; otherwise does
    nothing.

    Args:
        scope: where the run checkpoints (its store, thread and namespace).
        cp: the checkpoint the step starts from (the writes are saved under its id).
        running: how many tasks the step runs (those not replayed from pending writes).
        graph: the running graph (its untracked channels are not saved: :func:`stored_writes`).
    """

    def __init__(self, scope: Scope, cp: Checkpoint, running: int, graph: GraphSpec) -> None:
        store = scope.store
        self.on = store is not None and running > 1 and not isinstance(store, ExitStore)
        self.scope, self.cp, self.graph = scope, cp, graph
        self.saved: set[str] = set()
        """Ids of the tasks whose writes this saver stored (added from the tasks' threads)."""
        self.held: list[TaskWrites] = []
        """Failure records (:meth:`handled`) kept for :meth:`unsaved` under ``durability="exit"``."""
        self.handled_ids: set[str] = set()
        """Ids of the tasks whose failure an error handler took (:meth:`handled`): their record stays it."""

    def step(self, step: Callable[..., R]) -> Callable[..., R]:
        """``step`` (``run_step`` or ``arun_step`` with its other arguments bound, called as
        ``step(on_task_done=hook)``) with each finished task's writes saved before ``hook`` sees them;
        ``step`` itself when off.

        A save that fails (e.g. ``LeaseLostError`` from the queue's fence, a Redis error) fails that task
        with the save's error, as ``run_step`` records ``on_task_done``'s errors."""
        if not self.on:
            return step

        def saving(on_task_done: TaskDone | None = None) -> R:
            def done(result: TaskWrites) -> None:
                self._save(result)
                if on_task_done is not None:
                    on_task_done(result)

            return step(on_task_done=done)

        return saving

    def handled(self, record: TaskWrites) -> None:
        """Save ``record``, a task's failure its node's error handler takes, before the handler runs
        (:mod:`graphcore.engine.handlers`, the step's ``on_handled``): at once when the run has a store;
        under ``durability="exit"`` with the step's writes when it fails or pauses (:meth:`unsaved`), as
        LangGraph saves a run's writes then."""
        store, scope = self.scope.store, self.scope
        self.handled_ids.add(record.task_id.removeprefix(FAILED_PREFIX))  # the failed task's own id
        if isinstance(store, ExitStore):
            self.held.append(record)
        elif store is not None:
            store.put_writes(scope.thread_id, self.cp.id, record, ns=scope.ns)

    def unsaved(self, results: Sequence[TaskWrites]) -> list[TaskWrites]:
        """``results`` without those this saver stored already (what a paused or failed step still saves),
        nor those of tasks stopped at a breakpoint of a graph they ran (they did not end); then the failure
        records :meth:`handled` kept."""
        return [*(r for r in results if r.task_id not in self.saved and r.stopped is None), *self.held]

    def _save(self, result: TaskWrites) -> None:
        store, scope = self.scope.store, self.scope
        assert store is not None  # self.on
        store.put_writes(scope.thread_id, self.cp.id, stored_writes(self.graph, result), ns=scope.ns)
        self.saved.add(result.task_id)
