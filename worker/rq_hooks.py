"""graphq's hooks into RQ's internals: a step job's own commands sent in the round trips RQ makes for every
job anyway (P1).

RQ's worker writes a job's start in one MULTI pipeline and its success in another. A step job queues its
claim on the first (:mod:`graphq.worker.step.claim`) and, when it can, its commit on the second
(:class:`graphq.worker.step.commit_script.CommitAhead`), so that neither costs a round trip of its own; RQ's
end-of-execution heartbeat of the job goes with the commit. :func:`keep_reply` hands such a command's reply
to its owner without changing what RQ sees. A commit that RQ's success pipeline never carried (RQ's
bookkeeping failed before it, or recorded a failure) is sent after the job, on its own
(:class:`SendsUnsentCommits`). The hooks are injected: ``StepJob.claim_ahead`` (the job class of
:mod:`graphq.worker.queue`) is set by :func:`graphq.worker.step.context.set_context`, and the commit is handed
over with :meth:`StepJobHooks.commit_on_success`.

These are RQ's internals, not its public API: :data:`RQ_INTERNALS` lists each one relied on, with its
parameters, and ``tests/test_rq_hooks.py`` checks them (and that claim and commit ride RQ's pipelines) on
the installed RQ and on the lowest RQ that ``pyproject.toml`` allows (checked: RQ 3.0.0).

- ``rq.job.Job.prepare_for_execution(self, worker_name, pipeline)``: called by
  ``Worker.prepare_job_execution(job, remove_from_intermediate_queue=False)`` with the MULTI pipeline of
  the job's start, before that pipeline's ``execute()`` (:meth:`StepJobHooks.prepare_for_execution`: the
  claim).
- ``rq.job.Job._handle_success(self, result_ttl, pipeline, worker_name, execution_id,
  execution_started_at, execution_ended_at)``: called by ``Worker.handle_job_success(job, queue,
  started_job_registry, execution)`` with its MULTI pipeline, unless the job's result TTL is 0
  (:meth:`StepJobHooks._handle_success`: the commit, and the held heartbeat).
- ``rq.job.Job.heartbeat(self, timestamp, ttl, pipeline, xx)``: called once without a pipeline after the
  job's function returned, by ``Worker.handle_execution_ended(job, queue, heartbeat_ttl)``
  (:meth:`StepJobHooks.heartbeat`: held, or skipped when it was sent ahead).
- ``rq.job.Job.success_callback_timeout`` (the TTL RQ gives that heartbeat) and ``rq.job.Job.result_ttl``.
- ``rq.worker.BaseWorker.execute_job(self, job, queue)``: runs the job and RQ's bookkeeping of its end
  (:class:`SendsUnsentCommits`).
- redis-py's ``Pipeline.command_stack`` (the queued commands) and ``Pipeline.execute(raise_on_error)``
  (:func:`keep_reply`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from rq import SimpleWorker
from rq.job import Job
from rq.utils import now as rq_now

__all__ = ["RQ_INTERNALS", "PendingCommit", "SendsUnsentCommits", "StepJobHooks", "keep_reply"]

log = logging.getLogger("graphq.step")

RQ_INTERNALS: dict[str, tuple[str, ...]] = {
    "rq.job.Job.prepare_for_execution": ("self", "worker_name", "pipeline"),
    "rq.job.Job._handle_success": (
        "self",
        "result_ttl",
        "pipeline",
        "worker_name",
        "execution_id",
        "execution_started_at",
        "execution_ended_at",
    ),
    "rq.job.Job.heartbeat": ("self", "timestamp", "ttl", "pipeline", "xx"),
    "rq.job.Job.success_callback_timeout": (),
    "rq.worker.BaseWorker.prepare_job_execution": ("self", "job", "remove_from_intermediate_queue"),
    "rq.worker.BaseWorker.handle_job_success": ("self", "job", "queue", "started_job_registry", "execution"),
    "rq.worker.BaseWorker.handle_execution_ended": ("self", "job", "queue", "heartbeat_ttl"),
    "rq.worker.BaseWorker.execute_job": ("self", "job", "queue"),
}
"""Each RQ internal the hooks rely on (dotted path) and its parameters, in order (``()``: a property)."""


class PendingCommit(Protocol):
    """A step's commit waiting for RQ's success pipeline
    (:class:`graphq.worker.step.commit_script.CommitAhead`)."""

    replied: bool

    def stage(self, pipe: Any) -> None: ...

    def send(self) -> None: ...


def keep_reply(pipeline: Any, index: int, keep: Callable[[Any], None]) -> None:
    """Make the next ``execute()`` of ``pipeline`` (redis-py) hand the reply of its command ``index`` — a
    value, or the error Redis answered with — to ``keep``, and raise, as redis-py would, only the errors of
    the other commands (RQ's own).

    An ``execute()`` that raises before any reply (a connection error, a ``WatchError``) calls nothing:
    whoever queues the command again on the next pipeline keeps its reply the same way. ``keep`` must not
    raise.
    """
    execute = pipeline.execute

    def execute_keeping(raise_on_error: bool = True) -> list[Any]:
        del pipeline.execute  # this one call: the pipeline and this closure would hold each other
        replies: list[Any] = execute(raise_on_error=False)
        keep(replies[index])
        if raise_on_error:
            for i, reply in enumerate(replies):
                if i != index and isinstance(reply, Exception):
                    raise reply
        return replies

    pipeline.execute = execute_keeping


class StepJobHooks(Job):
    """RQ's job class with the step's claim on RQ's start pipeline and its commit (with RQ's end-of-execution
    heartbeat) on RQ's success pipeline. The job class of graphq's queues
    (:class:`graphq.worker.queue.StepJob`) is one; it says which jobs are step jobs (:meth:`rides`)."""

    claim_ahead: ClassVar[Callable[[Any, Any, str], Any] | None] = None
    """Set by :func:`graphq.worker.step.context.set_context`: ``(job, pipeline, worker_name) -> claim or
    None`` queues the step's claim on the pipeline in which RQ records the job's start
    (:mod:`graphq.worker.step.claim`)."""

    _heartbeat_sent = False
    """Whether RQ's end-of-execution heartbeat of this job was sent ahead (:meth:`heartbeat_ahead`)."""

    commit_ahead: PendingCommit | None = None
    """The step's commit, sent in the pipeline in which RQ records the job's success
    (:meth:`commit_on_success`)."""

    _hold_heartbeat = False
    _held_heartbeat: tuple[Any, int, bool] | None = None
    """RQ's end-of-execution heartbeat ``(timestamp, ttl, xx)``, held for the success pipeline."""

    def rides(self) -> bool:
        """Whether this job is a step job, whose claim rides RQ's start pipeline (here: none is)."""
        return False

    def prepare_for_execution(self, worker_name: str, pipeline: Any) -> None:
        super().prepare_for_execution(worker_name, pipeline)
        claim_ahead = type(self).claim_ahead
        if claim_ahead is not None and self.rides():
            self.claim = claim_ahead(self, pipeline, worker_name)

    def heartbeat_ahead(self, pipeline: Any) -> None:
        """Queue on ``pipeline`` (the one that carries the step's commit,
        :mod:`graphq.worker.step.commit_script`) the heartbeat that RQ's worker writes once the job's
        execution ends (``handle_execution_ended``), so that write costs no round trip of its own (P1), as
        the claim rides RQ's start pipeline. RQ's own call of :meth:`heartbeat` after the job then writes
        nothing; its ``save`` of the finished (or failed) job writes ``last_heartbeat`` again, with RQ's
        timestamp, as for any job."""
        super().heartbeat(rq_now(), self.success_callback_timeout, pipeline=pipeline)
        self._heartbeat_sent = True

    def records_success(self) -> bool:
        """Whether RQ records this job's success in a pipeline of :meth:`_handle_success` (it does not for a
        result TTL of 0, nor tell for none: graphq sets one on every step job)."""
        return self.result_ttl is not None and self.result_ttl != 0

    def commit_on_success(self, ahead: PendingCommit) -> None:
        """Send ``ahead`` in the pipeline in which RQ records this job's success, with RQ's own
        end-of-execution heartbeat of the job, held until then (call it only when :meth:`records_success`).
        Every write RQ makes is kept, in RQ's order: the heartbeat, then the job's end."""
        self.commit_ahead = ahead
        self._hold_heartbeat = True

    after_end: Callable[[], Any] | None = None
    """Called once RQ has recorded the job's end (:class:`SendsUnsentCommits`): a step job handed to the
    queue of its run's version (:mod:`graphq.worker.step.hand_back`)."""

    def send_unsent_commit(self) -> None:
        """After RQ ended the job: a commit still waiting for RQ's success pipeline (RQ's bookkeeping of the
        job failed before it, or recorded a failure instead) goes now, in a round trip of its own, so that
        the step's work is not lost (:class:`SendsUnsentCommits`)."""
        ahead = self.commit_ahead
        if ahead is not None and not ahead.replied:
            log.warning("job %s: RQ ended it without sending the step's commit; sending it now", self.id)
            ahead.send()

    def _handle_success(self, result_ttl: int, pipeline: Any, *args: Any, **kwargs: Any) -> None:
        ahead = self.commit_ahead
        if ahead is not None and not ahead.replied:  # again when RQ's pipeline failed before its reply
            ahead.stage(pipeline)
        if self._held_heartbeat is not None:
            timestamp, ttl, xx = self._held_heartbeat
            super().heartbeat(timestamp, ttl, pipeline=pipeline, xx=xx)
        super()._handle_success(result_ttl, pipeline, *args, **kwargs)

    def heartbeat(self, timestamp: Any, ttl: int, pipeline: Any = None, xx: bool = False) -> None:
        """RQ's ``Job.heartbeat``, except the first call without a pipeline after :meth:`heartbeat_ahead`
        or :meth:`commit_on_success`: in RQ 3.x that is ``handle_execution_ended``'s, the only such
        call once a job's function has returned (``tests/test_claim_ahead.py`` would see a second one).
        After :meth:`heartbeat_ahead` it was sent already (the flag is set when the heartbeat is queued: a
        commit that never reached Redis, an outage then a stop, skips it too, and RQ's ``save`` of the
        ended job writes ``last_heartbeat`` either way); after :meth:`commit_on_success` it is held, as
        RQ called it, for the success pipeline."""
        if pipeline is None and self._heartbeat_sent:  # the end of execution's: sent with the commit
            self._heartbeat_sent = False
            self.last_heartbeat = timestamp
            return
        if pipeline is None and self._hold_heartbeat:  # the end of execution's: to go with the commit
            self._hold_heartbeat = False
            self._held_heartbeat = (timestamp, ttl, xx)
            self.last_heartbeat = timestamp
            return
        super().heartbeat(timestamp, ttl, pipeline=pipeline, xx=xx)


class SendsUnsentCommits(SimpleWorker):
    """The worker mixin (placed before the worker class in the MRO): after RQ's ``execute_job``, a step's
    commit that RQ's success pipeline never carried is sent (:meth:`StepJobHooks.send_unsent_commit`), and
    the job's :attr:`StepJobHooks.after_end` is called."""

    def execute_job(self, job: Any, queue: Any) -> None:
        """RQ's, then the step's commit if RQ's success pipeline never carried it."""
        try:
            super().execute_job(job, queue)
        finally:
            if isinstance(job, StepJobHooks):
                job.send_unsent_commit()
                if job.after_end is not None:
                    job.after_end()
