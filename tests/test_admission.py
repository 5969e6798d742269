"""Admission and fair leasing across tenants (R8, R15), on a real Redis in this process: the one admission
script, what it writes for RQ, limits (cluster, tenant, workflow), fairness and weights, waiting runs that
are canceled or time out, answers, hand-overs and the reaper's continuations. Worker subprocesses and
SIGKILL: ``test_admission_workers.py``."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from rq.job import Job

from graphcore import keys
from graphcore.backend import admission, published
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.reaper import lapsed_leases, reap, server_ms
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, now_iso
from graphcore.backend.threads import hand_over
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue, step_job_id
from graphq.worker.step.lease import Lease
from tests.workers import Beats, job_as_rq_reads_it, wait_for

REGISTRY = Registry.load(["tests.workflows.admission"])
QUEUE = "rq:queue:graphq:tick"


def make(kv: redis.Redis, url: str, **limits: Any) -> Client:
    """A client whose settings carry ``limits`` (max_concurrent_runs=..., tenant_weights=...)."""
    return Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=url, **limits)))


def work(client: Client) -> None:
    """Work every queued step job in this process (a burst worker with the client's settings)."""
    assert client.queue is not None
    run_worker(client.queue.settings, burst=True, registry=REGISTRY, kv=client.kv)  # type: ignore[attr-defined]


def counts(kv: redis.Redis) -> dict[str, int]:
    return {k.decode().replace("\0", ":"): int(v) for k, v in kv.hgetall(keys.admission("counts")).items()}


def queued_jobs(kv: redis.Redis, queue: str = QUEUE) -> list[str]:
    return [j.decode() for j in kv.lrange(queue, 0, -1)]


def admitted(kv: redis.Redis) -> list[str]:
    return [tenant for tenant, _ in admission.admissions(kv)]


@pytest.fixture(autouse=True)
def _debug(redis_client: redis.Redis) -> None:
    admission.enable_debug(redis_client)


def test_the_admitted_job_is_what_rq_enqueue_writes(redis_client: redis.Redis, redis_url: str) -> None:
    """The job hash the script writes is RQ's own (RQ's create_job and to_dict), field for field, apart
    from its timestamps; the id is pushed on the workflow's queue, the queue is in RQ's set, the job in the
    index of unclaimed step jobs."""
    client = make(redis_client, redis_url)
    run_id = client.enqueue("tick", {"sleep": 0.0})
    run = client.get_run(run_id)
    job_key = Job.key_for(step_job_id(run_id, 0))
    ours = redis_client.hgetall(job_key)
    assert queued_jobs(redis_client) == [step_job_id(run_id, 0)]
    assert redis_client.smembers("rq:queues") == {QUEUE.encode()}
    assert redis_client.zscore(keys.steps_index(), keys.step_member(run.thread_id, run_id, 0)) is not None
    redis_client.delete(job_key, QUEUE, "rq:queues")
    queue = RQStepQueue(redis_client, Settings(redis_url=redis_url))
    with redis_client.pipeline(transaction=True) as pipe:
        pipe.multi()
        queue.stage(pipe, run)  # RQ's enqueue_call
        pipe.execute()
    theirs = redis_client.hgetall(job_key)
    assert job_as_rq_reads_it(ours) == job_as_rq_reads_it(theirs)
    assert ours.keys() == theirs.keys()
    assert queued_jobs(redis_client) == [step_job_id(run_id, 0)]
    assert redis_client.smembers("rq:queues") == {QUEUE.encode()}


def test_runs_over_the_limit_wait_without_an_rq_job_and_a_worker_runs_them(
    redis_client: redis.Redis, redis_url: str
) -> None:
    client = make(redis_client, redis_url, max_concurrent_runs=2)
    ids = client.enqueue_many([RunRequest("tick", {}) for _ in range(5)])
    assert queued_jobs(redis_client) == [step_job_id(i, 0) for i in ids[:2]]
    assert [redis_client.exists(Job.key_for(step_job_id(i, 0))) for i in ids] == [1, 1, 0, 0, 0]
    assert [client.get_run(i).status for i in ids] == [RunStatus.QUEUED] * 5
    assert counts(redis_client) == {"g": 2, "t:default": 2, "w:tick": 2, "x:tick:default": 2, "q:default": 3}
    work(client)
    assert [client.get_run(i).status for i in ids] == [RunStatus.COMPLETED] * 5
    assert [run_id for _, run_id in admission.admissions(redis_client)] == ids  # oldest first
    assert admission.highest_counts(redis_client) == {
        "global": 2,
        "tenant:default": 2,
        "workflow:tick": 2,
        "workflow-tenant:tick:default": 2,
    }
    assert counts(redis_client) == {}
    assert redis_client.hlen(keys.admission("holders")) == 0
    assert redis_client.hlen(keys.admission("entries")) == 0
    assert redis_client.zcard(keys.admission("waiting")) == 0


def test_a_tenant_behind_another_tenants_50_runs_is_admitted_at_the_next_slot(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """Fair admission (R8) in a fixed scenario: A enqueues 50, then B 1, with 4 slots: B's run takes the
    first slot that frees."""
    client = make(redis_client, redis_url, max_concurrent_runs=4)
    client.enqueue_many([RunRequest("tick", {}, tenant="a") for _ in range(50)])
    [light] = client.enqueue_many([RunRequest("tick", {}, tenant="b")])
    assert admitted(redis_client) == ["a"] * 4
    work(client)
    order = admission.admissions(redis_client)
    assert [t for t, _ in order][:6] == ["a", "a", "a", "a", "b", "a"]
    assert order[4][1] == light
    assert len(order) == 51
    assert admission.highest_counts(redis_client)["global"] == 4


def test_weights_give_a_tenant_that_many_turns(redis_client: redis.Redis, redis_url: str) -> None:
    """GRAPHQ_TENANT_WEIGHTS b=3: b is admitted three times for each of a's turns (stride scheduling; b
    joins at the virtual time, a is one turn ahead from its first, direct, admission)."""
    client = make(redis_client, redis_url, max_concurrent_runs=1, tenant_weights="b=3")
    client.enqueue_many([RunRequest("tick", {}, tenant="a") for _ in range(8)])
    client.enqueue_many([RunRequest("tick", {}, tenant="b") for _ in range(8)])
    work(client)
    assert "".join(admitted(redis_client)[:11]) == "abbbbabbbab"


def test_per_tenant_and_workflow_limits(redis_client: redis.Redis, redis_url: str) -> None:
    """GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT=2, and the workflow `capped` (max_concurrent_runs=2,
    max_concurrent_runs_per_tenant=1): a tenant at its workflow's limit still gets its runs of another
    workflow admitted (lanes per tenant and workflow); every count stays within its limit."""
    client = make(redis_client, redis_url, max_concurrent_runs=5, max_concurrent_runs_per_tenant=2)
    capped = client.enqueue_many([RunRequest("capped", {}, tenant=t) for t in "aabbc"])
    ticks = client.enqueue_many([RunRequest("tick", {}, tenant="a") for _ in range(2)])
    assert counts(redis_client) == {
        "g": 3,
        "t:a": 2,
        "t:b": 1,
        "w:capped": 2,
        "w:tick": 1,
        "x:capped:a": 1,
        "x:capped:b": 1,
        "x:tick:a": 1,
        "q:a": 2,
        "q:b": 1,
        "q:c": 1,
    }
    assert redis_client.exists(Job.key_for(step_job_id(ticks[0], 0))) == 1
    work(client)
    assert {client.get_run(r).status for r in capped + ticks} == {RunStatus.COMPLETED}
    highest = admission.highest_counts(redis_client)
    assert highest["workflow:capped"] == 2
    assert max(v for k, v in highest.items() if k.startswith("workflow-tenant:capped:")) == 1
    assert max(v for k, v in highest.items() if k.startswith("tenant:")) == 2
    assert highest["global"] <= 5


def test_canceling_a_waiting_run_withdraws_it(redis_client: redis.Redis, redis_url: str) -> None:
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    first, waiting, last = client.enqueue_many([RunRequest("tick", {}) for _ in range(3)])
    assert client.cancel(waiting) == "canceled"
    assert counts(redis_client)["q:default"] == 1
    assert client.cancel(first) == "canceled"  # admitted, not started: its slot goes to `last`
    assert queued_jobs(redis_client) == [step_job_id(first, 0), step_job_id(last, 0)]
    assert redis_client.exists(Job.key_for(step_job_id(waiting, 0))) == 0
    work(client)
    statuses = [client.get_run(r).status for r in (first, waiting, last)]
    assert statuses == [RunStatus.CANCELED, RunStatus.CANCELED, RunStatus.COMPLETED]
    assert client.get_run(waiting).started_at is None
    assert counts(redis_client) == {}


def test_a_waiting_run_past_its_deadline_is_canceled_and_never_starts(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """R15: the wait counts toward the run timeout; the reaper's pass ends the run Canceled with the
    timeout error; it never started (no job, no started_at, no running event) and its thread goes on."""
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    blocker = client.enqueue("tick", {})
    late = client.enqueue("tick", {}, config={"run_timeout_s": 2}, thread_id="t-late")
    behind = client.enqueue("tick", {}, thread_id="t-late")  # waits for the thread
    reaper = Reaper(redis_client, Settings(redis_url=redis_url, max_concurrent_runs=1))
    reaper.admission(server_ms(redis_client))
    assert client.get_run(late).status == RunStatus.QUEUED  # not yet (2 s: a loaded machine gets here first)

    def passed() -> bool:
        reaper.admission(server_ms(redis_client))
        return client.get_run(late).status != RunStatus.QUEUED

    wait_for(passed, 20, "the reaper's pass past the deadline")
    run = client.get_run(late)
    assert run.status == RunStatus.CANCELED and run.started_at is None
    assert run.error is not None and run.error.type == "RunTimeout"
    assert run.error.message.startswith("run exceeded run_timeout_s=2 s (GRAPHQ_RUN_TIMEOUT_S or the run ")
    assert run.error.message.endswith(
        ", queued: it waited for a slot (GRAPHQ_MAX_CONCURRENT_RUNS, GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT "
        "or its workflow's max_concurrent_runs) and never started"
    )
    assert redis_client.exists(Job.key_for(step_job_id(late, 0))) == 0
    events = client.kv.xrange(keys.run_events("t-late", late))
    assert [e[b"mode"] for _, e in events] == [b"status"]
    assert redis_client.get(keys.thread_active("t-late")) == behind.encode()
    work(client)
    assert [client.get_run(r).status for r in (blocker, behind)] == [RunStatus.COMPLETED] * 2
    assert [r for _, r in admission.admissions(redis_client)] == [blocker, behind]


def test_awaiting_input_frees_the_slot_and_the_answer_waits_for_one(
    redis_client: redis.Redis, redis_url: str
) -> None:
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    asking = client.enqueue("ask", {})
    work(client)
    assert client.get_run(asking).status == RunStatus.AWAITING_INPUT
    assert counts(redis_client) == {}
    blocker = client.enqueue("tick", {})
    client.answer(asking, "yes")
    run = client.get_run(asking)
    assert run.status == RunStatus.QUEUED
    assert counts(redis_client)["q:default"] == 1
    assert queued_jobs(redis_client, "rq:queue:graphq:ask") == []
    work(client)
    assert [client.get_run(r).status for r in (blocker, asking)] == [RunStatus.COMPLETED] * 2
    assert [r for _, r in admission.admissions(redis_client)] == [asking, blocker, asking]


def test_releasing_twice_frees_once(redis_client: redis.Redis, redis_url: str) -> None:
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    first, second, third = client.enqueue_many([RunRequest("tick", {}) for _ in range(3)])
    run = client.get_run(first)
    redis_client.hset(keys.run(run.thread_id, first), "status", "failed")  # as a worker's end would
    assert client.queue is not None
    verdicts = [admission.release(redis_client, client.queue, run.thread_id, first) for _ in range(3)]
    assert verdicts == ["freed", "none", "none"]
    assert [r for _, r in admission.admissions(redis_client)] == [first, second]
    assert counts(redis_client) == {"g": 1, "t:default": 1, "w:tick": 1, "x:tick:default": 1, "q:default": 1}
    later = client.get_run(second)
    assert admission.release(redis_client, client.queue, later.thread_id, second) == "busy"  # queued
    assert client.get_run(third).status == RunStatus.QUEUED


def test_a_reaped_run_gives_its_slot_to_its_continuation_once(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """The continuation takes over the slot in the reap script: the run waiting behind is not admitted
    (not twice), and it is once the continuation ends (not never)."""
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    crashed, waiting = client.enqueue_many([RunRequest("ticks", {}), RunRequest("tick", {})])
    run = client.get_run(crashed)
    lease = Lease(redis_client, run.thread_id, crashed, 0.05, 0.025)
    assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), "w-dead")[0] == 3
    redis_client.hset(keys.run(run.thread_id, crashed), "status", "running")
    time.sleep(0.1)
    [lapsed] = lapsed_leases(redis_client, server_ms(redis_client))
    outcome = reap(redis_client, lapsed, resume=True, max_attempts=1)
    assert outcome.verdict == "continued"
    again = reap(redis_client, lapsed, resume=True, max_attempts=1)  # a racing reaper: nothing more
    assert again.verdict == "gone"
    Reaper(redis_client, Settings(redis_url=redis_url, max_concurrent_runs=1)).recover()
    holders = {k.decode() for k in redis_client.hkeys(keys.admission("holders"))}
    assert holders == {keys.lease_member(run.thread_id, outcome.detail)}
    assert counts(redis_client)["g"] == 1
    assert queued_jobs(redis_client, "rq:queue:graphq:ticks")[-1] == step_job_id(outcome.detail, 0)
    assert queued_jobs(redis_client) == []  # `waiting` still waits
    work(client)
    assert client.get_run(outcome.detail).status == RunStatus.COMPLETED
    assert client.get_run(waiting).status == RunStatus.COMPLETED
    assert [r for _, r in admission.admissions(redis_client)] == [crashed, waiting]
    assert counts(redis_client) == {}


def test_a_command_without_the_limits_keeps_the_published_ones(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """A worker publishes its limits; a client without GRAPHQ_MAX_CONCURRENT_RUNS (an operator's shell)
    admits and cancels within them (no worker live: the newest entry counts)."""
    published.publish(redis_client, Settings(redis_url=redis_url, max_concurrent_runs=2), "w-1")
    shell = make(redis_client, redis_url)
    ids = shell.enqueue_many([RunRequest("tick", {}) for _ in range(4)])
    assert len(queued_jobs(redis_client)) == 2
    shell.cancel(ids[0])
    assert queued_jobs(redis_client) == [step_job_id(i, 0) for i in ids[:3]]
    assert counts(redis_client)["g"] == 2


def test_a_thread_hands_over_through_admission(redis_client: redis.Redis, redis_url: str) -> None:
    """The run waiting for its thread asks for a slot when the thread is handed to it."""
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    first = client.enqueue("tick", {}, thread_id="shared")
    second = client.enqueue("tick", {}, thread_id="shared")
    other = client.enqueue("tick", {})
    work(client)
    assert [r for _, r in admission.admissions(redis_client)] == [first, other, second]
    assert {client.get_run(r).status for r in (first, second, other)} == {RunStatus.COMPLETED}


def test_a_script_lost_by_redis_is_loaded_again(redis_client: redis.Redis, redis_url: str) -> None:
    """SCRIPT FLUSH (a Redis restart): the admission in the enqueue's MULTI fails alone and runs again
    after it; the run is admitted once."""
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    client.enqueue("tick", {})
    redis_client.script_flush()
    second = client.enqueue("tick", {})
    assert counts(redis_client)["q:default"] == 1
    redis_client.script_flush()
    work(client)
    assert client.get_run(second).status == RunStatus.COMPLETED
    assert counts(redis_client) == {}


def test_raising_a_limit_admits_at_the_next_reaper_pass(redis_client: redis.Redis, redis_url: str) -> None:
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    client.enqueue_many([RunRequest("tick", {}) for _ in range(3)])
    raised = Settings(redis_url=redis_url, max_concurrent_runs=3)
    Reaper(redis_client, raised).admission(server_ms(redis_client))
    assert len(queued_jobs(redis_client)) == 3


def test_graphq_tenants(redis_client: redis.Redis, redis_url: str) -> None:
    client = make(redis_client, redis_url, max_concurrent_runs=2)
    client.enqueue_many([RunRequest("tick", {}, tenant="a") for _ in range(3)])
    client.enqueue_many([RunRequest("tick", {}, tenant="b") for _ in range(2)])
    time.sleep(0.05)
    rows = admission.tenants(redis_client, server_ms(redis_client))
    assert [(r.tenant, r.running, r.queued) for r in rows] == [("a", 2, 1), ("b", 0, 2)]
    assert all(r.oldest_wait_s is not None and 0.04 <= r.oldest_wait_s < 5 for r in rows)


def test_a_waiting_run_whose_entry_is_gone_is_skipped(redis_client: redis.Redis, redis_url: str) -> None:
    """An inconsistent line (an entry lost: a manual clean-up, a bug) is repaired, never trusted: the next
    waiting run is admitted."""
    client = make(redis_client, redis_url, max_concurrent_runs=1)
    first, broken, last = client.enqueue_many([RunRequest("tick", {}) for _ in range(3)])
    lost = client.get_run(broken)
    redis_client.hdel(keys.admission("entries"), keys.lease_member(lost.thread_id, broken))
    client.cancel(first)
    assert queued_jobs(redis_client) == [step_job_id(first, 0), step_job_id(last, 0)]
    assert redis_client.zcard(keys.admission("waiting")) == 0
    assert redis_client.zcard(keys.admission("lanes")) == 0


def test_a_lost_script_cache_never_splits_an_admission_from_its_transaction(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis lost its script cache (a restart), and the process dies right after the transaction that
    creates a run, or hands its thread over: the admission was part of that transaction, so the run has its
    slot and its job (before, the script failed alone inside it and was to run again after it: the run
    stayed queued with no job and no place in line, and its thread stuck, for good)."""
    client = make(redis_client, redis_url)
    assert client.queue is not None
    warm = client.enqueue("tick", {}, thread_id="t-warm")  # the script is in Redis's cache ...
    redis_client.script_flush()  # ... and is lost

    def died(*_: Any) -> list[Any]:
        raise redis.ConnectionError("the process died right after its transaction")

    monkeypatch.setattr(admission, "_call", died)
    first = client.enqueue("tick", {}, thread_id="t")
    second = client.enqueue("tick", {}, thread_id="t")  # waits for the thread
    assert queued_jobs(redis_client) == [step_job_id(warm, 0), step_job_id(first, 0)]
    redis_client.hset(keys.run("t", first), "status", "completed")  # as its last commit would
    redis_client.script_flush()
    assert hand_over(redis_client, client.runs, client.queue, "t", first) == second
    assert queued_jobs(redis_client)[-1] == step_job_id(second, 0)
    assert counts(redis_client) == {"g": 2, "t:default": 2, "w:tick": 2, "x:tick:default": 2}


def test_a_worker_without_limits_erases_none(
    redis_client: redis.Redis, redis_url: str, heartbeats: Beats
) -> None:
    """A live worker with limits and one without (a `graphq run` or `runs answer --wait` from a shell, whose
    in-command worker publishes too): the limit holds (it was erased by the second publish, and 8 runs ran
    at once under GRAPHQ_MAX_CONCURRENT_RUNS=2). The strictest live worker counts; a dead one does not."""
    beats = [heartbeats(w, ["graphq:tick"]) for w in ("w-a", "w-b", "w-c")]
    published.publish(redis_client, Settings(redis_url=redis_url, max_concurrent_runs=3), "w-a")
    published.publish(redis_client, Settings(redis_url=redis_url, max_concurrent_runs=2), "w-b")
    published.publish(redis_client, Settings(redis_url=redis_url), "w-c")  # no limits: lowers nothing
    shell = make(redis_client, redis_url)
    shell.enqueue_many([RunRequest("tick", {}) for _ in range(4)])
    assert len(queued_jobs(redis_client)) == 2
    assert admission.effective_limits(redis_client, Settings())[:2] == (2, None)
    beats[1].stop()  # w-b exits: the live ones allow 3
    assert admission.effective_limits(redis_client, Settings())[:2] == (3, None)
    shell.enqueue("tick", {})
    assert len(queued_jobs(redis_client)) == 3
    for beat in beats:
        beat.stop()
    # no worker live: the newest entry (w-c's, no limits) is the cluster's last word
    assert admission.effective_limits(redis_client, Settings())[:2] == (None, None)
