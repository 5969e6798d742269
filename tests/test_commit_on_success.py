"""A step that has a next one commits in the pipeline in which RQ records the job's success
(graphq.worker.step.commit_script CommitAhead, P1): the same fenced script, no round trip of its own. Its
reply is handled there: a refusal is logged, counted and written as the job's result; a commit whose script is
gone (Redis restarted) or whose log append conflicts is made again in a round trip of its own; a pipeline
whose reply was lost is sent again by RQ's outage-proof bookkeeping, and the commit recognises itself."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from rq import SimpleWorker
from rq.job import Job
from rq.serializers import JSONSerializer

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker import metrics
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import StepJob, step_job_id
from graphq.worker.step.fence import REFUSED

REGISTRY = Registry.load(["tests.workflows.basic"])
Hook = Callable[[StepJob, Any], None]


def _work(redis_client: redis.Redis, redis_url: str) -> None:
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)


def _before_success(monkeypatch: pytest.MonkeyPatch, job_id: str, hook: Hook) -> list[int]:
    """Call ``hook(job, pipeline)`` before RQ records the success of job ``job_id`` (each time it tries);
    returns the list of the tries' commit counts (commits staged on the pipeline by then)."""
    success = StepJob._handle_success
    tries: list[int] = []

    def hooked(self: StepJob, result_ttl: int, pipeline: Any, *args: Any, **kwargs: Any) -> None:
        if self.id == job_id:
            hook(self, pipeline)
        success(self, result_ttl, pipeline, *args, **kwargs)
        if self.id == job_id:
            tries.append(sum(1 for cmd, _ in pipeline.command_stack if cmd[0] == "EVALSHA"))

    monkeypatch.setattr(StepJob, "_handle_success", hooked)
    return tries


def _lose_first_reply(lost: list[bool], then: Callable[[], Any]) -> Hook:
    """A hook whose first pipeline is applied, then ``then()`` runs, then its reply is lost (a connection
    error); ``lost`` gets ``True`` when that happened."""

    def hook(job: StepJob, pipe: Any) -> None:
        if lost:
            return
        execute = pipe.execute

        def applied_then_lost(raise_on_error: bool = True) -> list[Any]:
            execute(raise_on_error=False)
            then()
            lost.append(True)
            raise RedisConnectionError("connection lost after the reply was sent")

        pipe.execute = applied_then_lost

    return hook


def _counted(n: int) -> dict[str, Any]:
    """The result of ``counter`` run to ``limit`` n."""
    return {"n": n, "limit": n, "log": [f"bump{i}" for i in range(1, n + 1)]}


def _latest_result(redis_client: redis.Redis, job_id: str) -> Any:
    job = Job.fetch(job_id, connection=redis_client, serializer=JSONSerializer)
    result = job.latest_result()
    return None if result is None else result.return_value


def test_steps_commit_in_rqs_success_pipeline(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = client.enqueue("counter", {"limit": 3})
    tries = _before_success(monkeypatch, step_job_id(run_id, 0), lambda job, pipe: None)
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result) == (RunStatus.COMPLETED, 3, _counted(3))
    assert tries == [1]  # the commit, staged once on RQ's success pipeline
    assert [_latest_result(redis_client, step_job_id(run_id, s)) for s in range(3)] == [
        "committed step 1",
        "committed step 2",
        "completed",
    ]
    assert [c.step for c in client.get_history(run.thread_id)] == [3, 2, 1, 0, -1]


