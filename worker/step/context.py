"""Per-process worker state: the Redis client, workflows, stores and run store, built once."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from graphcore.backend.connection import connect
from graphcore.backend.redis_store import RedisStore
from graphcore.backend.runs import RunStore
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints.kv import LRU
from graphcore.engine.registry import Registry
from graphcore.engine.runtime import RunControl
from graphcore.settings import Settings, get_settings
from graphq.worker.queue import RQStepQueue, StepJob
from graphq.worker.step.claim import ClaimAhead, claim_ahead
from graphq.worker.step.commit_script import CommitScript
from graphq.worker.step.lease import Lease, LeaseListener

__all__ = ["DRAIN", "WorkerContext", "get_context", "set_context"]

DRAIN = RunControl()
"""The ``runtime.control`` of every step this process runs: drained once the worker is asked to stop
(SIGTERM, :class:`graphq.worker.process.supervisor.SupervisedWorker`), so a node can see
``runtime.drain_requested``; the run's next super-step then waits for another worker."""


@dataclass
class WorkerContext:
    """What every step job of this process shares."""

    kv: Any
    settings: Settings
    registry: Registry
    runs: RunStore
    queue: RQStepQueue
    commit: CommitScript
    stores: dict[str, RedisCheckpointStore] = field(default_factory=dict)
    memories: dict[str, RedisStore] = field(default_factory=dict)
    limits: LRU = field(default_factory=LRU)
    """``run_id:attempt`` → what is fixed for that attempt of the run
    (:class:`graphq.worker.step.attempt.RunLimits`)."""
    worker_id: str = ""
    """This worker's id in the worker registry (set by :func:`graphq.worker.process.rq_worker.run_worker`)."""
    listener: LeaseListener | None = None
    """Told of each lease this process holds (the supervising process's channel in a child of ``graphq
    worker``, :mod:`graphq.worker.process.supervisor`); None without a supervisor."""
    serving: dict[str, str] = field(default_factory=dict)
    """RQ queue name → the version of its workflow this worker serves, for each queue it listens on
    (:meth:`listen`); empty in a process that takes no jobs from RQ."""

    def listen(self) -> list[str]:
        """The names of the queues this worker listens on, in the order it takes jobs from them: for each of
        its workflows, the queue of the steps of runs pinned to the version it serves (a started run's next
        step goes ahead of new runs), then the workflow's queue (runs' first steps, and every step of runs
        not pinned) unless ``GRAPHQ_TAKE_NEW_RUNS`` is off; :attr:`serving` is set with them.

        Raises:
            ConfigError: a node's settings are above ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH`` (no version).
        """
        for name in self.registry.names():
            version = self.registry.version(name)
            self.serving[self.queue.queue(name, version).name] = version
            if self.settings.take_new_runs:
                self.serving[self.queue.queue(name).name] = version
        return list(self.serving)

    def version_for(self, job: Any) -> str:
        """The version this worker serves of the workflow of ``job`` (an RQ job, by the queue it came
        from), or "" (not a queue it listens on, or no job): the claim then does not check it."""
        return self.serving.get(getattr(job, "origin", None) or "", "")

    @classmethod
    def build(cls, kv: Any, settings: Settings, registry: Registry) -> WorkerContext:
        """Wire a context around a connected client."""
        return cls(
            kv,
            settings,
            registry,
            RunStore(kv),
            RQStepQueue(kv, settings),
            CommitScript(kv),
        )

    def new_lease(self, kv: Any, thread_id: str, run_id: str) -> Lease:
        """A lease on a step of ``run_id`` (not claimed yet), with this process's TTL, heartbeat and
        :attr:`listener`; ``kv``: the client it talks to (the RQ job's connection)."""
        settings = self.settings
        return Lease(
            kv, thread_id, run_id, settings.lease_ttl_s, settings.heartbeat_interval_s, self.listener
        )

    def store(self, workflow: str) -> RedisCheckpointStore:
        """The checkpoint store for ``workflow`` (one per workflow: it knows the state schema; it keeps
        history unless ``GRAPHQ_ENABLE_CHECKPOINTING`` is off, R5)."""
        if workflow not in self.stores:
            schema = self.registry.get(workflow).schema
            history = self.settings.enable_checkpointing
            self.stores[workflow] = RedisCheckpointStore(self.kv, schema, history=history)
        return self.stores[workflow]

    def memory(self, workflow: str) -> RedisStore:
        """The long-term store of ``workflow``'s runs: a :class:`RedisStore` on the workers' Redis, shared by
        every run of every workflow, whatever ``compile(store=...)`` said (that store's ``index`` and ``ttl``
        settings apply: its embedder embeds what the workflow's nodes put and search)."""
        if workflow not in self.memories:
            given = self.registry.get(workflow).store
            index, ttl = (given.index_config, given.ttl_config) if given is not None else (None, None)
            self.memories[workflow] = RedisStore(self.kv, index=index, ttl=ttl)
        return self.memories[workflow]


_context: WorkerContext | None = None


def set_context(ctx: WorkerContext) -> None:
    """Install the process's context (the worker does this before it starts taking jobs)."""
    global _context
    _context = ctx
    StepJob.claim_ahead = functools.partial(_claim_ahead, ctx)


def _claim_ahead(ctx: WorkerContext, job: Any, pipeline: Any, worker_name: str) -> ClaimAhead | None:
    """StepJob's claim-ahead hook, bound to ``ctx`` (the claim names ``ctx.worker_id``, as step_job's)."""
    return claim_ahead(ctx.new_lease, ctx.worker_id, ctx.version_for(job), job, pipeline)


def get_context() -> WorkerContext:
    """The process's context, built from settings on first use."""
    global _context
    if _context is None:
        settings = get_settings()
        if not settings.redis_url:
            raise RuntimeError("GRAPHQ_REDIS_URL is not set in the worker process")
        _context = WorkerContext.build(
            connect(settings.redis_url), settings, Registry.load(settings.workflows.split(","))
        )
    return _context
