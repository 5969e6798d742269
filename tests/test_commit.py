"""The commit of a super-step enqueues the next step's job in the same script
(graphq.worker.step.commit_script, I1, R3, P1): the job is RQ's own, field for field, and a commit the fence
refuses enqueues nothing."""

from __future__ import annotations

import pytest
import redis
from rq.job import Job

import graphq.worker.step.committing
from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.checkpoints.layout import Plan
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import apply_input
from graphcore.engine.registry import Registry
from graphcore.errors import AppendConflictError, LeaseLostError
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue, queue_name, step_job_id
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.commit_script import CommitScript, StepCommit, commit_verdict
from graphq.worker.step.context import WorkerContext, set_context
from graphq.worker.step.job import step_job
from graphq.worker.step.lease import Lease
from graphq.worker.step.replies import ClaimResult, CommitVerdict
from tests.workers import job_as_rq_reads_it

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
    extra.next_job = ctx.queue.prepare(run, 1)
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


def committing(ctx: WorkerContext, run_id: str, step: int) -> str:
    """Run ``run_id``'s step ``step`` in this process (no RQ worker) after emptying the counter's queue."""
    ctx.kv.delete(f"rq:queue:{queue_name(ctx.settings.queue, 'counter')}")
    return step_job(run_id, run_id, step)


@pytest.fixture
def ctx(redis_client: redis.Redis, redis_url: str) -> WorkerContext:
    context = WorkerContext.build(redis_client, Settings(redis_url=redis_url), REGISTRY)
    set_context(context)
    return context


def test_a_commit_whose_reply_was_lost_pushes_its_job_once(
    client: Client, ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit applies, its reply is lost (a connection error), the retry is recognised ('again'):
    the step is committed and its next job queued once, nothing counted as refused."""
    call = CommitScript.call
    replies: list[object] = []

    def losing_the_first_reply(self: CommitScript, *args: object) -> object:
        replies.append(call(self, *args))  # type: ignore[arg-type]
        if len(replies) == 2:  # the input checkpoint's commit went through; lose the step's reply
            raise redis.ConnectionError("reply lost")
        return replies[-1]

    monkeypatch.setattr(CommitScript, "call", losing_the_first_reply)
    run_id = client.enqueue("counter", {"limit": 3})
    assert committing(ctx, run_id, 0) == "committed step 1"
    assert replies == [b"ok", b"ok", b"again"]
    assert queued(ctx.kv, ctx.settings) == [step_job_id(run_id, 1).encode()]
    assert ctx.kv.hget(keys.run(run_id, run_id), "refused:commit") is None


def test_a_lost_reply_of_a_completing_commit_that_canceled_the_run_says_canceled(
    client: Client, ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last step's commit finds a cancel request (X1: the run ends Canceled, its checkpoint kept), its
    reply is lost and the retry finds the commit applied: the verdict is still 'canceled' (it was 'again',
    and the step job reported the run completed)."""
    call = CommitScript.call
    replies: list[object] = []

    def cancel_then_lose_the_reply(self: CommitScript, *args: object) -> object:
        if len(replies) == 1:  # the input checkpoint's commit went through; cancel during the last step
            assert client.cancel(run_id).startswith("cancel requested")
        replies.append(call(self, *args))  # type: ignore[arg-type]
        if len(replies) == 2:
            raise redis.ConnectionError("reply lost")
        return replies[-1]

    monkeypatch.setattr(CommitScript, "call", cancel_then_lose_the_reply)
    run_id = client.enqueue("counter", {"limit": 1})
    outcome = committing(ctx, run_id, 0)
    assert replies == [b"ok", b"canceled", b"canceled"]
    assert outcome == "canceled: a cancel request arrived during the last step (its checkpoint is kept)"
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.CANCELED, 1)
    assert run.head is not None and ctx.store("counter").get(run_id, run.head) is not None


