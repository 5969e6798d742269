"""The fenced commit of a super-step (I1, R3): one call of ``commit_step.lua``, which also enqueues the next
step's RQ job.

The script checks the fence — this worker's lease token, the run's step, a non-terminal status — and only
then writes the checkpoint, advances the run, appends the step's events and enqueues the job of the next
step (the job hash exactly as RQ's enqueue writes it, built by RQ:
:meth:`graphq.worker.queue.RQStepQueue.prepare`).
When the fence refuses, nothing is written, no job either. One call per commit, no WATCH: in a round trip
of its own (a commit that also prunes the thread's previous head, without history, R5, sends the prune
beside it in one MULTI, and a step job's carries RQ's end-of-execution heartbeat of the job), or, for a
step that has a next one, in the MULTI pipeline in which RQ records the job's success
(:class:`CommitAhead`, P1; EVALSHA there, and a NOSCRIPT reply is sent again once the script is loaded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from graphcore import keys
from graphcore.backend.admission import PreparedJob
from graphcore.backend.connection import outlast
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.backend.store import KeyIndex, plan_argv
from graphcore.backend.ttl import ttl_arg
from graphcore.checkpoints.layout import Plan
from graphcore.errors import AppendConflictError, LeaseLostError
from graphcore.types import TaskWrites
from graphq.worker.rq_hooks import keep_reply
from graphq.worker.step.replies import CommitVerdict, Refusal

__all__ = ["CommitAhead", "CommitScript", "Completion", "StepCommit", "commit_verdict"]

_FIXED_KEYS = 17


@dataclass
class Completion:
    """A commit that completes its run: it ends Completed, or Canceled when a cancel request was recorded
    on the run before the commit (a cancel acknowledged during the last step wins, X1; the step's checkpoint
    is kept either way).

    Attributes:
        step: the thread step of the run's status event.
        ended_at: the run's ``ended_at``.
        cancel_error: the error record (JSON) of a run that ends Canceled.
    """

    step: int
    ended_at: str
    cancel_error: str


PRUNED_FIELD = "pruned"
"""Run hash field: the checkpoint the run's last commit without history pruned (its previous head). A
commit of that checkpoint replayed after its reply was lost (the next step committed and pruned it
meanwhile) is recognised by it as applied (``commit_step.lua``: 'again'), not refused as a zombie's.
"""


@dataclass
class StepCommit:
    """What one commit writes beyond the checkpoint itself.

    Attributes:
        run_fields: run hash fields to set.
        run_deletes: run hash fields to delete.
        events: ``(mode, step, data)`` to append to the run's stream.
        drop_lease: give the lease back in the commit (the next step's job may take it at once).
        drop_writes: delete the step's pending writes and answers (they are in the checkpoint now).
        before: ``(id, plan)`` of a checkpoint written just before this one, in the same call: a run's
            input checkpoint (LangGraph's, ``next == ("__start__",)``), whose child this commit writes.
        kept_writes: a run's input as its ``__start__`` task's writes (the first step job's commit of the
            input applied); with history the commit keeps them as the input checkpoint's pending writes (that
            snapshot's ``tasks[0].result``). A committed step's task writes are not kept (P2).
        completes: set when the commit ends the run (see :class:`Completion`).
        next_job: the next step's RQ job, enqueued by the commit (None: the run has no next step, or the
            commit starts the run and its first step's job is queued already).
    """

    run_fields: dict[str, str] = field(default_factory=dict)
    run_deletes: list[str] = field(default_factory=list)
    events: list[tuple[str, int, Any]] = field(default_factory=list)
    drop_lease: bool = False
    drop_writes: bool = False
    completes: Completion | None = None
    next_job: PreparedJob | None = None
    before: tuple[str, Plan] | None = None
    kept_writes: Sequence[TaskWrites] = ()


class CommitScript:
    """``commit_step.lua`` (a :class:`graphcore.backend.lua.Script`), loaded once per process and run with
    EVALSHA."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv
        self.script = script(kv, "commit_step")
        self.script.load()

    def args(
        self,
        thread: str,
        run_id: str,
        writes_cp: str,
        lease: Any,
        step: int,
        cp_id: str,
        plan: Plan,
        extra: StepCommit,
        thread_ttl_s: float | None = None,
    ) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV for the script (see its header for the layout); ``thread_ttl_s``: the run's
        thread TTL (K3), None = none."""
        assert extra.next_job is None or extra.completes is None, "a commit completes its run or goes on"
        index = KeyIndex(_FIXED_KEYS + 1)
        flags = ("L" if extra.drop_lease else "") + ("W" if extra.drop_writes else "")
        flags += "C" if extra.completes is not None else ""
        flags += "J" if extra.next_job is not None else ""
        flags += "P" if extra.before is not None else ""
        member = keys.lease_member(thread, run_id)
        argv: list[Any] = [lease.token, str(step), cp_id, plan.record, flags or "-", member]
        argv += [ttl_arg(thread_ttl_s), thread]
        if extra.before is not None:
            before_id, before_plan = extra.before
            argv += [before_id, before_plan.record, *plan_argv(before_plan, index)]
        argv += plan_argv(plan, index)
        run_fields = extra.run_fields
        if plan.prune is not None and plan.prune.previous is not None:  # the head this commit prunes (R5)
            run_fields = {**run_fields, PRUNED_FIELD: plan.prune.previous}
        argv += [str(len(run_fields))] + [x for pair in run_fields.items() for x in pair]
        argv += [str(len(extra.run_deletes)), *extra.run_deletes]
        argv += [str(len(extra.events))]
        for mode, event_step, data in extra.events:
            fields = encode_event(mode, event_step, data)
            argv += [fields["mode"], fields["step"], fields["data"]]
        job = extra.next_job
        if job is not None:
            argv += [job.job_id, job.step_member, str(len(job.fields))]
            argv += [x for pair in job.fields.items() for x in pair]
        if extra.completes is not None:
            done = extra.completes
            argv += [
                str(done.step),
                encode_event("status", done.step, {"status": "completed"})["data"],
                encode_event("status", done.step, {"status": "canceled"})["data"],
                done.cancel_error,
                done.ended_at,
            ]
        fixed = [
            keys.run(thread, run_id),
            lease.key,
            keys.checkpoints(thread),
            keys.history(thread),
            keys.run_events(thread, run_id),
            keys.pending_writes(thread, "", writes_cp),
            keys.answers(thread, "", writes_cp),
            keys.lease_index(),
            keys.thread_keys(thread),
            keys.retention(),
            keys.thread_runs(thread),
            *_job_keys(job),
            keys.webhooks(),
            keys.webhooks_due(),
        ]
        assert len(fixed) == _FIXED_KEYS
        return fixed + index.keys, argv

    def run(
        self,
        script_keys: list[str],
        argv: list[Any],
        what: str,
        stage_rest: Callable[[Any], None] | None = None,
        ride: Callable[[Any], None] | None = None,
    ) -> CommitVerdict:
        """EVALSHA the script; with ``stage_rest``, inside a MULTI together with what ``stage_rest(pipe)``
        queues (the prune of a commit without history). ``ride(pipe)`` queues more commands, outside the
        script, that go in the same round trip whatever its verdict (RQ's end-of-execution heartbeat,
        :meth:`graphq.worker.rq_hooks.StepJobHooks.heartbeat_ahead`).

        Returns:
            :class:`CommitVerdict`: ``OK``; ``CANCELED`` when a completing commit ended its run Canceled (a
            cancel request was recorded); ``AGAIN`` when this commit had been applied already (a retry
            after a lost reply).

        Raises:
            LeaseLostError: the fence refused the commit (lease lost, run finished or moved on).
            AppendConflictError: a log append found its log grown by another branch; nothing was written
                (plan again with ``may_append=False``).
        """
        reply = self.script.again_if_unloaded(lambda: self.call(script_keys, argv, stage_rest, ride))
        if isinstance(reply, NoScriptError):
            raise LeaseLostError(f"commit of {what} failed: the commit script could not be loaded")
        return commit_verdict(reply, what)

    def call(
        self,
        script_keys: list[str],
        argv: list[Any],
        stage_rest: Callable[[Any], None] | None = None,
        ride: Callable[[Any], None] | None = None,
    ) -> Any:
        """One call of the script (see :meth:`run`): its reply, or the NoScriptError it replied with (load it
        and call again); other errors of Redis are raised."""
        if stage_rest is None and ride is None:
            try:
                return self.script.once(script_keys, argv)
            except NoScriptError as exc:
                return exc
        pipe = self.kv.pipeline(transaction=stage_rest is not None)
        self.script.queue(pipe, script_keys, argv)
        for queue in (stage_rest, ride):
            if queue is not None:
                queue(pipe)
        return pipe.execute(raise_on_error=False)[0]


def commit_verdict(reply: Any, what: str) -> CommitVerdict:
    """The verdict of the commit script's ``reply`` (see :meth:`CommitScript.run`, which raises the same).

    Raises:
        LeaseLostError: the fence refused the commit (:class:`Refusal` ``lease``, ``finished``, ``step``).
        AppendConflictError: a log append found its log grown by another branch (``log``).
        Exception: the error Redis answered with (a ``NoScriptError`` among them).
        ValueError: a reply the script never gives.
    """
    if isinstance(reply, Exception):
        raise reply
    said = reply.decode() if isinstance(reply, bytes) else str(reply)
    if said not in _REFUSALS:  # the common case, without an exception
        return CommitVerdict(said)
    refusal = Refusal(said)
    if refusal is Refusal.LOG:
        raise AppendConflictError(f"commit of {what}: {refusal.reason}")
    raise LeaseLostError(f"commit of {what} rejected: {refusal.reason}")


@dataclass
class CommitAhead:
    """A commit sent in the pipeline in which RQ records a step job's success (``Job._handle_success``,
    :class:`graphq.worker.rq_hooks.StepJobHooks`), so that it costs no round trip of its own (P1): the
    commit script's call, and what to do with its reply. RQ's pipeline is a MULTI: the commit and RQ's
    record of the job's end are written together. A pipeline that fails before its reply (an outage, which
    RQ's bookkeeping outlasts, or a ``WatchError``) sends the commit again with the next one; a commit
    applied before a lost reply answers ``again``."""

    commit: CommitScript
    script_keys: list[str]
    argv: list[Any]
    on_reply: Callable[[Any], str] | None
    """Called once with the reply (or the error Redis answered with); returns the step job's outcome, in
    words (as the job function would have), and must not raise."""
    then: Callable[[str], None] | None = None
    """Called with that outcome next (the step job's metrics)."""
    replied: bool = False

    def stage(self, pipe: Any) -> None:
        """Queue the commit on ``pipe`` and keep its reply (:func:`graphq.worker.rq_hooks.keep_reply`)."""
        keep_reply(pipe, self.commit.script.queue(pipe, self.script_keys, self.argv), self._reply)

    def send(self) -> None:
        """Send the commit in a round trip of its own, through a Redis outage: RQ ended the job without
        sending it (its bookkeeping of the job failed before the success pipeline's reply)."""
        try:
            reply = outlast(self.commit.call, self.script_keys, self.argv)
        except ResponseError as exc:  # the script's error: as in a pipeline's replies
            reply = exc
        self._reply(reply)

    def _reply(self, reply: Any) -> None:
        on_reply, then = self.on_reply, self.then
        self.replied, self.on_reply, self.then = True, None, None  # they hold the job: no reference cycle
        if on_reply is not None:
            outcome = on_reply(reply)
            if then is not None:
                then(outcome)


def _job_keys(job: PreparedJob | None) -> list[str]:
    """KEYS[12..15] of the script: the next step's job hash, its queue, RQ's set of queues and the index of
    unclaimed step jobs; without a job, that index four times (the script writes them only with a job)."""
    if job is None:
        return [keys.steps_index()] * 4
    return [job.job_key, job.queue_key, job.queues_key, keys.steps_index()]


_REFUSALS = frozenset(Refusal)
"""The script's refusals, as the words it replies with."""
