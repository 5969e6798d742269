"""The fenced commit of a super-step (I1, R3): one MULTI holding ``commit_step.lua`` and the next job.

The script checks the fence — this worker's lease token, the run's step, a non-terminal status — and only
then writes the checkpoint, advances the run and appends the step's events. The RQ enqueue of the next
step rides in the same MULTI. When the fence refuses, that job is still queued, and harmless: its claim
finds the run at another step and skips it. One round trip per commit, no WATCH.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoScriptError

from graphcore import keys
from graphcore.backend.events import encode_event
from graphcore.backend.lua import source
from graphcore.backend.store import KeyIndex, plan_argv
from graphcore.backend.ttl import ttl_arg
from graphcore.checkpoints.layout import Plan
from graphcore.errors import AppendConflictError, LeaseLostError

__all__ = ["CommitScript", "Completion", "StepCommit"]

_FIXED_KEYS = 11


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


@dataclass
class StepCommit:
    """What one commit writes beyond the checkpoint itself.

    Attributes:
        run_fields: run hash fields to set.
        run_deletes: run hash fields to delete.
        events: ``(mode, step, data)`` to append to the run's stream.
        drop_lease: give the lease back in the commit (the next step's job may take it at once).
        drop_writes: delete the step's pending writes and answers (they are in the checkpoint now).
        completes: set when the commit ends the run (see :class:`Completion`).
    """

    run_fields: dict[str, str] = field(default_factory=dict)
    run_deletes: list[str] = field(default_factory=list)
    events: list[tuple[str, int, Any]] = field(default_factory=list)
    drop_lease: bool = False
    drop_writes: bool = False
    completes: Completion | None = None


class CommitScript:
    """``commit_step.lua``, loaded once per process and run with EVALSHA inside a MULTI."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv
        self.sha = kv.script_load(source("commit_step"))

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
    ) -> tuple[list[str], list[str | bytes]]:
        """KEYS and ARGV for the script (see its header for the layout); ``thread_ttl_s``: the run's
        thread TTL (K3), None = none."""
        index = KeyIndex(_FIXED_KEYS + 1)
        flags = ("L" if extra.drop_lease else "") + ("W" if extra.drop_writes else "")
        flags += "C" if extra.completes is not None else ""
        member = keys.lease_member(thread, run_id)
        argv: list[str | bytes] = [lease.token, str(step), cp_id, plan.record, flags or "-", member]
        argv += [ttl_arg(thread_ttl_s), thread]
        argv += plan_argv(plan, index)
        argv += [str(len(extra.run_fields))] + [x for pair in extra.run_fields.items() for x in pair]
        argv += [str(len(extra.run_deletes)), *extra.run_deletes]
        argv += [str(len(extra.events))]
        for mode, event_step, data in extra.events:
            fields = encode_event(mode, event_step, data)
            argv += [fields["mode"], fields["step"], fields["data"]]
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
        ]
        assert len(fixed) == _FIXED_KEYS
        return fixed + index.keys, argv

    def run(self, stage_rest: Any, script_keys: list[str], argv: list[str | bytes], what: str) -> str:
        """EVALSHA in a MULTI together with whatever ``stage_rest(pipe)`` queues (the next job).

        Returns:
            ``"ok"``; ``"canceled"`` when a completing commit ended its run Canceled (a cancel request was
            recorded); ``"again"`` when this commit had been applied already (a retry after a lost reply).

        Raises:
            LeaseLostError: the fence refused the commit (lease lost, run finished or moved on).
            AppendConflictError: a log append found its log grown by another branch; nothing was written
                (plan again with ``may_append=False``).
        """
        for _ in range(2):
            pipe = self.kv.pipeline(transaction=True)
            pipe.multi()  # explicit: RQ's enqueue expects a pipeline already in MULTI mode
            pipe.evalsha(self.sha, len(script_keys), *script_keys, *argv)
            stage_rest(pipe)
            reply = pipe.execute(raise_on_error=False)[0]
            if isinstance(reply, NoScriptError):  # Redis restarted and lost its script cache
                self.sha = self.kv.script_load(source("commit_step"))
                continue
            if isinstance(reply, Exception):
                raise reply
            verdict = reply.decode() if isinstance(reply, bytes) else str(reply)
            if verdict == "log":
                raise AppendConflictError(f"commit of {what}: a log grew on another branch")
            if verdict in _REASONS:
                raise LeaseLostError(f"commit of {what} rejected: {_REASONS[verdict]}")
            return verdict
        raise LeaseLostError(f"commit of {what} failed: the commit script could not be loaded")


_REASONS = {"lease": "lease no longer held", "finished": "run already finished", "step": "run moved on"}
