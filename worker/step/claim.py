"""The step's claim sent ahead, in the pipeline RQ runs as a step job starts (saves a round trip, P1).

RQ's worker writes a job's start (its status, worker and heartbeat) in one MULTI pipeline just before it
calls the job (``Job.prepare_for_execution``). :class:`graphq.worker.rq_hooks.StepJobHooks` adds the
step's claim (``claim_step.lua``, see :meth:`graphq.worker.step.lease.Lease.claim`) to that pipeline, so the
claim costs no round trip of its own (nor, most often, does the commit:
:class:`graphq.worker.step.commit_script.CommitAhead`).

The claim's reply is kept on the job (:class:`ClaimAhead`). The step job uses it when it is a reply;
anything else (the script not loaded after a Redis restart, a pipeline that never ran, a job started
without RQ's worker) makes the step job claim again itself, with the same lease token, which the script
recognises as its own claim (``ClaimResult.CLAIMED``) if the first one did take the lease.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphcore.backend.runs import CANCEL_ERROR, now_iso
from graphq.worker.rq_hooks import keep_reply
from graphq.worker.step.lease import Lease
from graphq.worker.step.replies import ClaimResult

__all__ = ["CANCEL_ERROR_JSON", "ClaimAhead", "claim_ahead"]

CANCEL_ERROR_JSON = CANCEL_ERROR.model_dump_json()
"""The error record (JSON) a claim writes when a cancel request ends the run before its step."""


@dataclass
class ClaimAhead:
    """A claim sent in RQ's start pipeline: the lease it took and, once the pipeline ran, its reply."""

    args: tuple[str, str, int]
    """The job's ``(run_id, thread_id, step)``, to match the call the claim was made for."""
    lease: Lease
    reply: Any = field(default=None)
    """The script's reply (``[code, flat run hash]``), an exception object, or None (not run)."""

    def keep(self, reply: Any) -> None:
        """Keep the script's reply (:func:`graphq.worker.rq_hooks.keep_reply`)."""
        self.reply = reply

    def result(self, run_id: str, thread_id: str, step: int) -> tuple[ClaimResult, dict[bytes, bytes]] | None:
        """``(code, run hash)`` as :meth:`Lease.claim` returns them, or None to claim again."""
        if self.args != (run_id, thread_id, step) or not isinstance(self.reply, list):
            return None
        code, flat = self.reply
        return ClaimResult(code), dict(zip(flat[::2], flat[1::2], strict=True))


def claim_ahead(
    new_lease: Callable[[Any, str, str], Lease], worker_id: str, version: str, job: Any, pipeline: Any
) -> ClaimAhead | None:
    """Queue the claim of ``job``'s step on RQ's start ``pipeline`` (a MULTI pipeline of redis-py), with a
    lease from ``new_lease(kv, thread_id, run_id)`` (the context's
    :meth:`~graphq.worker.step.context.WorkerContext.new_lease`); ``version``: of the workflow, served here
    (:meth:`graphq.worker.step.lease.Lease.claim`).

    The claim's reply is kept on the returned object (:func:`graphq.worker.rq_hooks.keep_reply`). Returns
    None for a job whose arguments are not a step job's ``(run_id, thread_id, step)``.
    """
    args = tuple(job.args or ())
    if len(args) != 3 or not isinstance(args[2], int):
        return None
    run_id, thread_id, step = str(args[0]), str(args[1]), args[2]
    previous = getattr(job, "claim", None)  # RQ's start retried through an outage: keep the token
    lease = (
        previous.lease
        if isinstance(previous, ClaimAhead) and previous.args == (run_id, thread_id, step)
        else new_lease(job.connection, thread_id, run_id)
    )
    ahead = ClaimAhead((run_id, thread_id, step), lease)
    script_keys, argv = lease.claim_call(step, now_iso(), CANCEL_ERROR_JSON, worker_id, version)
    keep_reply(pipeline, lease.claim_script.queue(pipeline, script_keys, argv), ahead.keep)
    return ahead
