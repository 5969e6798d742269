"""The lease index, the reaper's lock and its one-action script, the worker registry (R18), on
a real Redis in this process; end-to-end recovery with worker subprocesses is in ``test_recovery.py``."""

from __future__ import annotations

import json
import threading
import time

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.lua import script
from graphcore.backend.reaper import ReapOutcome, lapsed_leases, reap, server_ms
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, now_iso
from graphcore.backend.workers import live_workers
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.process.liveness import Heartbeat
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.step import lease
from graphq.worker.step.lease import Lease
from tests.cli_helpers import invoke, ok, process_state_restored
from tests.workers import Beats

MODULE = "tests.workflows.crash"
REGISTRY = Registry.load([MODULE])


def claim(kv: redis.Redis, run_id: str, thread: str, ttl_s: float, worker: str = "w-1") -> tuple[Lease, int]:
    lease = Lease(kv, thread, run_id, ttl_s, ttl_s / 2)
    code, _ = lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), worker)
    return lease, code


def lapse(kv: redis.Redis, thread: str, run_id: str) -> None:
    """Wait until the run's lease has lapsed by Redis's clock."""
    deadline = time.monotonic() + 20
    member = keys.lease_member(thread, run_id)
    while kv.exists(keys.lease(thread, run_id)) or (kv.zscore(keys.lease_index(), member) or 0) > server_ms(
        kv
    ):
        assert time.monotonic() < deadline, "the lease did not lapse"
        time.sleep(0.02)


def test_claim_renew_and_release_keep_the_lease_index(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("suicide", {})
    thread = client.get_run(run_id).thread_id
    member = keys.lease_member(thread, run_id)
    before = server_ms(redis_client)
    lease, code = claim(redis_client, run_id, thread, 30)
    assert code == 3
    deadline = redis_client.zscore(keys.lease_index(), member)
    assert deadline is not None and before + 30_000 <= deadline <= server_ms(redis_client) + 30_000
    assert redis_client.hget(keys.run(thread, run_id), "worker") == b"w-1"
    assert redis_client.zcard(keys.steps_index()) == 0  # the claim consumed the job's entry
    time.sleep(0.01)
    held, _ = script(redis_client, "renew_lease")(
        keys=[lease.key, lease.run_key, keys.lease_index()], args=[lease.token, 40_000, 1, member]
    )
    assert held == 1
    renewed = redis_client.zscore(keys.lease_index(), member)
    assert renewed is not None and renewed >= deadline + 10_000
    lease.release()
    assert redis_client.zscore(keys.lease_index(), member) is None
    assert redis_client.exists(lease.key) == 0


def test_a_lapsed_lease_is_left_to_the_reaper(client: Client, redis_client: redis.Redis) -> None:
    """A claim never runs a step whose earlier lease lapsed without a commit (RQ's abandoned-job handling or
    a duplicate job): code 2, the index entry stays for the reaper."""
    run_id = client.enqueue("suicide", {})
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 0.05)
    lapse(redis_client, thread, run_id)
    _, code = claim(redis_client, run_id, thread, 30, worker="w-2")
    assert code == 2
    assert redis_client.hget(keys.run(thread, run_id), "worker") == b"w-1"
    assert [lap.run_id for lap in lapsed_leases(redis_client, server_ms(redis_client))] == [run_id]


