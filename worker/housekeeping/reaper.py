"""The reaper loop (R18, R14, R10): finds steps whose worker died and hands their runs on.

It is a housekeeping loop (:mod:`graphq.worker.housekeeping.loops`), run in every worker supervisor (or bare
worker process), in ``graphq reaper`` and in ``graphq scheduler``; only the instance holding the reaper lock
(:func:`graphcore.keys.reaper_lock`) acts. Every ``GRAPHQ_REAPER_INTERVAL_S`` the active one:

1. reads the leases whose deadline passed from the lease index and acts on each with one Lua script
   (:func:`graphcore.backend.reaper.reap`): the run is continued by a new run (resume on), started again
   (resume off), failed at the chain's limit (``GRAPHQ_MAX_RESUME_ATTEMPTS``) or canceled (a cancel was
   requested);
2. does the recovery work the script staged: drops the abandoned step job from RQ's started and failed
   registries, enqueues the step job of the continued or restarted run (deterministic id, in one MULTI
   with the removal of the entry, so a crash in between is redone by the next pass and a duplicate job is
   a no-op), and hands a failed run's thread to its next waiting run;
3. removes workers whose heartbeat expired from the worker registry and from RQ's worker registry;
4. admission (R8, R15): ends Canceled, with the timeout error, the runs whose run timeout passed while they
   waited for a slot (they never started), gives back the slot of a thread's run that waits for input
   (its worker died between the pause and giving it back), and admits waiting runs that fit (a limit was
   raised).

A step's lease lapses ``GRAPHQ_LEASE_TTL_S`` after its worker's last renewal, so a dead worker's run is
acted on within ``GRAPHQ_LEASE_TTL_S + GRAPHQ_REAPER_INTERVAL_S`` (25 s with the defaults). The lock's
time-to-live is at most the lease TTL: when the active reaper dies with its worker, another takes over
before that worker's lease has lapsed.
"""

from __future__ import annotations

import logging
from typing import Any

from rq import Worker
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job
from rq.registry import FailedJobRegistry, StartedJobRegistry
from rq.serializers import JSONSerializer
from rq.worker_registration import REDIS_WORKER_KEYS, WORKERS_BY_QUEUE_KEY

from graphcore import keys
from graphcore.backend.admission import execute, expire_waiting, fill, release, stage_admit
from graphcore.backend.reaper import (
    Lapsed,
    ReapOutcome,
    lapsed_leases,
    reap,
    recovery_entries,
    server_ms,
    stale_busy_threads,
    unclaimed_steps,
)
from graphcore.backend.runs import RunStatus, RunStore
from graphcore.backend.threads import hand_over
from graphcore.backend.workers import dead_workers, drop_worker
from graphcore.errors import RunNotFoundError
from graphcore.settings import Settings
from graphq.worker import logs, metrics
from graphq.worker.queue import RQStepQueue, step_job_id

__all__ = ["Reaper", "lock_ttl_s"]

log = logging.getLogger("graphq.reaper")


REAPED_LOG = "lease lapsed;"
"""In the warning logged for each lapsed lease acted on (``bench.chaos --signal term`` counts them)."""
REQUEUED_LOG = "was taken and never claimed; enqueued again"
"""In the warning logged for each lost step job enqueued again (``bench.chaos`` counts them)."""

_BATCH = 100
"""Lapsed leases read from the index at a time."""
_BATCHES = 10
"""Batches a pass acts on at most (a held lease whose index entry is stale stays in the index)."""


def lock_ttl_s(settings: Settings) -> float:
    """The reaper lock's time-to-live: twice the interval and a second, at most the lease TTL."""
    return min(settings.lease_ttl_s, 2 * settings.reaper_interval_s + 1)


