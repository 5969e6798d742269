"""A job on a graphq queue that names another function is failed and its module never imported: anyone who
can write to Redis must not be able to make workers run code (found by a fresh-user trial)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import redis
from rq import Callback, Queue
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from worker.process import run_worker
from worker.queue import STEP_FUNC, StepJob

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
    assert f"names '{module}.boom'; graphq workers run only {STEP_FUNC} (not imported)" in (
        job.latest_result().exc_string or ""  # type: ignore[union-attr]
    )