def test_two_reapers_racing_on_one_lapsed_lease_make_one_continuation(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = client.enqueue("suicide", {"n": 7}, tenant="acme", config={"tags": ["x"]})
    run = client.get_run(run_id)
    claim(redis_client, run_id, run.thread_id, 0.05)
    redis_client.hset(keys.run(run.thread_id, run_id), "status", "running")
    lapse(redis_client, run.thread_id, run_id)
    lapsed = lapsed_leases(redis_client, server_ms(redis_client))
    assert len(lapsed) == 1
    barrier = threading.Barrier(8)
    verdicts: list[str] = []

    def race() -> None:
        kv = redis.Redis.from_url(redis_url)
        barrier.wait()
        verdicts.append(reap(kv, lapsed[0], resume=True, max_attempts=1).verdict)
        kv.close()

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(verdicts) == ["continued"] + ["gone"] * 7
    chain = client.chain(run_id)
    assert len(chain) == 2
    old, new = chain
    assert old.id == run_id
    assert (old.status, old.continued_by_run_id, old.error and old.error.type) == (
        RunStatus.FAILED,
        new.id,
        "WorkerLost",
    )
    assert old.error is not None and old.error.message.startswith(
        "worker w-1 stopped renewing its lease on step 0"
    )
    assert (new.status, new.continued_from_run_id, new.attempt, new.thread_id) == (
        RunStatus.QUEUED,
        run_id,
        2,
        run.thread_id,
    )
    assert (new.workflow, new.input, new.config, new.tenant) == ("suicide", {"n": 7}, run.config, "acme")
    assert new.run_timeout_s == run.run_timeout_s == 86_400  # fixed at the first run's creation
    assert redis_client.get(keys.thread_active(run.thread_id)) == new.id.encode()
    assert [r.id for r in client.thread_runs(run.thread_id)] == [run_id, new.id]
    # The script staged what it cannot do itself (as if its reaper died right after it): nothing queued yet.
    staged = [m.decode() for m in redis_client.zrange(keys.recovery(), 0, -1)]
    assert sorted(staged) == [
        f"abandoned:{run.thread_id}:{run_id}:0",
        f"enqueue:{run.thread_id}:{new.id}",
    ]
    assert f"graphq-{new.id}-0".encode() not in redis_client.lrange("rq:queue:graphq:suicide", 0, -1)
    # Two Reaper passes at once do the staged work (the continuation's step job) without doubling anything.
    reapers = [Reaper(redis.Redis.from_url(redis_url), Settings(redis_url=redis_url)) for _ in range(2)]
    passes = [threading.Thread(target=r.sweep) for r in reapers]
    for t in passes:
        t.start()
    for t in passes:
        t.join()
    assert redis_client.zcard(keys.recovery()) == 0
    queued = redis_client.lrange("rq:queue:graphq:suicide", 0, -1)
    assert set(queued) == {f"graphq-{new.id}-0".encode()}
    assert redis_client.exists(f"rq:job:graphq-{run_id}-0") == 0  # the abandoned job is gone
    assert redis_client.zcard(keys.lease_index()) == 0


def test_the_chain_limit_fails_the_run_naming_the_setting(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("suicide", {})
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 0.05)
    lapse(redis_client, thread, run_id)
    [lapsed] = lapsed_leases(redis_client, server_ms(redis_client))
    assert reap(redis_client, lapsed, resume=True, max_attempts=0).verdict == "limit"
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED and run.error is not None
    assert run.error.type == "WorkerLost"
    assert run.error.message.endswith(
        "; not continued: the chain reached GRAPHQ_MAX_RESUME_ATTEMPTS=0 (attempt 1)"
    )
    assert run.continued_by_run_id is None
    assert [r.id for r in client.chain(run_id)] == [run_id]


def test_awaiting_input_and_ended_runs_are_left_alone(client: Client, redis_client: redis.Redis) -> None:
    ids = [client.enqueue("suicide", {}) for _ in range(2)]
    for run_id, status in zip(ids, ("awaiting_input", "completed"), strict=True):
        thread = client.get_run(run_id).thread_id
        claim(redis_client, run_id, thread, 0.05)
        redis_client.hset(keys.run(thread, run_id), "status", status)
        lapse(redis_client, thread, run_id)
    outcomes = {
        lap.run_id: reap(redis_client, lap, resume=True, max_attempts=1)
        for lap in lapsed_leases(redis_client, server_ms(redis_client))
    }
    assert {r: (o.verdict, o.detail) for r, o in outcomes.items()} == {
        ids[0]: ("left", "awaiting_input"),
        ids[1]: ("left", "completed"),
    }
    assert redis_client.zcard(keys.lease_index()) == 0
    assert [len(client.chain(r)) for r in ids] == [1, 1]


def test_a_held_lease_is_not_reaped(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("suicide", {})
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 30)
    member = keys.lease_member(thread, run_id)
    redis_client.zadd(keys.lease_index(), {member: 1})  # an index entry older than its key: a renewal races
    [lapsed] = lapsed_leases(redis_client, server_ms(redis_client))
    assert reap(redis_client, lapsed, resume=True, max_attempts=1).verdict == "held"
    assert client.get_run(run_id).status == RunStatus.QUEUED


def test_worker_registry_lists_live_workers(redis_client: redis.Redis, heartbeats: Beats) -> None:
    beat = heartbeats("host.1.abc", ["graphq:a", "graphq:b"], 1.0, 10)
    [live] = live_workers(redis_client, server_ms(redis_client))
    assert (live.id, live.queues, live.run_id, live.step) == (
        "host.1.abc",
        ["graphq:a", "graphq:b"],
        None,
        None,
    )
    time.sleep(1.05)  # no second beat (interval 10 s): the record expires with its TTL
    assert live_workers(redis_client, server_ms(redis_client)) == []
    beat.stop()
    assert redis_client.zcard(keys.workers()) == 0


def test_defaults_bound_recovery_below_30_s() -> None:
    s = Settings()
    assert (s.lease_ttl_s, s.heartbeat_interval_s, s.reaper_interval_s) == (20.0, 5.0, 5.0)
    assert s.lease_ttl_s + s.reaper_interval_s <= 30
    assert (s.resume_interrupted_runs, s.max_resume_attempts) == (True, 1)


def test_a_failed_chain_hands_its_thread_to_the_next_run(client: Client, redis_client: redis.Redis) -> None:
    """At the chain's limit the run stays failed and the run waiting behind it on the thread starts (I3)."""
    run_id = client.enqueue("suicide", {}, thread_id="t-1")
    waiting = client.enqueue("suicide", {}, thread_id="t-1")
    claim(redis_client, run_id, "t-1", 0.05)
    lapse(redis_client, "t-1", run_id)
    reaper = Reaper(redis_client, Settings(max_resume_attempts=0))
    assert [(r, o.verdict) for r, o in reaper.sweep()] == [(run_id, "limit")]
    assert redis_client.get(keys.thread_active("t-1")) == waiting.encode()
    assert redis_client.zcard(keys.recovery()) == 0
    queued = redis_client.lrange("rq:queue:graphq:suicide", 0, -1)
    assert queued == [f"graphq-{waiting}-0".encode()]


def test_a_requested_cancel_wins_over_a_continuation(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("suicide", {})
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 0.05)
    redis_client.hset(keys.run(thread, run_id), mapping={"status": "running", "cancel": "cooperative"})
    lapse(redis_client, thread, run_id)
    [(_, outcome)] = Reaper(redis_client, Settings()).sweep()
    run = client.get_run(run_id)
    assert (outcome.verdict, run.status, run.continued_by_run_id) == ("canceled", RunStatus.CANCELED, None)
    assert redis_client.get(keys.thread_active(thread)) is None


def test_cli_shows_the_chain_and_the_workers(
    client: Client, redis_client: redis.Redis, redis_url: str, heartbeats: Beats
) -> None:
    run_id = client.enqueue("suicide", {})
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 0.05, worker="host.7.abcdef")
    lapse(redis_client, thread, run_id)
    with process_state_restored():
        once = ok(invoke(MODULE, redis_url, "reaper", "--once"))
        new = client.get_run(run_id).continued_by_run_id
        assert new is not None
        assert once.stdout == f"{run_id} continued {new}\n"
        chain = json.loads(ok(invoke(MODULE, redis_url, "runs", "list", "--chain", new, "-o", "json")).stdout)
        assert [(r["id"], r["attempt"], r["status"], r["continued_from_run_id"]) for r in chain] == [
            (run_id, 1, "failed", None),
            (new, 2, "queued", run_id),
        ]
        shown = ok(invoke(MODULE, redis_url, "runs", "show", run_id)).stdout
        assert f"continued by │ {new}" in shown
        assert "worker       │ host.7.abcdef" in shown
        assert f"continued from │ {run_id}" in ok(invoke(MODULE, redis_url, "runs", "show", new)).stdout
        table = ok(invoke(MODULE, redis_url, "runs", "list", "--chain", run_id)).stdout
        assert table.index(run_id) < table.index(new)
        cut = ok(invoke(MODULE, redis_url, "runs", "list", "--chain", run_id, "--limit", "1", "-o", "json"))
        assert [r["id"] for r in json.loads(cut.stdout)] == [new]
        assert cut.stderr == "the chain has 2 runs; showing the last 1 (--limit 2: all)\n"
        shown_json = json.loads(ok(invoke(MODULE, redis_url, "runs", "show", new, "-o", "json")).stdout)
        assert (shown_json["step"], shown_json["thread_step"]) == (0, None)  # nothing committed yet
        heartbeats("host.9.fedcba", ["graphq:suicide"])
        listed = json.loads(ok(invoke(MODULE, redis_url, "workers", "-o", "json")).stdout)
        assert [
            (w["id"], w["pid"] > 0, w["queues"], w["run_id"], w["step"], w["thread_step"]) for w in listed
        ] == [("host.9.fedcba", True, ["graphq:suicide"], None, None, None)]
        assert "host.9.fedcba" in ok(invoke(MODULE, redis_url, "workers")).stdout
        again = ok(invoke(MODULE, redis_url, "reaper", "--once")).stdout
        assert again == ""


