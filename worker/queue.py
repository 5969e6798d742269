"""Step jobs on RQ: one job per (run, step) with a deterministic id (R2), JSON-serialised (no pickle, I5)."""

from __future__ import annotations

import logging
import math
import time
import zlib
from collections.abc import Sequence
from typing import Any

from rq import Queue
from rq.job import JobStatus
from rq.results import Result
from rq.serializers import JSONSerializer
from rq.utils import now as rq_now
from rq.utils import utcformat

from graphcore import keys
from graphcore.backend.admission import PreparedJob
from graphcore.backend.client import Client
from graphcore.backend.connection import connect
from graphcore.backend.runs import RunRecord
from graphcore.engine.registry import Registry
from graphcore.errors import PermanentError
from graphcore.settings import Settings, get_settings
from graphq.worker.rq_hooks import StepJobHooks

__all__ = [
    "BATCH_FUNC",
    "STEP_FUNC",
    "STEP_JOB_NAME",
    "ForeignJobError",
    "RQStepQueue",
    "StepJob",
    "connect_client",
    "queue_name",
    "run_of_job",
    "step_job_id",
    "waiting_jobs",
]

log = logging.getLogger("graphq.step")

STEP_FUNC = "graphq.worker.step.job.step_job"
"""Import path of the step job function that workers run."""

BATCH_FUNC = "graphq.worker.step.batch.batch_job"
"""Import path of the helper job of a split step (:mod:`graphq.worker.step.batch`)."""

STEP_JOB_NAME = "graphq.worker.job.step_job"
"""The function name a step job's hash carries: the step job's import path in the previous release, kept so
that, during a rolling deploy, that release's workers run the jobs this one enqueues (this one reads it as
:data:`STEP_FUNC`)."""

FORMER_STEP_FUNCS = frozenset({"worker.job.step_job", STEP_JOB_NAME})
"""Names of the step job function in job hashes that this release runs as :data:`STEP_FUNC`: earlier
releases' import paths (before ``worker`` became ``graphq.worker``, and before the step job moved into
``graphq.worker.step``), so that a job hash stored by one, still queued at an upgrade, runs."""


class ForeignJobError(PermanentError):
    """A job on a graphq queue names a function other than the step job; it is failed, never imported."""


class StepJob(StepJobHooks):
    """The RQ job class of graphq's queues and workers: it runs :data:`STEP_FUNC` (and a split step's helper,
    :data:`BATCH_FUNC`) and nothing else.

    RQ imports whatever function (and success, failure or stopped callback) a job hash names, so anyone who
    can write to Redis could otherwise make every worker import and call any installed function. A job
    naming another function fails with :class:`ForeignJobError` before anything is imported; callbacks,
    which graphq never sets, are ignored. Its hooks into RQ's internals (the step's claim and commit on RQ's
    pipelines) are :class:`graphq.worker.rq_hooks.StepJobHooks`.
    """

    def rides(self) -> bool:
        """A job naming :data:`STEP_FUNC` is a step job: its claim rides RQ's start pipeline."""
        return self.func_name in (STEP_FUNC, *FORMER_STEP_FUNCS)

    def rewrite_result(self, outcome: str) -> None:
        """Record ``outcome`` as the job's latest result (RQ's ``Result``): the step's commit, sent in RQ's
        success pipeline, did not apply, so the result RQ wrote with it says too much. Logged, not raised,
        when Redis is away (the run's own record is right either way)."""
        try:
            Result.create(
                self,
                Result.Type.SUCCESSFUL,
                self.result_ttl,
                return_value=outcome,
                worker_name=self.worker_name or "",
            )
        except Exception as exc:
            log.warning("job %s: its result was not rewritten (%s): %s", self.id, outcome, exc)

    def _deserialize_data(self) -> None:
        """RQ's read of the job's data, with a :data:`FORMER_STEP_FUNCS` name read as :data:`STEP_FUNC`."""
        super()._deserialize_data()  # type: ignore[no-untyped-call]
        if self._func_name in FORMER_STEP_FUNCS:
            self._func_name = STEP_FUNC

    @property
    def func(self) -> Any:
        if self._func_name in FORMER_STEP_FUNCS:  # a job made in this process (not read from its hash)
            self._func_name = STEP_FUNC
        if self.func_name not in (STEP_FUNC, BATCH_FUNC) or self.instance is not None:
            raise ForeignJobError(
                f"job {self.id} names {self.func_name!r}; graphq workers run only {STEP_FUNC} and "
                f"{BATCH_FUNC} (not imported)"
            )
        return super().func

    @property
    def success_callback(self) -> None:
        return None

    @property
    def failure_callback(self) -> None:
        return None

    @property
    def stopped_callback(self) -> None:
        return None