def test_a_commit_refused_there_is_logged_counted_and_becomes_the_jobs_result(
    client: Client,
    redis_client: redis.Redis,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another worker took the step over (its lease) between the job's end and RQ's pipeline: nothing is
    written, the refusal is logged and counted (I1), and the job's result says so."""
    run_id = client.enqueue("counter", {"limit": 3})
    job_id = step_job_id(run_id, 0)
    lease_key = keys.lease(run_id, run_id)

    def take_over(job: StepJob, pipe: Any) -> None:
        redis_client.set(lease_key, "another-worker")

    _before_success(monkeypatch, job_id, take_over)
    registry = metrics.enable()
    rejected = {"workflow": "counter", "outcome": "rejected"}
    before = REFUSED.counts().get("commit", 0), registry.get_sample_value("graphq_steps_total", rejected) or 0
    try:
        with caplog.at_level(logging.WARNING, logger="graphq"):
            _work(redis_client, redis_url)
        steps = (registry.get_sample_value("graphq_steps_total", rejected) or 0) - before[1]
    finally:
        metrics.disable()
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.RUNNING, 0)
    assert [c.step for c in client.get_history(run.thread_id)] == [
        0,
        -1,
    ]  # the input checkpoint and the input applied only
    assert redis_client.hget(keys.run(run_id, run_id), "refused:commit") == b"1"
    assert REFUSED.counts().get("commit", 0) == before[0] + 1
    assert steps == 1.0
    assert redis_client.llen("rq:queue:graphq:counter") == 0  # no job for step 1
    assert redis_client.get(lease_key) == b"another-worker"
    result = _latest_result(redis_client, job_id)
    assert result == f"rejected: the commit of run {run_id} step 0 refused: the lease is no longer held"
    assert any("the commit refused" in r.getMessage() for r in caplog.records)


def test_a_commit_whose_script_is_gone_is_made_again_on_its_own(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis lost its script cache (a restart) just before RQ's pipeline: the commit's EVALSHA answers
    NOSCRIPT, RQ's own writes go through, and the commit is made again, which loads the script."""
    run_id = client.enqueue("counter", {"limit": 2})

    def restart(job: StepJob, pipe: Any) -> None:
        redis_client.script_flush()

    tries = _before_success(monkeypatch, step_job_id(run_id, 0), restart)
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result) == (RunStatus.COMPLETED, 2, _counted(2))
    assert tries == [1]
    assert _latest_result(redis_client, step_job_id(run_id, 0)) == "committed step 1"
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]
    assert redis_client.hget(keys.run(run_id, run_id), "refused:commit") is None


def test_a_success_pipeline_whose_reply_was_lost_is_sent_again_and_commits_once(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RQ's pipeline is applied and its reply lost (the connection drops): RQ's bookkeeping, made to
    outlast outages, records the success again, with the commit, which answers 'again' (applied)."""
    run_id = client.enqueue("counter", {"limit": 2})
    lost: list[bool] = []
    tries = _before_success(monkeypatch, step_job_id(run_id, 0), _lose_first_reply(lost, lambda: None))
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result) == (RunStatus.COMPLETED, 2, _counted(2))
    assert lost == [True] and tries == [1, 1]  # staged again on the second try
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]  # each step committed once
    assert redis_client.hget(keys.run(run_id, run_id), "refused:commit") is None
    assert _latest_result(redis_client, step_job_id(run_id, 0)) == "committed step 1"


def test_a_lost_reply_then_a_lost_script_cache_sends_the_same_commit_again(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis restart loses the pipeline's reply and the script cache: the commit staged again answers
    NOSCRIPT, and the same call is sent again once loaded; it answers 'again'. A new plan instead (its log
    generation never written, as the commit had applied) left the next step's checkpoint pointing at a log
    that did not exist: the run ended with ``squares`` empty."""
    run_id = client.enqueue("fanout", {"items": [1, 2, 3]})
    lost: list[bool] = []
    restart = _lose_first_reply(lost, redis_client.script_flush)
    tries = _before_success(monkeypatch, step_job_id(run_id, 0), restart)
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.COMPLETED, 2)
    assert run.result == {"items": [1, 2, 3], "squares": [1, 4, 9], "total": 14}
    assert lost == [True] and tries == [1, 1]
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]
    assert redis_client.hget(keys.run(run_id, run_id), "refused:commit") is None