def test_a_continuation_without_a_checkpoint_starts_from_the_input(
    client: Client, redis_client: redis.Redis, redis_url: str, graphq_env: dict[str, str]
) -> None:
    """The worker died before the run's input checkpoint: the continuation applies the same input."""
    run_id = client.enqueue("crashfan", {"names": ["fast"]}, config={"tags": ["t"]})
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 0.05)
    lapse(redis_client, thread, run_id)
    [(_, outcome)] = Reaper(redis_client, Settings(redis_url=redis_url)).sweep()
    new = client.get_run(outcome.detail)
    assert (outcome.verdict, new.head, new.input, new.config) == (
        "continued",
        None,
        {"names": ["fast"]},
        {"tags": ["t"]},
    )
    with process_state_restored():
        run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    [final] = client.wait([run_id], timeout_s=10)
    assert (final.id, final.status) == (new.id, RunStatus.COMPLETED)
    assert final.result == {"names": ["fast"], "prepared": True, "done": ["fast"], "joined": 1}
    assert [c.step for c in client.get_history(thread)] == [3, 2, 1, 0, -1]
    assert [r.id for r in client.chain(new.id)] == [r.id for r in client.chain(run_id)] == [run_id, new.id]
    with process_state_restored():  # a watch of the interrupted run follows the chain to its last run
        watched = ok(invoke(MODULE, redis_url, "runs", "watch", run_id, "--mode", "status", "-o", "json"))
    statuses = [json.loads(line)["data"]["status"] for line in watched.stdout.splitlines()]
    assert statuses == ["failed", "running", "completed"]
    assert watched.stderr.startswith(f"run {run_id} failed (WorkerLost: ")
    assert watched.stderr.endswith(f"; continued by run {new.id}, following it\n")