def queue_name(base: str, workflow: str, version: str | None = None) -> str:
    """The RQ queue of ``workflow``'s step jobs: ``<GRAPHQ_QUEUE>:<workflow>``, and
    ``<GRAPHQ_QUEUE>:<workflow>@<version>`` for the steps of runs pinned to ``version`` (its catalog version,
    64 hex digits; :attr:`graphcore.backend.runs.RunRecord.pinned`).

    A worker listens only on the queues of the workflows it can run, and for each on the queue of the version
    it serves: a run is never taken by a worker that lacks its code, nor a pinned run's step by a worker of
    another version; it waits, queued, for one that has it.
    """
    return f"{base}:{workflow}" if version is None else f"{base}:{workflow}@{version}"


def step_job_id(run_id: str, step: int) -> str:
    """The RQ job id of ``run_id``'s super-step ``step`` (deterministic, R2)."""
    return f"graphq-{run_id}-{step}"


def run_of_job(job_id: str) -> str | None:
    """The run id in a :func:`step_job_id`; None for another job (a split step's helper)."""
    run_id, _, step = job_id.removeprefix("graphq-").rpartition("-")
    return run_id if job_id.startswith("graphq-") and step.isdigit() and run_id else None


class RQStepQueue:
    """A :class:`~graphcore.backend.threads.StepQueue` on RQ: one queue per workflow, and one per version for
    pinned runs (see :func:`queue_name`)."""

    def __init__(self, kv: Any, settings: Settings | None = None) -> None:
        self.kv = kv
        self.settings = settings or get_settings()
        self.queues: dict[str, Queue] = {}
        self._shapes: dict[str, dict[str, Any]] = {}

    def queue(self, workflow: str, version: str | None = None) -> Queue:
        """The RQ queue of ``workflow`` (of its steps pinned to ``version``, when given)."""
        name = queue_name(self.settings.queue, workflow, version)
        if name not in self.queues:
            self.queues[name] = Queue(name, connection=self.kv, serializer=JSONSerializer, job_class=StepJob)
        return self.queues[name]

    def of(self, run: RunRecord) -> Queue:
        """The RQ queue of ``run``'s steps: its version's when it is pinned, else its workflow's."""
        return self.queue(run.workflow, run.pinned_version)

    def stage(self, pipe: Any, run: RunRecord) -> None:
        """Queue the job for ``run.step`` inside ``pipe`` (a MULTI pipeline; RQ accepts it), and note it in
        the index of unclaimed step jobs (its claim takes it out; see :func:`graphcore.keys.steps_index`)."""
        member = keys.step_member(run.thread_id, run.id, run.step)
        pipe.zadd(keys.steps_index(), {member: int(time.time() * 1000)})
        self.of(run).enqueue_call(STEP_JOB_NAME, **self._options(run, run.step), pipeline=pipe)

    def _options(self, run: RunRecord, step: int) -> dict[str, Any]:
        """The RQ options of ``run``'s step job ``step`` (deterministic id, R2). RQ keeps the job (its
        hash, result, registry entries) ``GRAPHQ_RESULT_TTL_S``, or the run's thread TTL when that is shorter
        (K3: nothing of a thread outlives it)."""
        keep = self.settings.result_ttl_s
        if run.thread_ttl_s is not None:
            keep = min(keep, math.ceil(run.thread_ttl_s))
        return {
            "args": (run.id, run.thread_id, step),
            "job_id": step_job_id(run.id, step),
            "timeout": self.settings.step_timeout_s,
            "result_ttl": keep,
            "failure_ttl": keep,
            "description": f"{run.workflow} run {run.id} step {step}",
        }

    def prepare(self, run: RunRecord, step: int | None = None) -> PreparedJob:
        """The job of ``run``'s step ``step`` (default ``run.step``; a commit prepares the job of the step
        after it without copying the record) as :meth:`stage` (RQ's ``enqueue_call``) writes it, as RQ
        reads it, for the scripts that write it: admission, when it admits the run (R8), and the commit of
        the step before (:mod:`graphq.worker.step.commit_script`): the job hash, its id pushed on the
        run's queue (:meth:`of`), the queue in RQ's set, the job in the index of unclaimed step jobs.

        The hash is RQ's own ``Job.to_dict`` of a job made by its ``create_job``, made once per queue (a
        step's commit prepares a job on its hot path, P1); each job then gets its own id, arguments
        (``data``: RQ's ``Job.data``, zlib-compressed, see :func:`_compressed`), description, result and
        failure TTLs, and timestamps: ``created_at`` and ``enqueued_at`` are both now, when it is prepared
        (a commit retried through a Redis outage writes the time of its first try)."""
        step = run.step if step is None else step
        queue = self.of(run)
        options = self._options(run, step)
        shape = self._shapes.get(queue.name)
        if shape is None:
            job = queue.create_job(STEP_JOB_NAME, **options, status=JobStatus.QUEUED)
            job.enqueued_at = rq_now()
            shape = self._shapes[queue.name] = job.to_dict()
        stamp = utcformat(rq_now())
        data = _compressed(JSONSerializer.dumps((STEP_JOB_NAME, None, options["args"], {})))  # type: ignore[no-untyped-call]
        fields = shape | {"created_at": stamp, "data": data, "description": options["description"]}
        fields |= {
            "enqueued_at": stamp,
            "result_ttl": options["result_ttl"],
            "failure_ttl": options["failure_ttl"],
        }
        job_id = options["job_id"]
        member = keys.step_member(run.thread_id, run.id, step)
        job_key = StepJob.key_for(job_id)
        return PreparedJob(job_key, queue.key, queue.redis_queues_keys, job_id, member, fields)

    def timestamp(self) -> str:
        """Now, as RQ writes a job's ``enqueued_at``."""
        return utcformat(rq_now())


