"""Moving the runs pinned to one version of a workflow to another (``graphq runs migrate``).

A run pinned to a version (:attr:`graphcore.backend.runs.RunRecord.pinned`) waits for a worker serving it;
once the old release is gone, its runs can be moved to the new one, after the upgrade check
(:mod:`graphcore.backend.upgrade_check`) found that their threads go on under the new code. The move:

1. each run that has not ended and is still pinned to the old version gets the new one, recorded on it
   (``migrated_from``, ``migrated_at``) and in its event stream (``migrate_run.lua``), in pipelined pages;
   after the upgrade check, only while its head is the checkpoint the check saw and no step of it runs;
2. the step jobs of the runs moved that wait on the old version's queue go, in order, to the new version's
   queue (one transaction, done again if a worker takes a job meanwhile); other jobs (other runs', a split
   step's helpers) stay.

A step running on an old worker meanwhile commits onto the old queue; a worker serving the old version
takes that job and hands it to the new version's queue (:mod:`graphq.worker.step.hand_back`). A run
waiting for an admission slot keeps the job admission stored for it, on the old queue: it too is handed
on by an old worker, or waits for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.exceptions import WatchError
from rq.job import Job

from graphcore import keys
from graphcore.backend.connection import retry_transient
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.backend.runs import now_iso
from graphcore.backend.upgrade_check import ActiveRun
from graphq.worker.queue import RQStepQueue, run_of_job

__all__ = ["LEFT", "PAGE", "migrate", "move_jobs"]

PAGE = 500
"""Runs moved per pipelined round trip."""


LEFT = {2: "a step of it is running", 3: "a step of it committed since the check"}
"""Why ``migrate_run.lua`` left a run where it was (its codes), when told to check."""


def migrate(
    kv: Any, runs: Sequence[ActiveRun], old: str, new: str, checked: bool = True
) -> tuple[list[str], dict[str, str]]:
    """Move ``runs`` (pinned to version ``old`` of one workflow) to version ``new``, then their queued
    step jobs. ``checked``: the upgrade check passed on their heads as ``runs`` hold them: a run with a step
    running, or whose head moved on since, is left where it is (:data:`LEFT`). Transient Redis errors are
    retried.

    Returns:
        The ids of the runs moved (a run that ended, or was moved, meanwhile is left out), and run id → why
        it was left (``checked`` only).

    Raises:
        redis.RedisError: Redis failed permanently, or transiently through every retry.
    """
    moved: list[str] = []
    left: dict[str, str] = {}
    if runs:
        retry_transient(script(kv, "migrate_run").load)
    for start in range(0, len(runs), PAGE):
        page = runs[start : start + PAGE]
        for run, code in zip(page, retry_transient(_move_page, kv, page, old, new, checked), strict=True):
            if code == 1:
                moved.append(run.id)
            elif code in LEFT:
                left[run.id] = LEFT[code]
    if moved:
        retry_transient(move_jobs, kv, runs[0].workflow, old, new, set(moved))
    return moved, left


def _move_page(kv: Any, runs: Sequence[ActiveRun], old: str, new: str, checked: bool) -> list[int]:
    pipe = kv.pipeline(transaction=False)
    now = now_iso()
    for run in runs:
        data = encode_event("status", 0, {"status": run.status.value, "version": new, "migrated_from": old})
        script_keys = [
            keys.run(run.thread_id, run.id),
            keys.run_events(run.thread_id, run.id),
            keys.lease(run.thread_id, run.id),
        ]
        head = (run.head or "") if checked else "-"
        script(kv, "migrate_run").queue(pipe, script_keys, [old, new, now, data["data"], head])
    return [int(code) for code in pipe.execute()]


def move_jobs(kv: Any, workflow: str, old: str, new: str, runs: set[str]) -> int:
    """Move the step jobs of ``runs`` (ids) waiting on ``workflow``'s queue of version ``old`` to that of
    ``new``, in order (one transaction, WATCHing the old queue: tried again when a worker takes a job
    meanwhile); the other jobs stay, in order. Returns how many moved."""
    steps = RQStepQueue(kv)
    source, target = steps.queue(workflow, old), steps.queue(workflow, new)
    while True:
        with kv.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(source.key)
                ids = [i.decode() for i in pipe.lrange(source.key, 0, -1)]
                step_jobs = [i for i in ids if run_of_job(i) in runs]
                others = [i for i in ids if run_of_job(i) not in runs]
                pipe.multi()
                if step_jobs:
                    pipe.delete(source.key)
                    if others:
                        pipe.rpush(source.key, *others)
                    pipe.rpush(target.key, *step_jobs)
                    pipe.sadd(target.redis_queues_keys, target.key)
                    for job_id in step_jobs:
                        pipe.hset(Job.key_for(job_id), "origin", target.name)
                pipe.execute()
                return len(step_jobs)
            except WatchError:
                continue
