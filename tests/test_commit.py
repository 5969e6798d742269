"""The commit of a super-step enqueues the next step's job in the same script (worker.commit, I1, R3, P1):
the job is RQ's own, field for field, and a commit the fence refuses enqueues nothing."""

from __future__ import annotations

import pytest
import redis
from rq.job import Job

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.algo import apply_input
from graphcore.engine.registry import Registry
from graphcore.errors import LeaseLostError
from graphcore.settings import Settings
from tests.workers import job_as_rq_reads_it
from worker.commit import StepCommit
from worker.context import WorkerContext, set_context
from worker.job import step_job
from worker.lease import Lease
from worker.queue import RQStepQueue, queue_name, step_job_id

REGISTRY = Registry.load(["tests.workflows.basic"])


def queued(kv: redis.Redis, settings: Settings) -> list[bytes]:
    return kv.lrange(f"rq:queue:{queue_name(settings.queue, 'counter')}", 0, -1)


def test_the_job_a_commit_enqueues_is_what_rq_enqueue_writes(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """Step 0's commit enqueues step 1's job: the hash RQ's enqueue_call writes for it (timestamps apart),
    its id on the workflow's queue, the queue in RQ's set, the job in the index of unclaimed step jobs."""
    settings = Settings(redis_url=redis_url)
    set_context(WorkerContext.build(redis_client, settings, REGISTRY))
    run_id = client.enqueue("counter", {"limit": 3})
    redis_client.delete(
        Job.key_for(step_job_id(run_id, 0)), f"rq:queue:{queue_name(settings.queue, 'counter')}"
    )
    assert step_job(run_id, run_id, 0) == "committed step 1"
    job_key = Job.key_for(step_job_id(run_id, 1))
    ours = redis_client.hgetall(job_key)
    assert queued(redis_client, settings) == [step_job_id(run_id, 1).encode()]
    assert redis_client.smembers("rq:queues") == {
        f"rq:queue:{queue_name(settings.queue, 'counter')}".encode()
    }
    assert redis_client.zscore(keys.steps_index(), keys.step_member(run_id, run_id, 1)) is not None
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.RUNNING, 1)
    redis_client.delete(job_key, f"rq:queue:{queue_name(settings.queue, 'counter')}")
    with redis_client.pipeline(transaction=True) as pipe:
        pipe.multi()
        RQStepQueue(redis_client, settings).stage(pipe, run)  # RQ's enqueue_call
        pipe.execute()
    theirs = redis_client.hgetall(job_key)
    assert job_as_rq_reads_it(ours) == job_as_rq_reads_it(theirs)
    assert ours.keys() == theirs.keys()
    assert ours[b"created_at"] == ours[b"enqueued_at"]


def test_a_refused_commit_enqueues_no_job(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    """The fence refuses (another worker holds the lease): no checkpoint, no run change, and no job for the
    next step — the job goes with the commit or not at all."""
    settings = Settings(redis_url=redis_url)
    ctx = WorkerContext.build(redis_client, settings, REGISTRY)
    run_id = client.enqueue("counter", {"limit": 3})
    redis_client.delete(f"rq:queue:{queue_name(settings.queue, 'counter')}")
    run = client.get_run(run_id)
    lease = Lease(redis_client, run_id, run_id, 30, 10)
    redis_client.set(lease.key, "another-worker")
    cp = apply_input(REGISTRY.get("counter"), None, {"limit": 3}, {"run_id": run_id})
    plan = ctx.store("counter").plan_put(run_id, cp, may_append=False)
    extra = StepCommit({"head": cp.id, "step": "1"}, drop_lease=True)
    extra.next_job = ctx.queue.prepare(run.model_copy(update={"step": 1}))
    script_keys, argv = ctx.commit.args(run_id, run_id, cp.id, lease, 0, cp.id, plan, extra)
    with pytest.raises(LeaseLostError, match="rejected: lease no longer held"):
        ctx.commit.run(script_keys, argv, "the test's commit")
    assert redis_client.exists(Job.key_for(step_job_id(run_id, 1))) == 0
    assert queued(redis_client, settings) == []
    assert redis_client.zscore(keys.steps_index(), keys.step_member(run_id, run_id, 1)) is None
    after = client.get_run(run_id)
    assert (after.status, after.step, after.head) == (RunStatus.QUEUED, 0, None)
    assert redis_client.hget(keys.run(run_id, run_id), "refused:commit") == b"1"
    assert redis_client.get(lease.key) == b"another-worker"