class Reaper:
    """One reaper instance (see the module docstring)."""

    def __init__(self, kv: Any, settings: Settings, queue: RQStepQueue | None = None) -> None:
        self.kv = kv
        self.settings = settings
        self.queue = queue or RQStepQueue(kv, settings)
        self.runs = RunStore(kv)
        self._missing: set[str] = set()
        """Unclaimed step jobs found in no queue by the last pass (see :meth:`requeue_lost_jobs`)."""

    def sweep(self) -> list[tuple[str, ReapOutcome]]:
        """One pass (the caller holds the lock, or tests two racing reapers): returns ``(run id, outcome)``
        for each lapsed lease acted on."""
        self.recover()
        now = server_ms(self.kv)
        done = []
        seen: set[str] = set()
        for _ in range(_BATCHES):  # many dead workers at once: a few batches a pass, the rest next pass
            batch = [lap for lap in lapsed_leases(self.kv, now, _BATCH) if lap.run_id not in seen]
            for lapsed in batch:
                seen.add(lapsed.run_id)
                done.append((lapsed.run_id, self.reap(lapsed)))
            if len(batch) < _BATCH:
                break
        if done:
            self.recover()
        self.requeue_lost_jobs(now)
        self.hand_over_ended(now)
        self.forget_dead_workers(now)
        self.admission(now)
        return done

    def reap(self, lapsed: Lapsed) -> ReapOutcome:
        """Act on one lapsed lease (:func:`graphcore.backend.reaper.reap`: continued, restarted, canceled
        or failed at the chain's limit, as the settings say); logged and counted when it acted. The work it
        stages (the continuation's step job, hand-over) is done by :meth:`recover`."""
        outcome = reap(
            self.kv,
            lapsed,
            resume=self.settings.resume_interrupted_runs,
            max_attempts=self.settings.max_resume_attempts,
        )
        if outcome.verdict not in ("gone", "fresh", "held"):
            about = logs.about(run=lapsed.run_id, thread=lapsed.thread_id)
            log.warning("run %s: %s %s", lapsed.run_id, REAPED_LOG, outcome.describe(), extra=about)
            metrics.runs_reaped(outcome.verdict)
        return outcome

    def admission(self, now_ms: int) -> None:
        """Waiting runs past their deadline end Canceled (R15) and their threads go on (I3); waiting runs
        that fit are admitted (R8)."""
        for thread, run_id in expire_waiting(self.kv, self.queue, now_ms):
            log.warning("run %s: its run timeout passed while it waited for a slot; canceled", run_id)
            hand_over(self.kv, self.runs, self.queue, thread, run_id)
        fill(self.kv, self.queue)

    def hand_over_ended(self, now_ms: int) -> None:
        """Threads busy for longer than ``GRAPHQ_LEASE_TTL_S`` whose active run has ended (its process died
        between the run's end and the hand-over, I3): handed to their next waiting run. Threads whose run
        goes on are looked at again one lease TTL later."""
        ttl_ms = int(self.settings.lease_ttl_s * 1000)
        for thread in stale_busy_threads(self.kv, now_ms - ttl_ms):
            active = self.kv.get(keys.thread_active(thread))
            if active is None:
                self.kv.zrem(keys.busy_threads(), thread)
                continue
            try:
                run = self.runs.get(active.decode(), thread)
            except RunNotFoundError:
                run = None
            if run is None or run.terminal:
                log.warning(
                    "thread %s: its run %s ended without handing it over; handed over now",
                    thread,
                    active.decode(),
                )
                hand_over(self.kv, self.runs, self.queue, thread, active.decode())
            else:
                if run.status == RunStatus.AWAITING_INPUT:  # its slot went back, unless it died pausing
                    release(self.kv, self.queue, thread, run.id)
                self.kv.zadd(keys.busy_threads(), {thread: now_ms}, xx=True)

    def requeue_lost_jobs(self, now_ms: int) -> None:
        """Step jobs enqueued more than ``GRAPHQ_LEASE_TTL_S`` ago and never claimed, that no worker will
        run: taken off their queue by a worker that died before claiming the step (RQ's BLPOP when it
        listens on several queues, which leaves the job in no list; its BLMOVE when it listens on one, which
        leaves it in the queue's intermediate list, where RQ's own clean-up fails it only minutes later).
        They are enqueued again (out of the intermediate list in the same transaction; a duplicate of a job
        still in flight is a no-op, R2). Only a job found so on two passes in a row: a live worker claims a
        job a few milliseconds after it took it, and a pass that looked in between enqueued it again for
        nothing (4 of 11 rolling deploys of ``bench.chaos --signal term`` did). Jobs still waiting in their
        queue are looked at again one lease TTL later."""
        ttl_ms = int(self.settings.lease_ttl_s * 1000)
        missing, self._missing = self._missing, set()
        for member, thread, run_id, step in unclaimed_steps(self.kv, now_ms - ttl_ms):
            try:
                run = self.runs.get(run_id, thread)
            except RunNotFoundError:
                self.kv.zrem(keys.steps_index(), member)
                continue
            if run.step != step or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
                self.kv.zrem(keys.steps_index(), member)  # the step ran, or the run ended or waits
                continue
            job_id = step_job_id(run_id, step)
            # its version's queue when it is pinned; its workflow's for a first step (or a job a worker of
            # another version is handing on)
            mine, workflows = self.queue.of(run), self.queue.queue(run.workflow)
            rq_queues = [mine] if mine.name == workflows.name else [mine, workflows]
            waiting = any(self.kv.lpos(q.key, job_id) is not None for q in rq_queues)
            if not waiting and member not in missing:
                self._missing.add(member)  # taken a moment ago, or lost: the next pass tells
                continue
            pipe = self.kv.pipeline(transaction=True)
            pipe.multi()
            if waiting:
                pipe.zadd(keys.steps_index(), {member: now_ms}, xx=True)
            else:
                for rq_queue in rq_queues:
                    pipe.lrem(rq_queue.intermediate_queue_key, 0, job_id)
                self.queue.stage(pipe, run)
                log.warning("run %s: step job %s %s", run_id, job_id, REQUEUED_LOG)
            pipe.execute()

    def recover(self) -> None:
        """Do the recovery work staged by reap scripts (see :func:`recovery_entries`)."""
        for member, kind, thread, rest in recovery_entries(self.kv):
            try:
                if kind == "abandoned":
                    self._drop_abandoned(member, rest[0], int(rest[1]))
                elif kind == "enqueue":
                    self._enqueue(member, thread, rest[0])
                else:
                    hand_over(self.kv, self.runs, self.queue, thread, rest[0])
                    self.kv.zrem(keys.recovery(), member)
            except RunNotFoundError:
                self.kv.zrem(keys.recovery(), member)
            except Exception as exc:  # left for the next pass
                log.warning("reaper: recovery step %s failed: %s", member, exc)

    def _drop_abandoned(self, member: str, run_id: str, step: int) -> None:
        """Take the dead worker's step job out of RQ's registries (so they do not pile up) and delete it."""
        pipe = self.kv.pipeline(transaction=True)
        pipe.multi()
        try:
            job = Job.fetch(step_job_id(run_id, step), connection=self.kv, serializer=JSONSerializer)
            started = StartedJobRegistry(job.origin, connection=self.kv, serializer=JSONSerializer)
            started.remove_executions(job, pipeline=pipe)
            failed = FailedJobRegistry(job.origin, connection=self.kv, serializer=JSONSerializer)
            failed.remove(job, pipeline=pipe)
            job.delete(pipeline=pipe)
        except (NoSuchJobError, InvalidJobOperation):  # gone already (another pass, its TTL)
            pipe = self.kv.pipeline(transaction=True)
            pipe.multi()
        pipe.zrem(keys.recovery(), member)
        pipe.execute()

    def _enqueue(self, member: str, thread: str, run_id: str) -> None:
        """Enqueue the run's current step job, in one MULTI with the removal of the entry."""
        record = self.runs.get(run_id, thread)
        pipe = self.kv.pipeline(transaction=True)
        pipe.multi()
        if record.status == RunStatus.QUEUED:  # a continuation took over its predecessor's slot (R8)
            stage_admit(pipe, self.kv, self.queue, record)
        pipe.zrem(keys.recovery(), member)
        execute(pipe, self.kv)

    def forget_dead_workers(self, now_ms: int) -> None:
        """Workers whose heartbeat expired leave graphq's registry and RQ's."""
        for worker_id in dead_workers(self.kv, now_ms):
            forget_worker(self.kv, worker_id)
            log.warning("worker %s stopped sending heartbeats; removed from the registries", worker_id)


def forget_worker(kv: Any, worker_id: str) -> None:
    """Remove worker ``worker_id`` (a dead process: its heartbeat expired, or its supervisor saw it end)
    from graphq's registry and RQ's (its worker hash and its entries in RQ's worker sets), in one MULTI
    after one read (the queues RQ recorded for it). Idempotent: a worker already gone changes nothing.

    Raises:
        redis.exceptions.RedisError: Redis failed; nothing is retried here (the reaper's pass and the
            supervisor log it, and the heartbeat's expiry removes the worker later).
    """
    rq_key = Worker.redis_worker_namespace_prefix + worker_id
    queues = kv.hget(rq_key, "queues")
    pipe = kv.pipeline(transaction=True)
    pipe.srem(REDIS_WORKER_KEYS, rq_key)
    for name in (queues or b"").decode().split(","):
        if name:
            pipe.srem(WORKERS_BY_QUEUE_KEY % name, rq_key)
    pipe.delete(rq_key)
    drop_worker(kv, worker_id, pipe)
    pipe.execute()
