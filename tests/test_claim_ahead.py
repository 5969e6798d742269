"""The step's claim rides in the pipeline RQ runs as a job starts (graphq.worker.step.claim, P1): one round
trip less per step, and a claim that could not ride (script cache flushed) is made again by the step job. RQ's
end-of-execution heartbeat of the job goes with the step's commit: in RQ's success pipeline, or in the
commit's own round trip (StepJob.heartbeat_ahead)."""

from __future__ import annotations

import os
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from rq.job import Job
from rq.utils import utcparse

from graphcore.backend.client import Client
from graphcore.backend.lua import source
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import STEP_FUNC, RQStepQueue, StepJob, step_job_id
from graphq.worker.step.claim import claim_ahead
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.lease import Lease
from graphq.worker.step.replies import ClaimResult

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
    # pinned (the default): the version check and the version's recording ride with the claims too
    assert (run.pinned, run.version) == (True, REGISTRY.version("counter"))
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
    settings = Settings(redis_url=redis_url)
    ahead = claim_ahead(WorkerContext.build(redis_client, settings, REGISTRY).new_lease, "w1", "", job, pipe)
    assert ahead is not None and "execute" in vars(pipe)
    pipe.execute()
    assert "execute" not in vars(pipe)
    code, run = ahead.result("no-run", "no-thread", 0) or (None, None)
    assert (code, run, type(code)) == (ClaimResult.NO_RUN, {}, ClaimResult)  # the claim's reply: no such run


@pytest.fixture
def end_heartbeats(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The job ids of RQ's end-of-execution heartbeats: ``success`` queued on the pipeline in which RQ records
    the job's success, after the step's commit (its EVALSHA, then RQ's HSET of the job's
    ``last_heartbeat``); ``ahead`` queued on the pipeline of a step's own commit, after its EVALSHA;
    ``own`` sent by RQ's worker in a round trip of their own (``Job.heartbeat`` without a pipeline). A later
    RQ that heartbeats a job twice without a pipeline after its execution would show the second one in
    ``own``."""
    seen: dict[str, list[str]] = {"success": [], "ahead": [], "own": []}
    ahead, heartbeat, success = StepJob.heartbeat_ahead, Job.heartbeat, StepJob._handle_success

    def commit_then_beat(job: Job, pipeline: Any) -> bool:
        sent = [tuple(args[:3]) for args, _ in pipeline.command_stack]
        commits = [i for i, c in enumerate(sent) if c[0] == "EVALSHA"]
        beats = [i for i, c in enumerate(sent) if c == ("HSET", job.key, "last_heartbeat")]
        return bool(commits and beats) and commits[0] < beats[0]

    def counted_ahead(self: StepJob, pipeline: Any) -> None:
        ahead(self, pipeline)
        if commit_then_beat(self, pipeline):
            seen["ahead"].append(self.id)

    def counted_success(self: StepJob, result_ttl: int, pipeline: Any, *args: Any, **kwargs: Any) -> None:
        success(self, result_ttl, pipeline, *args, **kwargs)
        if commit_then_beat(self, pipeline):
            seen["success"].append(self.id)

    def counted(self: Job, timestamp: Any, ttl: int, pipeline: Any = None, xx: bool = False) -> None:
        if pipeline is None:
            seen["own"].append(self.id)
        heartbeat(self, timestamp, ttl, pipeline=pipeline, xx=xx)

    monkeypatch.setattr(StepJob, "heartbeat_ahead", counted_ahead)
    monkeypatch.setattr(StepJob, "_handle_success", counted_success)
    monkeypatch.setattr(Job, "heartbeat", counted)
    return seen


def test_rqs_end_heartbeat_rides_with_the_steps_commit(
    client: Client, redis_client: redis.Redis, redis_url: str, end_heartbeats: dict[str, list[str]]
) -> None:
    """Steps 0 and 1 commit in RQ's success pipeline, their heartbeats after the commit; step 2 completes
    the run in a commit of its own (it hands the thread over after), which carries the heartbeat."""
    run_id = client.enqueue("counter", {"limit": 3})
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.COMPLETED, 3)
    jobs = [step_job_id(run_id, step) for step in range(3)]
    assert end_heartbeats == {"success": jobs[:2], "ahead": jobs[2:], "own": []}
    for job_id in jobs:  # as RQ leaves any finished job: last heartbeat RQ's own, just after it ended
        job = Job.fetch(job_id, connection=redis_client, serializer=client.queue.queue("counter").serializer)
        assert job.get_status() == "finished"
        assert job.started_at is not None and job.ended_at is not None and job.last_heartbeat is not None
        beat = utcparse(redis_client.hget(job.key, "last_heartbeat").decode())
        assert timedelta(0) <= beat - job.ended_at < timedelta(seconds=1)


def test_a_step_job_that_commits_nothing_leaves_rq_its_end_heartbeat(
    client: Client, redis_client: redis.Redis, redis_url: str, end_heartbeats: dict[str, list[str]]
) -> None:
    run_id = client.enqueue("counter", {"limit": 1})
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    queue = RQStepQueue(redis_client, Settings(redis_url=redis_url)).queue("counter")
    queue.enqueue_call(STEP_FUNC, args=(run_id, run.thread_id, 0), job_id="stale-duplicate")
    for seen in end_heartbeats.values():
        seen.clear()
    _work(redis_client, redis_url)  # the duplicate is skipped: the run is completed
    assert end_heartbeats == {"success": [], "ahead": [], "own": ["stale-duplicate"]}
    assert client.get_run(run_id).step == 1
