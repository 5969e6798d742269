"""A job on a graphq queue that names another function is failed and its module never imported: anyone who
can write to Redis must not be able to make workers run code (found by a fresh-user trial)."""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path

import pytest
import redis
from rq import Callback, Queue
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import BATCH_FUNC, STEP_FUNC, STEP_JOB_NAME, StepJob

REGISTRY = Registry.load(["tests.workflows.basic"])


@pytest.fixture
def marker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A module whose import (or call) leaves a file behind."""
    marker = tmp_path / "imported"
    (tmp_path / "gq_evil_jobmod.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        f"def boom(*a, **k):\n    open({str(marker)!r}, 'a').write('called')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return "gq_evil_jobmod", marker


def test_a_foreign_job_is_failed_without_importing_its_module(
    redis_client: redis.Redis, redis_url: str, marker_module: tuple[str, Path]
) -> None:
    module, marker = marker_module
    workflow = REGISTRY.names()[0]
    plain = Queue(f"graphq:{workflow}", connection=redis_client, serializer=JSONSerializer)
    evil = plain.enqueue_call(f"{module}.boom", args=("from redis",))
    callback = plain.enqueue_call("os.getcwd", on_failure=Callback(f"{module}.boom"))  # a callback too
    assert run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    assert not marker.exists()
    assert module not in sys.modules
    failed = FailedJobRegistry(queue=plain)
    assert sorted(failed.get_job_ids()) == sorted([evil.id, callback.id])
    job = StepJob.fetch(evil.id, connection=redis_client, serializer=JSONSerializer)
    assert f"names '{module}.boom'; graphq workers run only {STEP_FUNC} and {BATCH_FUNC} (not imported)" in (
        job.latest_result().exc_string or ""  # type: ignore[union-attr]
    )


@pytest.mark.parametrize("former", ["worker.job.step_job", "graphq.worker.job.step_job"])
def test_a_step_job_stored_by_an_earlier_release_still_runs(
    client: Client, redis_client: redis.Redis, redis_url: str, former: str
) -> None:
    """The step job was ``worker.job.step_job`` before the packages moved under ``graphq``, then
    ``graphq.worker.job.step_job`` before it moved into ``graphq.worker.step``; a job hash stored then, still
    queued at the upgrade, runs its step (it is not failed as a foreign job)."""
    run_id = client.enqueue("counter", {"limit": 2})
    [job_key] = [k for k in redis_client.keys("rq:job:*") if b":" not in k[len("rq:job:") :]]
    data = json.loads(zlib.decompress(redis_client.hget(job_key, "data")))  # type: ignore[arg-type]
    assert data[0] == STEP_JOB_NAME == "graphq.worker.job.step_job"  # the previous release's workers run it
    data[0] = former
    redis_client.hset(job_key, "data", zlib.compress(json.dumps(data).encode()))
    assert run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result) == (
        RunStatus.COMPLETED,
        2,
        {"limit": 2, "n": 2, "log": ["bump1", "bump2"]},
    )
