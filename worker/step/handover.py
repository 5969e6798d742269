"""Closing a run whose step is abandoned before it ended (R17).

A step is abandoned when its worker is stopped and the step does not end within ``GRAPHQ_DRAIN_TIMEOUT_S``
(or at once on a cold stop), or when a node blocks past the run's deadline. Whoever still holds the step's
lease — the worker process itself when its node stopped on its cancel token, or its supervising parent
after it killed the process — closes the run with :func:`abandon`: fenced by the lease token (I1), so of the
two only one closes it, and never over a status that another writer set (I7). The run's checkpoints are
kept; a run stopped by a shutdown is continued at once (:func:`queue_continuation`), one that timed out
is not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.connection import retry_transient
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.backend.reaper import Lapsed, reap
from graphcore.backend.runs import RunError, RunStatus, RunStore, now_iso
from graphcore.backend.threads import hand_over
from graphcore.settings import Settings
from graphq.worker import logs, metrics
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.queue import RQStepQueue

__all__ = ["Stop", "abandon", "lapse", "queue_continuation"]

log = logging.getLogger("graphq.handover")


@dataclass(frozen=True)
class Stop:
    """Why a running step is given up, and how its run is closed.

    Attributes:
        status: the run's terminal status (Canceled or Failed).
        error: the error recorded on the run.
        resume: whether the run is continued in a new run (a shutdown: the work was not at fault).
    """

    status: RunStatus
    error: RunError
    resume: bool = False

    def killed(self, pid: int, grace_s: float) -> Stop:
        """The same stop, its message saying that the worker process ``pid`` was killed after ``grace_s``."""
        message = (
            f"{self.error.message}; the step did not end within GRAPHQ_KILL_GRACE_S={grace_s:g} s, so its "
            f"worker process (pid {pid}) was killed"
        )
        return Stop(self.status, self.error.model_copy(update={"message": message}), self.resume)


def abandon(
    kv: Any, settings: Settings, thread_id: str, run_id: str, token: str, stop: Stop, step: int | None = None
) -> bool:
    """Close the run of an abandoned step, if ``token`` still holds its lease; give the lease back.

    A stop that resumes (a shutdown) with ``GRAPHQ_RESUME_INTERRUPTED_RUNS`` on closes the run and queues
    its continuation at once (:func:`queue_continuation`). Otherwise the run is closed as ``stop`` says and
    its thread goes on to the next run waiting for it (I3).

    Args:
        step: the thread step of the step that was running (for its status event); None → the run's step.

    Returns:
        True when this call closed the run.
    """
    if stop.resume and settings.resume_interrupted_runs:
        return queue_continuation(kv, settings, thread_id, run_id, token, stop)
    event = {"status": stop.status.value, "error": f"{stop.error.type}: {stop.error.message}"}
    data = encode_event("status", 0, event)["data"]
    closed = retry_transient(
        script(kv, "abandon_step"),
        keys=[
            keys.lease(thread_id, run_id),
            keys.run(thread_id, run_id),
            keys.run_events(thread_id, run_id),
            keys.lease_index(),
            keys.webhooks(),
            keys.webhooks_due(),
        ],
        args=[
            token,
            stop.status.value,
            now_iso(),
            stop.error.model_dump_json(),
            "" if step is None else str(step),
            data,
            keys.lease_member(thread_id, run_id),
        ],
    )
    if not closed:
        return False
    about = logs.about(run=run_id, thread=thread_id)
    log.warning("run %s %s: %s", run_id, stop.status.value, stop.error.message, extra=about)
    retry_transient(hand_over, kv, RunStore(kv), RQStepQueue(kv, settings), thread_id, run_id)
    return True


def lapse(kv: Any, thread_id: str, run_id: str, token: str) -> int:
    """Let the lease of ``token`` lapse now (``lapse_lease.lua``): the key goes and its deadline in the lease
    index becomes now, so that the reaper's next pass acts on the run (R18) instead of after the lease's TTL.

    Returns:
        The deadline set (ms since the epoch, Redis's clock), or 0 when the lease was not ``token``'s.
    """
    args = [token, keys.lease_member(thread_id, run_id)]
    return int(script(kv, "lapse_lease")(keys=[keys.lease(thread_id, run_id), keys.lease_index()], args=args))


def queue_continuation(
    kv: Any, settings: Settings, thread_id: str, run_id: str, token: str, stop: Stop
) -> bool:
    """Close the run of a step given up at a shutdown and queue its continuation now (R14, R17), if
    ``token`` still holds the step's lease: the lease lapses here (``lapse_lease.lua``) and the reaper's
    script acts on it at once with the stop's status and error (Canceled, ``WorkerShutdown``) instead of
    ``WorkerLost``: same continuation (``continued_from_run_id``, next attempt of the chain, at most
    ``GRAPHQ_MAX_RESUME_ATTEMPTS``; at the limit the run stays closed, its error naming the setting). Its
    step job is enqueued right after, with the reaper's other staged work.

    Returns:
        True when this call closed the run.
    """
    deadline_ms = retry_transient(lapse, kv, thread_id, run_id, token)
    if not deadline_ms:
        return False
    outcome = retry_transient(
        reap,
        kv,
        Lapsed(thread_id, run_id, deadline_ms),
        resume=True,
        max_attempts=settings.max_resume_attempts,
        closing=stop.error,
        status=stop.status.value,
    )
    about = logs.about(run=run_id, thread=thread_id)
    says = (run_id, stop.status.value, stop.error.message, outcome.describe())
    log.warning("run %s %s: %s (%s)", *says, extra=about)
    Reaper(kv, settings).recover()  # the continuation's step job, the abandoned job's RQ records, hand-over
    if outcome.verdict == "continued":
        metrics.continued("shutdown")
    return outcome.verdict in ("continued", "limit", "canceled")
