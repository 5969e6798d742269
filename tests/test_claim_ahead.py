"""The step's claim rides in the pipeline RQ runs as a job starts (worker.claim, P1): one round trip less
per step, and a claim that could not ride (script cache flushed) is made again by the step job."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from graphcore.backend.client import Client
from graphcore.backend.lua import source
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from worker.claim import claim_ahead
from worker.lease import Lease
from worker.process import run_worker

REGISTRY = Registry.load(["tests.workflows.basic"])


@pytest.fixture
def own_claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The steps the step job claimed by itself (a round trip of its own), in order."""
    calls: list[int] = []
    claim = Lease.claim

    def counted(self: Lease, step: int, *args: Any) -> Any:
        calls.append(step)
        return claim(self, step, *args)

    monkeypatch.setattr(Lease, "claim", counted)
    return calls


def _work(redis_client: redis.Redis, redis_url: str) -> None:
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)


def test_claims_ride_in_rqs_start_pipeline(
    client: Client, redis_client: redis.Redis, redis_url: str, own_claims: list[int]
) -> None:
    redis_client.script_load(source("claim_step"))  # loaded: the first claim rides too
    run_id = client.enqueue("counter", {"limit": 4})
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result["n"]) == (RunStatus.COMPLETED, 4, 4)
    assert own_claims == []
    assert run.worker is not None and run.worker.split(".")[1] == str(os.getpid())  # named by the claim


def test_a_claim_that_found_no_script_is_made_again_by_the_step_job(
    client: Client, redis_client: redis.Redis, redis_url: str, own_claims: list[int]
) -> None:
    redis_client.script_flush()  # as after a Redis restart: the riding EVALSHA gets NOSCRIPT
    run_id = client.enqueue("counter", {"limit": 2})
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.COMPLETED, 2)
    assert own_claims == [0]  # step 0 claimed again (which loaded the script); the later steps rode


def test_a_claim_sent_ahead_leaves_no_reference_cycle(redis_client: redis.Redis, redis_url: str) -> None:
    """The pipeline's execute is wrapped for its one call only: once it ran, the pipeline and the wrapper
    no longer hold each other (every step job left such a cycle, with its lease, for the garbage collector:
    29 objects a step, a third of the step job's collections)."""
    redis_client.script_load(source("claim_step"))
    job = SimpleNamespace(args=("no-run", "no-thread", 0), connection=redis_client)
    pipe = redis_client.pipeline(transaction=True)
    ahead = claim_ahead(Settings(redis_url=redis_url), "w1", job, pipe)
    assert ahead is not None and "execute" in vars(pipe)
    pipe.execute()
    assert "execute" not in vars(pipe)
    assert ahead.result("no-run", "no-thread", 0) == (0, {})  # the claim's reply: no such run