@pytest.mark.parametrize("history", [True, False], ids=["history", "no-history"])
def test_a_lost_reply_retried_after_the_next_step_committed_is_recognised(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, history: bool
) -> None:
    """A commit replayed once the run moved on (its reply was lost, another worker ran the next step):
    'again' (its checkpoint's record exists; without history, the next commit, which pruned it, named it in
    the run's 'pruned'), not a refusal, and no job pushed again."""
    ctx = WorkerContext.build(
        redis_client, Settings(redis_url=redis_url, enable_checkpointing=history), REGISTRY
    )
    set_context(ctx)
    run = CommitScript.run
    sent: list[tuple[list[str], list[object]]] = []

    def recording(self: CommitScript, script_keys: list[str], argv: list[object], *rest: object) -> str:
        sent.append((script_keys, argv))
        return run(self, script_keys, argv, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(CommitScript, "run", recording)
    run_id = client.enqueue("counter", {"limit": 3})
    assert committing(ctx, run_id, 0) == "committed step 1"
    assert committing(ctx, run_id, 1) == "committed step 2"
    ctx.kv.delete(f"rq:queue:{queue_name(ctx.settings.queue, 'counter')}")
    script_keys, argv = sent[1]  # step 0's commit (sent[0]: the input checkpoint's)
    assert run(ctx.commit, script_keys, argv, "the replay") == "again"  # type: ignore[arg-type]
    assert queued(ctx.kv, ctx.settings) == []
    assert ctx.kv.hget(keys.run(run_id, run_id), "refused:commit") is None
    assert client.get_run(run_id).step == 2


def test_each_commit_pushes_one_job_without_history(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """GRAPHQ_ENABLE_CHECKPOINTING=false: the commit and its prune go in one MULTI; each step still queues
    exactly its next job, and the thread keeps one checkpoint."""
    ctx = WorkerContext.build(
        redis_client, Settings(redis_url=redis_url, enable_checkpointing=False), REGISTRY
    )
    set_context(ctx)
    run_id = client.enqueue("counter", {"limit": 3})
    for step in (0, 1):
        assert committing(ctx, run_id, step) == f"committed step {step + 1}"
        assert queued(redis_client, ctx.settings) == [step_job_id(run_id, step + 1).encode()]
    assert committing(ctx, run_id, 2) == "completed"
    assert queued(redis_client, ctx.settings) == []
    assert redis_client.llen(keys.history(run_id)) == 1


def test_a_commit_planned_again_after_an_append_conflict_pushes_one_job(
    client: Client, ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The append guard refuses the first plan (a log grew on another branch): nothing written, the commit
    is planned again without appends and applies, with one job for the next step."""
    plan = graphq.worker.step.committing._plan
    tried: list[bool] = []

    def racing(attempt: StepAttempt, cp: Checkpoint, may_append: bool, drop: object, writes: object) -> Plan:
        planned = plan(attempt, cp, may_append, drop, writes)  # type: ignore[arg-type]
        tried.append(may_append and bool(planned.appends))
        if tried[-1]:
            attempt.ctx.kv.rpush(planned.appends[0].key, b"another branch")
        return planned

    run_id = client.enqueue("counter", {"limit": 3})
    assert committing(ctx, run_id, 0) == "committed step 1"
    monkeypatch.setattr(graphq.worker.step.committing, "_plan", racing)
    assert committing(ctx, run_id, 1) == "committed step 2"
    assert tried == [True, False]
    assert queued(ctx.kv, ctx.settings) == [step_job_id(run_id, 2).encode()]
    monkeypatch.undo()
    assert committing(ctx, run_id, 2) == "completed"
    assert client.get_run(run_id).result == {"n": 3, "limit": 3, "log": ["bump1", "bump2", "bump3"]}


def test_each_job_has_its_runs_result_ttl(client: Client, ctx: WorkerContext) -> None:
    """The job hash's shape is made once per workflow; the result and failure TTLs are each run's (K3: no
    longer than its thread TTL)."""
    short = client.enqueue("counter", {"limit": 3}, config={"thread_ttl_s": 100})
    default = client.enqueue("counter", {"limit": 3}, thread_id="other")
    assert committing(ctx, short, 0) == "committed step 1"
    ctx.kv.delete(f"rq:queue:{queue_name(ctx.settings.queue, 'counter')}")
    assert step_job(default, "other", 0) == "committed step 1"
    keep = str(ctx.settings.result_ttl_s).encode()
    for run_id, ttl in ((short, b"100"), (default, keep)):
        job = ctx.kv.hgetall(Job.key_for(step_job_id(run_id, 1)))
        assert (job[b"result_ttl"], job[b"failure_ttl"]) == (ttl, ttl)


def test_commit_verdicts_and_refusals_are_named() -> None:
    """The commit script's verdicts come back as CommitVerdict members (equal to its words); each refusal is
    raised with its reason in words."""
    verdicts = [commit_verdict(reply, "run r step 1") for reply in (b"ok", b"again", "canceled")]
    assert verdicts == ["ok", "again", "canceled"]
    assert [(type(v), v.name) for v in verdicts] == [
        (CommitVerdict, "OK"),
        (CommitVerdict, "AGAIN"),
        (CommitVerdict, "CANCELED"),
    ]
    refused = {b"lease": "lease no longer held", b"finished": "run already finished", b"step": "run moved on"}
    for reply, reason in refused.items():
        with pytest.raises(LeaseLostError) as lost:
            commit_verdict(reply, "run r step 1")
        assert str(lost.value) == f"commit of run r step 1 rejected: {reason}"
    with pytest.raises(AppendConflictError) as grew:
        commit_verdict(b"log", "run r step 1")
    assert str(grew.value) == "commit of run r step 1: a log grew on another branch"


def test_a_claim_names_its_result(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    """Lease.claim's code is a ClaimResult (equal to the script's integer): no run, claimed, the same claim
    again (its own), another worker's lease, stale."""
    settings = Settings(redis_url=redis_url)
    run_id = client.enqueue("counter", {"limit": 2}, thread_id="named")
    lease = Lease(redis_client, "named", run_id, settings.lease_ttl_s, settings.heartbeat_interval_s)
    other = Lease(redis_client, "named", run_id, settings.lease_ttl_s, settings.heartbeat_interval_s)
    missing = Lease(redis_client, "named", "no-run", settings.lease_ttl_s, settings.heartbeat_interval_s)
    codes = [
        missing.claim(0, "now", "{}")[0],
        lease.claim(0, "now", "{}")[0],
        lease.claim(0, "now", "{}")[0],
        other.claim(0, "now", "{}")[0],
        other.claim(1, "now", "{}")[0],
    ]
    assert codes == [0, 3, 3, 2, 1]
    assert [(type(c), c.name) for c in codes] == [
        (ClaimResult, "NO_RUN"),
        (ClaimResult, "CLAIMED"),
        (ClaimResult, "CLAIMED"),
        (ClaimResult, "HELD_ELSEWHERE"),
        (ClaimResult, "STALE"),
    ]