def _compressed(data: bytes) -> bytes:
    """``data`` as a zlib stream, as RQ's ``Job.to_dict`` stores a job's data (RQ reads it back with
    ``zlib.decompress``), with a 512-byte window: ``zlib.compress``'s default one allocates about 256 KB a
    call, which costs some 50 us whenever the allocator hands it fresh pages (a step's commit prepares a job,
    P1)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 9, 1)
    return packer.compress(data) + packer.flush()


def waiting_jobs(kv: Any, queue_keys: Sequence[str]) -> list[int]:
    """How many jobs wait on each of ``queue_keys`` (RQ queue keys), in order: one pipelined LLEN each."""
    pipe = kv.pipeline(transaction=False)
    for key in queue_keys:
        pipe.llen(key)
    return [int(n) for n in pipe.execute()] if queue_keys else []


def connect_client(url: str | None = None, registry: Registry | None = None) -> Client:
    """A client that can enqueue, on ``url`` (default ``GRAPHQ_REDIS_URL``).

    Raises:
        ConfigError: no URL given and none configured.
        RedisUnavailableError: Redis cannot be reached after bounded retries.
    """
    settings = get_settings()
    target = url or settings.redis_url
    if not target:
        from graphcore.errors import ConfigError

        raise ConfigError("no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url")
    kv = connect(target)
    reg = registry or Registry.load(settings.workflows.split(","))
    return Client(kv, reg, RQStepQueue(kv, settings))