def test_one_pass_continues_more_runs_than_a_batch(client: Client, redis_client: redis.Redis) -> None:
    ids = client.enqueue_many([RunRequest("suicide", {}) for _ in range(150)])
    for run_id in ids:
        claim(redis_client, run_id, run_id, 0.05)
    lapse(redis_client, ids[-1], ids[-1])
    time.sleep(0.05)
    done = Reaper(redis_client, Settings()).sweep()
    assert sorted(r for r, o in done if o.verdict == "continued") == sorted(ids)
    assert redis_client.zcard(keys.lease_index()) == 0
    assert redis_client.zcard(keys.recovery()) == 0
    assert redis_client.llen("rq:queue:graphq:suicide") == 150  # the continuations' jobs, not the abandoned


def test_a_step_job_taken_and_never_claimed_is_enqueued_again(
    client: Client, redis_client: redis.Redis, redis_url: str, graphq_env: dict[str, str]
) -> None:
    """A worker listening on several queues takes a job with BLPOP (no RQ registry holds it then) and dies
    before the claim: the index of unclaimed step jobs lets the reaper enqueue it again; a job still waiting
    in its queue is left alone."""
    lost = client.enqueue("crashfan", {"names": ["fast"]})
    waiting = client.enqueue("suicide", {})
    lost_job, waiting_job = f"graphq-{lost}-0".encode(), f"graphq-{waiting}-0".encode()
    assert redis_client.lpop("rq:queue:graphq:crashfan") == lost_job  # taken; then the worker died
    members = {keys.step_member(r, r, 0): 0 for r in (lost, waiting)}
    assert {m.decode() for m in redis_client.zrange(keys.steps_index(), 0, -1)} == set(members)
    redis_client.zadd(keys.steps_index(), members)  # enqueued long ago
    reaper = Reaper(redis_client, Settings(redis_url=redis_url))
    reaper.sweep()  # first found missing: it may have been taken a moment ago
    assert redis_client.llen("rq:queue:graphq:crashfan") == 0
    reaper.sweep()  # still missing, still unclaimed: lost
    assert redis_client.lrange("rq:queue:graphq:crashfan", 0, -1) == [lost_job]
    assert redis_client.lrange("rq:queue:graphq:suicide", 0, -1) == [waiting_job]
    scores = dict(redis_client.zrange(keys.steps_index(), 0, -1, withscores=True))
    assert set(scores) == {m.encode() for m in members} and min(scores.values()) > 0  # looked at again later
    with process_state_restored():
        only = Registry({"crashfan": REGISTRY.get("crashfan")})  # not suicide: it kills its worker
        run_worker(Settings(redis_url=redis_url), burst=True, registry=only, kv=redis_client)
    assert client.get_run(lost).status == RunStatus.COMPLETED
    assert redis_client.zscore(keys.steps_index(), keys.step_member(lost, lost, 0)) is None


