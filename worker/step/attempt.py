"""One attempt of one step job at one run's step (R2–R4): the run, its lease, the step's head checkpoint
and the worker's context in one object, and the step's writes besides its commit, each fenced by the lease
(I1, I7): the run's status, a finished task's pending writes (I2), the step's events, and the small hashes
of a run's start (head, answers, request records). A write the lease no longer covers changes nothing; it is
logged and counted (:mod:`graphq.worker.step.fence`). Each is retried in place through a Redis outage
(:func:`outlast`).

The attempt is built from the RQ job once (:meth:`StepAttempt.start`): the claim sent ahead in RQ's start
pipeline and the commit sent in its success pipeline ride on the job (RQ's hooks need them there) and are
read here only. How an attempt ends, pauses and commits: :mod:`graphq.worker.step.ending`,
:mod:`graphq.worker.step.pausing`, :mod:`graphq.worker.step.committing`; each takes the attempt as its one
context argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graphcore import keys
from graphcore.backend.connection import outlast
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.backend.runs import RunRecord, RunStatus, now_iso, run_timeout_error, run_timeout_s
from graphcore.backend.store import RedisCheckpointStore
from graphcore.backend.threads import hand_over
from graphcore.checkpoints.layout import encode_writes
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.config import RunConfig
from graphcore.engine.executor import CompiledGraph
from graphcore.errors import LeaseLostError
from graphcore.types import TaskWrites
from graphq.worker import logs
from graphq.worker.queue import StepJob
from graphq.worker.step.claim import CANCEL_ERROR_JSON, ClaimAhead
from graphq.worker.step.commit_script import CommitAhead
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.fence import REFUSED, refused
from graphq.worker.step.handover import Stop, abandon
from graphq.worker.step.lease import Lease
from graphq.worker.step.replies import ClaimResult

__all__ = ["RunLimits", "StepAttempt", "commit_ahead_of"]


@dataclass(frozen=True)
class RunLimits:
    """What is fixed for one ``run.attempt`` of a run (each start again by the reaper, which may pin where
    it starts), built once per run attempt and process and shared by its step attempts: its config, and when
    its run timeout falls (R15: counted from the run's creation, queue included).

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


class StepAttempt:
    """One attempt of one step job at one run's step, under the lease it claimed (held only when
    :meth:`start` returned ``CLAIMED``).

    Attributes:
        ctx: the process's :class:`WorkerContext`.
        run: the run's record as the claim read it (its ``head`` and ``step`` move on with its commits).
        lease: the step's lease (:mod:`graphq.worker.step.lease`).
        job: the RQ job running the step (None: called outside RQ's worker).
        partial: whether the run has pending writes from an earlier attempt (its ``partial`` field).
        cp: the step's head checkpoint, once known (the tasks' pending writes are kept under its id).
    """

    def __init__(
        self, ctx: WorkerContext, run: RunRecord, lease: Lease, job: StepJob | None, partial: bool = False
    ) -> None:
        self.ctx, self.run, self.lease, self.job, self.partial = ctx, run, lease, job, partial
        self.cp: Checkpoint | None = None
        self._events_refused = False

    @classmethod
    def start(
        cls, ctx: WorkerContext, job: StepJob | None, run_id: str, thread_id: str, step: int
    ) -> tuple[ClaimResult, StepAttempt | None]:
        """Claim step ``step`` of ``run_id`` (the run's own count): with the claim ``job`` sent in RQ's start
        pipeline when it has a usable reply (:mod:`graphq.worker.step.claim`), else in a round trip of its
        own (with that claim's lease token, if any).

        Returns:
            ``(result, attempt)``: the claim's :class:`~graphq.worker.step.replies.ClaimResult`; the attempt
            is None for ``NO_RUN``.
        """
        ahead = getattr(job, "claim", None)
        if isinstance(ahead, ClaimAhead):
            lease, claimed = ahead.lease, ahead.result(run_id, thread_id, step)
        else:
            lease, claimed = ctx.new_lease(ctx.kv, thread_id, run_id), None
        version = ctx.version_for(job)
        if claimed is None:
            claimed = outlast(lease.claim, step, now_iso(), CANCEL_ERROR_JSON, ctx.worker_id, version)
        code, raw = claimed
        if code == ClaimResult.NO_RUN:
            return code, None
        run = RunRecord.from_hash(raw)
        if code == ClaimResult.CLAIMED and run.version is None and version:
            run.version = version  # as the claim wrote it: the run's next steps go to its version's queue
        return code, cls(ctx, run, lease, job, b"partial" in raw)

    @property
    def store(self) -> RedisCheckpointStore:
        """The checkpoint store of the run's workflow."""
        return self.ctx.store(self.run.workflow)

    @property
    def head(self) -> Checkpoint:
        """:attr:`cp`, once known.

        Raises:
            RuntimeError: the step's head checkpoint is not known yet.
        """
        if self.cp is None:
            raise RuntimeError(f"run {self.run.id} step {self.run.step}: its head checkpoint is not read yet")
        return self.cp

    def limits(self, graph: CompiledGraph) -> RunLimits:
        """The run's :class:`RunLimits`, from this process's cache (``ctx.limits``)."""
        run = self.run
        key = f"{run.id}:{run.attempt}"
        fixed = self.ctx.limits.get(key)
        if fixed is None:
            cfg = graph.config_for({**run.config, "thread_id": run.thread_id, "run_id": run.id})
            limit = run_timeout_s(run, cfg)
            stop = Stop(RunStatus.CANCELED, run_timeout_error(limit, "while its step was running"))
            fixed = RunLimits(cfg, limit, datetime.fromisoformat(run.created_at).timestamp() + limit, stop)
            self.ctx.limits.put(key, fixed)
        return fixed

    @property
    def step_number(self) -> int | None:
        """The thread's super-step this job runs, once known (:meth:`at_step`)."""
        return self.lease.step_number

    def at_step(self, step: int) -> None:
        """The thread's super-step this job runs is ``step``: on its lease (where an error is recorded,
        :func:`~graphq.worker.step.ending.fail`; the worker's heartbeat) and in its log lines
        (:func:`graphq.worker.logs.at_step`)."""
        self.lease.step_number = step
        logs.at_step(step)

    def after_head(self) -> int:
        """The thread's number of the step after the run's head checkpoint: the step this job runs (events
        are numbered like checkpoints, ``graphq state --history``); the run's own count before it has a head,
        or when the head cannot be read (this also serves the failure path: an unknown workflow, a bad
        record)."""
        run = self.run
        if run.head is None:
            return run.step
        try:
            head = self.store.get(run.thread_id, run.head)
        except Exception:  # recording how the run ended matters more than the step's number
            return run.step
        return run.step if head is None else head.step + 1

    def abandon(self, stop: Stop) -> bool:
        """Close the run of this step, given up (a shutdown, its deadline), as ``stop`` says, if the lease is
        still this attempt's (:func:`graphq.worker.step.handover.abandon`). Returns True when this call
        closed the run."""
        run, lease, ctx = self.run, self.lease, self.ctx
        return abandon(ctx.kv, ctx.settings, run.thread_id, run.id, lease.token, stop, lease.step_number)

    def release_thread(self) -> None:
        """The run ended: the next run waiting for its thread starts (I3)."""
        ctx = self.ctx
        outlast(hand_over, ctx.kv, ctx.runs, ctx.queue, self.run.thread_id, self.run.id)

    # --- fenced writes -------------------------------------------------------------------------------

    def set_status(self, status: RunStatus, **options: Any) -> bool:
        """:meth:`RunStore.set_status` fenced by the step's lease (I1, I7), retried through a Redis outage.

        Raises:
            LeaseLostError: the lease is no longer this worker's; logged and counted
            (:mod:`graphq.worker.step.fence`).
        """
        run, lease = self.run, self.lease
        try:
            return bool(
                outlast(self.ctx.runs.set_status, run, status, fence=(lease.key, lease.token), **options)
            )
        except LeaseLostError:
            raise refused("status", run.id, run.step, f"status {status.value}") from None

    def put_writes(self, tw: TaskWrites) -> None:
        """Persist a finished task's writes (I2) under the step's head checkpoint (:attr:`cp`), marking the
        run as having pending writes.

        Raises:
            LeaseLostError: as :meth:`hset`.
        """
        run = self.run
        pending = (keys.pending_writes(run.thread_id, "", self.head.id), {tw.task_id: encode_writes(tw)})
        self.hset("pending", pending, (keys.run(run.thread_id, run.id), {"partial": "1"}))

    def event(self, mode: str, step: int, data: Any) -> None:
        """Append one event of the step (custom chunk, retry, progress) to the run's stream: :meth:`events`
        of one."""
        self.events([(mode, step, data)])

    def events(self, events: Sequence[tuple[str, int, Any]]) -> None:
        """Append ``events`` (``(mode, step, data)`` each) of the step to the run's stream in one script call
        (one round trip), only while this worker holds the lease (I1; retried through a Redis outage). A
        refused call is counted (in the run hash and :data:`graphq.worker.step.fence.REFUSED`) and logged
        once an attempt; the node goes on (its writes and commit will be refused too)."""
        run, lease = self.run, self.lease
        args: list[Any] = [lease.token]
        for mode, step, data in events:
            fields = encode_event(mode, step, data)
            args += [fields["mode"], fields["step"], fields["data"]]
        script_keys = [lease.key, keys.run(run.thread_id, run.id), keys.run_events(run.thread_id, run.id)]
        if outlast(script(self.ctx.kv, "fenced_xadd"), keys=script_keys, args=args):
            return
        if self._events_refused:
            REFUSED.add("events")
            return
        self._events_refused = True
        what = f"a {events[0][0]} event" if len(events) == 1 else f"{len(events)} {events[0][0]} events"
        refused("events", run.id, run.step, f"{what} (and any later one of this step)")

    def hset(self, kind: str, *writes: tuple[str, dict[str, Any]]) -> None:
        """HSET each ``(hash key, fields)`` of ``writes`` in one script, only while this worker holds the
        step's lease (I1); retried through a Redis outage. ``kind``: one of ``pending``, ``head``,
        ``answers``, ``requests`` (:data:`graphq.worker.step.fence.KINDS`).

        Raises:
            LeaseLostError: the lease is no longer this worker's; nothing was written (logged and counted).
        """
        run, lease = self.run, self.lease
        args: list[Any] = [lease.token, kind]
        for _, fields in writes:
            args.append(len(fields))
            args += [x for pair in fields.items() for x in pair]
        thread_keys = keys.thread_keys(run.thread_id)
        script_keys = [lease.key, keys.run(run.thread_id, run.id), thread_keys, *(key for key, _ in writes)]
        if not outlast(script(self.ctx.kv, "fenced_hset"), keys=script_keys, args=args):
            raise refused(kind, run.id, run.step, _WHAT[kind])


_WHAT = {
    "pending": "a task's pending writes",
    "head": "the run's head",
    "answers": "the branch run's answers",
    "requests": "the run's request records",
}


def commit_ahead_of(job: StepJob | None) -> CommitAhead | None:
    """The commit ``job`` sends in RQ's success pipeline, if any
    (:meth:`graphq.worker.queue.StepJob.commit_on_success`)."""
    ahead = job.commit_ahead if job is not None else None
    return ahead if isinstance(ahead, CommitAhead) else None