def test_a_commit_rq_never_sent_goes_in_a_round_trip_of_its_own(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RQ's bookkeeping of the job fails before its success pipeline (an error that is not an outage): RQ
    records a failure of the job instead, and graphq's worker class sends the commit after, so the step's
    work is not lost (it was left to the lease's lapse and the reaper: a continuation run)."""
    run_id = client.enqueue("counter", {"limit": 2})
    job_id = step_job_id(run_id, 0)
    count = SimpleWorker.increment_successful_job_count
    failed: list[str] = []

    def fails_once(self: SimpleWorker, pipeline: Any) -> None:
        if not failed:
            failed.append("once")
            raise ResponseError("ERR injected: RQ's bookkeeping failed")
        count(self, pipeline)

    monkeypatch.setattr(SimpleWorker, "increment_successful_job_count", fails_once)
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result, run.attempt) == (RunStatus.COMPLETED, 2, _counted(2), 1)
    assert failed == ["once"]
    assert Job.fetch(job_id, connection=redis_client, serializer=JSONSerializer).get_status() == "failed"
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]


def test_a_commit_refused_while_the_lease_is_ours_gives_the_lease_back(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run ended (a cancel, say) between the job's end and RQ's pipeline: the commit is refused as
    'finished' and the lease, still this worker's, is given back (it was left to lapse)."""
    run_id = client.enqueue("counter", {"limit": 3})
    lease_key = keys.lease(run_id, run_id)
    seen: list[Any] = []

    def end_the_run(job: StepJob, pipe: Any) -> None:
        seen.append(redis_client.get(lease_key))
        redis_client.hset(keys.run(run_id, run_id), "status", "canceled")

    _before_success(monkeypatch, step_job_id(run_id, 0), end_the_run)
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.CANCELED, 0)
    assert len(seen) == 1 and seen[0] is not None  # held until then
    assert redis_client.get(lease_key) is None
    assert redis_client.zscore(keys.lease_index(), keys.lease_member(run_id, run_id)) is None
    assert redis_client.hget(keys.run(run_id, run_id), "refused:commit") == b"1"
    assert _latest_result(redis_client, step_job_id(run_id, 0)).startswith("rejected: the commit of run")


def test_a_commit_that_errors_fails_the_run_as_in_the_step_job(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script answers an error (here: its arguments cut short): the run fails, as when the step job's
    own commit raised, its lease given back; the job's result and the step's metrics say failed."""
    run_id = client.enqueue("counter", {"limit": 3})

    def cut_short(job: StepJob, pipe: Any) -> None:
        assert job.commit_ahead is not None
        job.commit_ahead.argv = job.commit_ahead.argv[:4]

    _before_success(monkeypatch, step_job_id(run_id, 0), cut_short)
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.FAILED, 0)
    assert run.error is not None and run.error.type == "ResponseError"
    assert redis_client.get(keys.lease(run_id, run_id)) is None
    assert _latest_result(redis_client, step_job_id(run_id, 0)) == "failed: ResponseError"


class _Listener:
    """A lease listener (what the supervising process hears) that notes, when a lease is freed, the run's
    step in Redis then."""

    def __init__(self, kv: redis.Redis) -> None:
        self.kv = kv
        self.freed_at: list[int] = []

    def held(self, lease: Any) -> None:
        pass

    def limit(self, lease: Any, at: float, stop: Any, step: int) -> None:
        pass

    def freed(self, lease: Any) -> None:
        self.freed_at.append(int(self.kv.hget(keys.run(lease.thread_id, lease.run_id), "step") or -1))

    def retire(self) -> None:
        pass


def test_the_supervisor_hears_a_lease_freed_once_its_commit_applied(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """A child that dies between its step job's end and RQ's pipeline must still have its lease lapsed at
    once, and a give-up must still find the step: the lease is freed for the supervisor after the commit
    (steps 0 and 1 in RQ's pipeline, step 2 in its own round trip; that one is freed by its commit and
    again as its block ends, which the supervisor's channel ignores)."""
    run_id = client.enqueue("counter", {"limit": 3})
    listener = _Listener(redis_client)
    settings = Settings(redis_url=redis_url)
    run_worker(settings, burst=True, registry=REGISTRY, kv=redis_client, listener=listener)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    assert listener.freed_at == [1, 2, 3, 3]
