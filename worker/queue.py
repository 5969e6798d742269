"""Step jobs on RQ: one job per (run, step) with a deterministic id (R2), JSON-serialised (no pickle, I5)."""

from __future__ import annotations

from typing import Any

from rq import Queue
from rq.serializers import JSONSerializer

from graphcore.client import Client
from graphcore.connection import connect
from graphcore.registry import Registry
from graphcore.runs import RunRecord
from graphcore.settings import Settings, get_settings

__all__ = ["STEP_FUNC", "RQStepQueue", "connect_client", "step_job_id"]

STEP_FUNC = "worker.job.step_job"
"""Import path of the step job function that workers run."""


def step_job_id(run_id: str, step: int) -> str:
    """The RQ job id of ``run_id``'s super-step ``step`` (deterministic, R2)."""
    return f"graphq-{run_id}-{step}"


class RQStepQueue:
    """A :class:`~graphcore.client.StepQueue` on one RQ queue."""

    def __init__(self, kv: Any, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        self.queue = Queue(self.settings.queue, connection=kv, serializer=JSONSerializer)

    def stage(self, pipe: Any, run: RunRecord) -> None:
        """Queue the job for ``run.step`` inside ``pipe`` (a MULTI pipeline; RQ accepts it)."""
        self.queue.enqueue_call(
            STEP_FUNC,
            args=(run.id, run.thread_id, run.step),
            job_id=step_job_id(run.id, run.step),
            timeout=self.settings.step_timeout_s,
            result_ttl=self.settings.result_ttl_s,
            failure_ttl=self.settings.result_ttl_s,
            description=f"{run.workflow} run {run.id} step {run.step}",
            pipeline=pipe,
        )


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
