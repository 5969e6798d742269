"""The queues of pinned runs' steps, and the runs that wait on them for a worker serving their version.

A run pinned to a version of its workflow (:attr:`graphcore.backend.runs.RunRecord.pinned`) has its steps
after the first queued on ``<GRAPHQ_QUEUE>:<workflow>@<version>`` (:func:`graphq.worker.queue.queue_name`),
which only workers serving that version listen on. When none of them is live (the old release's workers
were all stopped during a deploy), its next step waits there: this module says so, from RQ's set of
queues, the queues' lengths and the live workers' records (the queues each listens on). ``graphq runs
show`` and ``graphq runs list --stuck`` read it, and so does the metric
``graphq_runs_waiting_for_version``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rq import Queue

from graphcore.backend.reaper import server_ms
from graphcore.backend.run_fields import SHORT
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.workers import live_workers
from graphq.worker.queue import queue_name, run_of_job, waiting_jobs

__all__ = ["SHORT", "VersionQueue", "unserved", "version_queues", "waiting_runs"]


@dataclass(frozen=True)
class VersionQueue:
    """One queue of the steps of runs pinned to a version.

    Attributes:
        workflow: the workflow's name.
        version: the version (64 hex digits).
        key: the RQ queue's list (``rq:queue:<name>``).
        waiting: step jobs on it now.
        served: whether a live worker listens on it.
    """

    workflow: str
    version: str
    key: str
    waiting: int
    served: bool


def _listened(kv: Any) -> set[str]:
    """The names of the queues some live worker listens on."""
    return {name for worker in live_workers(kv, server_ms(kv)) for name in worker.queues}


def version_queues(kv: Any, base: str) -> list[VersionQueue]:
    """Every queue of pinned runs' steps under ``base`` (``GRAPHQ_QUEUE``) that RQ knows of, sorted by
    name: one read of RQ's set of queues, one pipeline of lengths, and the live workers' records."""
    prefix = f"{Queue.redis_queue_namespace_prefix}{base}:"
    keys = sorted(k.decode() for k in kv.smembers(Queue.redis_queues_keys))
    pinned = [k for k in keys if k.startswith(prefix) and "@" in k[len(prefix) :]]
    lengths = waiting_jobs(kv, pinned)
    listened = _listened(kv) if pinned else set()
    found = []
    for key, length in zip(pinned, lengths, strict=True):
        workflow, _, version = key[len(prefix) :].rpartition("@")
        name = key[len(Queue.redis_queue_namespace_prefix) :]
        found.append(VersionQueue(workflow, version, key, length, name in listened))
    return found


def unserved(kv: Any, base: str, run: RunRecord) -> bool:
    """Whether no live worker can take ``run``'s next step: it has not ended nor waits for input, and no
    live worker listens on the queue of that step — its version's when the run is pinned to one (none
    serves the version), else its workflow's (none is live, or every one runs with
    ``GRAPHQ_TAKE_NEW_RUNS=false``)."""
    if run.terminal or run.status == RunStatus.AWAITING_INPUT:
        return False
    return queue_name(base, run.workflow, run.pinned_version) not in _listened(kv)


def waiting_runs(kv: Any, base: str) -> Iterator[tuple[str, str]]:
    """``(run id, version)`` of each run with a step job on a version queue no live worker listens on, queue
    by queue, oldest job first, each run once (one LRANGE per such queue)."""
    seen: set[str] = set()
    for queue in version_queues(kv, base):
        if queue.served or not queue.waiting:
            continue
        for job_id in kv.lrange(queue.key, 0, -1):
            run_id = run_of_job(job_id.decode())
            if run_id is not None and run_id not in seen:  # a run once, whatever copies of its job wait
                seen.add(run_id)
                yield run_id, queue.version
