"""A step job that a worker of another version took, handed to its run's version.

A run pinned to a version of its workflow (:attr:`graphcore.backend.runs.RunRecord.pinned`) has its steps
queued on that version's queue (:func:`graphq.worker.queue.queue_name`), which only workers serving the
version listen on. A job can still reach a worker of another version: the run was moved to a new version
(``graphq runs migrate``) while its step was queued or running. The claim then takes nothing (no lease, no
write: ``claim_step.lua``'s code 5), and once RQ has recorded the job's end the job is queued again, on the
queue of the run's version (``hand_back.lua``; one round trip, only on this path).
"""

from __future__ import annotations

import logging
from typing import Any

from rq.registry import FinishedJobRegistry

from graphcore import keys
from graphcore.backend.connection import outlast
from graphcore.backend.lua import script
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import RunRecord
from graphq.worker.step.context import WorkerContext

__all__ = ["hand_back"]

log = logging.getLogger("graphq.step")


def hand_back(ctx: WorkerContext, run: RunRecord, job: Any) -> str:
    """Queue ``run``'s current step again on the queue of the version it is pinned to, once RQ has ended
    ``job`` (the RQ job that brought it here; None: now). Returns the job's outcome for RQ's result.

    Raises:
        redis.RedisError: (job None) Redis failed permanently, or transiently for longer than an outage.
    """
    log.info(
        "run %s step %s is pinned to version %s of %s, not served here (%s): handed to its queue",
        run.id,
        run.step,
        run.version,
        run.workflow,
        ctx.version_for(job) or "?",
    )
    origin = getattr(job, "origin", None) or ctx.queue.of(run).name

    def send() -> None:
        outlast(_send, ctx, run, origin)

    if job is None:
        send()
    else:
        job.after_end = send
    return f"handed_back: pinned to version {(run.version or '')[:12]}"


def _send(ctx: WorkerContext, run: RunRecord, origin: str) -> int:
    job = ctx.queue.prepare(run)
    finished = FinishedJobRegistry(origin, connection=ctx.kv, serializer=ctx.queue.of(run).serializer)
    script_keys = [keys.run(run.thread_id, run.id), job.job_key, job.queue_key, job.queues_key]
    script_keys += [keys.steps_index(), finished.key]
    pairs = [x for item in job.fields.items() for x in item]
    argv = [run.step, job.job_id, job.step_member, server_ms(ctx.kv), *pairs]
    return int(script(ctx.kv, "hand_back")(keys=script_keys, args=argv))