def test_a_step_job_left_in_rqs_intermediate_list_is_enqueued_again(
    client: Client, redis_client: redis.Redis, redis_url: str, graphq_env: dict[str, str]
) -> None:
    """A worker listening on one queue takes a job with BLMOVE into the queue's intermediate list and dies
    before the claim: the job is in no queue a worker pops (RQ's own clean-up fails it only after a minute,
    at a maintenance pass, every 10 minutes). The reaper took it for a waiting job and left the run stuck;
    now two passes enqueue it again, out of the intermediate list in the same transaction."""
    run_id = client.enqueue("crashfan", {"names": ["fast"]})
    job_id = f"graphq-{run_id}-0".encode()
    queue, intermediate = "rq:queue:graphq:crashfan", "rq:queue:graphq:crashfan:intermediate"
    assert redis_client.lmove(queue, intermediate, "LEFT", "RIGHT") == job_id  # taken; the worker died
    member = keys.step_member(run_id, run_id, 0)
    redis_client.zadd(keys.steps_index(), {member: 0})  # enqueued long ago
    reaper = Reaper(redis_client, Settings(redis_url=redis_url))
    reaper.sweep()  # first found taken: it may be claimed a moment later
    assert (redis_client.llen(queue), redis_client.lrange(intermediate, 0, -1)) == (0, [job_id])
    reaper.sweep()
    assert (redis_client.lrange(queue, 0, -1), redis_client.llen(intermediate)) == ([job_id], 0)
    with process_state_restored():
        only = Registry({"crashfan": REGISTRY.get("crashfan")})
        run_worker(Settings(redis_url=redis_url), burst=True, registry=only, kv=redis_client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    assert redis_client.zscore(keys.steps_index(), member) is None


def test_a_step_job_claimed_just_after_a_pass_found_it_missing_is_not_enqueued_again(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """A pass that looks while a live worker holds a job it has just taken (between RQ's pop and the claim,
    a few milliseconds) finds it in no queue; the claim then takes its entry out of the index, and the next
    pass leaves it alone (each such pass enqueued a duplicate, and warned of a lost job, before)."""
    run_id = client.enqueue("crashfan", {"names": ["fast"]})
    member = keys.step_member(run_id, run_id, 0)
    redis_client.zadd(keys.steps_index(), {member: 0})  # enqueued long ago
    assert redis_client.lpop("rq:queue:graphq:crashfan") == f"graphq-{run_id}-0".encode()  # just taken
    reaper = Reaper(redis_client, Settings(redis_url=redis_url))
    reaper.sweep()
    redis_client.zrem(keys.steps_index(), member)  # ... and claimed (what claim_step.lua does)
    reaper.sweep()
    assert redis_client.llen("rq:queue:graphq:crashfan") == 0
    assert redis_client.zscore(keys.steps_index(), member) is None


def test_a_thread_whose_run_ended_without_a_hand_over_is_handed_over(
    client: Client, redis_client: redis.Redis
) -> None:
    """The worker completed the run and died before handing its thread to the next run (I3)."""
    ended = client.enqueue("suicide", {}, thread_id="t-1")
    behind = client.enqueue("suicide", {}, thread_id="t-1")
    going = client.enqueue("suicide", {}, thread_id="t-2")
    assert {t.decode() for t in redis_client.zrange(keys.busy_threads(), 0, -1)} == {"t-1", "t-2"}
    redis_client.hset(keys.run("t-1", ended), "status", "completed")  # ... and then the worker died
    redis_client.hset(keys.run("t-2", going), "status", "running")
    redis_client.zadd(keys.busy_threads(), {"t-1": 0, "t-2": 0})  # busy for long
    Reaper(redis_client, Settings()).sweep()
    assert redis_client.get(keys.thread_active("t-1")) == behind.encode()
    assert redis_client.get(keys.thread_active("t-2")) == going.encode()
    assert f"graphq-{behind}-0".encode() in redis_client.lrange("rq:queue:graphq:suicide", 0, -1)
    scores = {t.decode(): s for t, s in redis_client.zrange(keys.busy_threads(), 0, -1, withscores=True)}
    assert set(scores) == {"t-1", "t-2"} and min(scores.values()) > 0  # looked at again one TTL later
    redis_client.hset(keys.run("t-1", behind), "status", "completed")
    redis_client.zadd(keys.busy_threads(), {"t-1": 0})
    Reaper(redis_client, Settings()).sweep()
    assert redis_client.get(keys.thread_active("t-1")) is None
    assert redis_client.zscore(keys.busy_threads(), "t-1") is None


def test_reap_outcomes_read_well_in_logs() -> None:
    """The log line of a chain at its limit names the setting (it printed 'limit ' with nothing after)."""
    assert ReapOutcome("limit").describe() == "not continued: the chain reached GRAPHQ_MAX_RESUME_ATTEMPTS"
    assert ReapOutcome("continued", "abc").describe() == "continued by run abc"
    assert ReapOutcome("left", "completed").describe() == "left alone: the run is completed"
    assert ReapOutcome("gone").describe() == "gone"


def test_a_continuation_keeps_the_schedule_and_fire_time_of_the_run_it_continues(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """A scheduled run whose worker was lost: the reaper's continuation carries its schedule and fire time,
    so ``runs list --schedule`` lists both runs, and ``schedules show`` gives the continuation as the latest
    run (it named the failed run, and the list missed the running continuation)."""
    from datetime import UTC, datetime

    from graphq.scheduler.api import Schedules
    from graphq.scheduler.loop import Scheduler

    added, fired = (datetime(2026, 3, 7, 0, 0, s, tzinfo=UTC).timestamp() for s in (30, 59))
    Schedules(client, lambda: added).add("nightly", workflow="suicide", cron="* * * * *", input={})
    Scheduler(client, Settings(), clock=lambda: fired + 1).tick()
    run_id = "nightly-20260307T000100Z"
    thread = client.get_run(run_id).thread_id
    claim(redis_client, run_id, thread, 0.05)
    lapse(redis_client, thread, run_id)
    [(_, outcome)] = Reaper(redis_client, Settings()).sweep()
    new = client.get_run(run_id).continued_by_run_id
    assert outcome.verdict == "continued" and new is not None
    continuation = client.get_run(new)
    assert (continuation.schedule, continuation.fire_time) == ("nightly", "2026-03-07T00:01:00Z")
    with process_state_restored():
        listed = ok(invoke(MODULE, redis_url, "runs", "list", "--schedule", "nightly", "-o", "json"))
        assert sorted(r["id"] for r in json.loads(listed.stdout)) == sorted([run_id, new])
        shown = json.loads(ok(invoke(MODULE, redis_url, "schedules", "show", "nightly", "-o", "json")).stdout)
        assert (shown["state"]["last_run"], shown["latest_run"]) == (run_id, new)
        assert (
            f"latest run       │ {new}"
            in ok(invoke(MODULE, redis_url, "schedules", "show", "nightly")).stdout
        )


def test_graphq_workers_numbers_a_continuations_step_as_the_thread_does(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A continuation's first step is its run's step 0 and the thread's step 1 (the step its predecessor was
    running): the table shows the thread's, as `graphq runs show`; the JSON has both."""
    held = Lease(redis_client, "t-cont", "r-cont", 30, 10)
    held.step, held.step_number = 0, 1
    monkeypatch.setattr(lease, "held", lambda: [held])
    beat = Heartbeat(redis_client, "host.5.abcdef", ["graphq:crashline"], 30, 10)
    beat.beat()
    listed = json.loads(ok(invoke(MODULE, redis_url, "workers", "-o", "json")).stdout)
    assert [(w["id"], w["run_id"], w["thread_id"], w["step"], w["thread_step"]) for w in listed] == [
        ("host.5.abcdef", "r-cont", "t-cont", 0, 1)
    ]
    table = ok(invoke(MODULE, redis_url, "workers")).stdout.splitlines()
    row = next(line for line in table if "host.5.abcdef" in line)
    assert [c.strip() for c in row.split("│")][5] == "1"
    assert [c.strip() for c in table[0].split("┃")][5] == "step"
    beat.stop()
