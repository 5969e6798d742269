"""Thread retention (K3): with GRAPHQ_THREAD_TTL_S every key of a thread expires together, a use of the
thread refreshes them all, the sweep clears the thread's entries in shared indexes; unset, nothing expires.
Event streams are capped; ``graphq threads delete`` removes a thread now, refused while a run is active.

The tests list a thread's keys with SCAN (the code never does) to check that none is missed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq.registry import clean_registries

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.events import EVENTS_MAXLEN
from graphcore.backend.lua import script, source
from graphcore.backend.reaper import lapsed_leases, reap, server_ms
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, now_iso
from graphcore.backend.ttl import ThreadActiveError, sweep
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.settings import Settings, get_settings, load_settings
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.queue import RQStepQueue, step_job_id
from graphq.worker.step.lease import Lease
from tests.cli_helpers import invoke
from tests.workers import Start, ended, wait_for, work, worker_env

FLOWS = "tests.workflows.retention,tests.workflows.hitl"
REGISTRY = Registry.load(FLOWS.split(","))
FIVE = {"topic": "t"}
INDEXES = (
    keys.runs_index(),
    keys.run_threads(),
    keys.lease_index(),
    keys.busy_threads(),
    keys.steps_index(),
    keys.recovery(),
    keys.retention(),
    keys.request_deadlines(),
    *(keys.admission(p) for p in ("waiting", "lanes", "entries", "deadlines", "holders")),
)


@pytest.fixture
def ttl(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> Iterator[None]:
    monkeypatch.setenv("GRAPHQ_THREAD_TTL_S", "2")
    monkeypatch.setenv("GRAPHQ_LEASE_TTL_S", "1")  # a thread TTL is at least the lease TTL
    monkeypatch.setenv("GRAPHQ_HEARTBEAT_INTERVAL_S", "0.5")
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def client(redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Client:
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    return Client(redis_client, REGISTRY, RQStepQueue(redis_client, load_settings()))


def thread_keys(kv: redis.Redis, thread: str) -> list[str]:
    """Every key of ``thread`` (SCAN: tests only)."""
    return sorted(k.decode() for k in kv.scan_iter(match=keys.thread_pattern(thread), count=1000))


def ttls(kv: redis.Redis, thread: str) -> dict[str, int]:
    return {k: int(kv.pttl(k)) for k in thread_keys(kv, thread)}


def mentions(kv: redis.Redis, *ids: str) -> list[str]:
    """The shared graphq indexes that still name one of ``ids`` (a thread or run id)."""
    found = []
    for key in INDEXES:
        kind = kv.type(key).decode()
        if kind == "zset":
            items = [m.decode() for m in kv.zrange(key, 0, -1)]
        elif kind == "hash":
            items = [f"{f.decode()}={v!r}" for f, v in kv.hgetall(key).items()]
        else:
            items = []
        found += [f"{key}: {i}" for i in items if any(x in i for x in ids)]
    return found


def expire_and_sweep(kv: redis.Redis, thread: str, queue: RQStepQueue | None = None) -> int:
    """Wait until the thread's keys are past their expiry, then sweep once (with ``queue``: giving admission
    slots back, as the housekeeping loop does); the entries removed."""
    deadline = kv.zscore(keys.retention(), thread)
    assert deadline is not None
    wait_for(lambda: server_ms(kv) > deadline + 5, 20, "the thread's expiry")
    wait_for(lambda: not thread_keys(kv, thread), 20, "Redis to expire the thread's keys")
    return sweep(kv, get_settings(), server_ms(kv), 1000, queue)


def test_every_key_of_a_thread_expires_within_the_ttl(ttl: None, client: Client) -> None:
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt1")
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    assert client.get_run(run_id).thread_ttl_s == 2.0
    found = ttls(kv, "tt1")
    kinds = sorted({k.split(":")[2] for k in found})
    # "writes": each committed step's task writes, kept with its checkpoint (LangGraph's tasks[i].result)
    assert kinds == ["ch", "cp", "events", "hist", "keys", "log", "run", "runs", "writes"], found
    assert all(0 < left <= 2000 for left in found.values()), found
    registered = {k.decode() for k in kv.smembers(keys.thread_keys("tt1"))}
    assert registered >= set(found) - {keys.thread_keys("tt1")}
    members = {m.decode() for m in kv.zrange(keys.retention(), 0, -1)}
    assert members == {"tt1", f"tt1:{run_id}"}

    removed = expire_and_sweep(kv, "tt1")
    assert removed == 2
    assert thread_keys(kv, "tt1") == []
    assert mentions(kv, "tt1", run_id) == []
    assert [k.decode() for k in kv.keys("graphq:*") if b"tt1" in k or run_id.encode() in k] == []
    assert sweep(kv, get_settings(), server_ms(kv), 1000) == 0


def test_using_the_thread_again_refreshes_every_key(ttl: None, client: Client) -> None:
    kv = client.kv
    first = client.enqueue("five-steps", FIVE, thread_id="tt2")
    work(client)
    time.sleep(1.0)
    before = ttls(kv, "tt2")
    assert all(0 < left <= 1100 for left in before.values()), before
    second = client.enqueue("five-steps", FIVE, thread_id="tt2")  # a use: every key moves to 2 s from now
    after = ttls(kv, "tt2")
    assert set(after) >= set(before)
    assert all(1500 < left <= 2000 for left in after.values()), after  # not refreshed: <= 1100
    work(client)
    assert client.get_run(second).status == RunStatus.COMPLETED
    members = {m.decode() for m in kv.zrange(keys.retention(), 0, -1)}
    assert members == {"tt2", f"tt2:{first}", f"tt2:{second}"}
    assert all(0 < left <= 2000 for left in ttls(kv, "tt2").values())
    assert expire_and_sweep(kv, "tt2") == 3
    assert mentions(kv, "tt2", first, second) == []


def test_a_run_that_awaits_input_and_its_answer(ttl: None, client: Client) -> None:
    kv = client.kv
    run_id = client.enqueue("asking", {"topic": "x"}, thread_id="tt3")
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    found = ttls(kv, "tt3")
    assert keys.requests("tt3", run_id) in found
    assert all(0 < left <= 2000 for left in found.values()), found
    time.sleep(1.0)
    client.answer(run_id, "yes")  # a use
    found = ttls(kv, "tt3")
    assert all(1500 < left <= 2000 for left in found.values()), found  # not refreshed: <= 1000
    assert any(":answers:" in k for k in found)


def test_a_thread_expires_while_its_run_awaits_an_answer(ttl: None, client: Client) -> None:
    kv = client.kv
    config = {"request_timeout_s": 600}
    run_id = client.enqueue("asking", {"topic": "x"}, thread_id="tt16", config=config)
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    assert kv.zscore(keys.request_deadlines(), f"tt16:{run_id}") is not None
    assert expire_and_sweep(kv, "tt16", RQStepQueue(kv, load_settings())) == 2
    assert mentions(kv, "tt16", run_id) == []


def test_unset_no_key_expires_and_nothing_is_added(client: Client) -> None:
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt4")
    work(client)
    assert client.get_run(run_id).thread_ttl_s is None
    found = ttls(kv, "tt4")
    assert found and all(left == -1 for left in found.values()), found
    assert keys.thread_keys("tt4") not in found
    assert not kv.exists(keys.retention())


def test_a_workflow_ttl_shortens_the_setting(ttl: None, client: Client) -> None:
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt5", config={"thread_ttl_s": 1})
    assert client.get_run(run_id).thread_ttl_s == 1.0
    assert all(0 < left <= 1000 for left in ttls(client.kv, "tt5").values())
    longer = client.enqueue("five-steps", FIVE, thread_id="tt6", config={"thread_ttl_s": 60})
    assert client.get_run(longer).thread_ttl_s == 2.0


def test_a_run_without_a_ttl_keeps_a_thread_that_had_one(client: Client) -> None:  # lease TTL 20 s
    kv = client.kv
    client.enqueue("five-steps", FIVE, thread_id="tt14", config={"thread_ttl_s": 60})
    work(client)
    assert all(0 < left <= 60_000 for left in ttls(kv, "tt14").values())
    kept = client.enqueue("five-steps", FIVE, thread_id="tt14")
    work(client)
    assert client.get_run(kept).status == RunStatus.COMPLETED
    found = ttls(kv, "tt14")
    assert found and all(left == -1 for left in found.values()), found
    named = {k.decode() for k in kv.smembers(keys.thread_keys("tt14"))}  # kept, naming every key
    assert named >= set(found) - {keys.thread_keys("tt14")}
    assert kv.zrange(keys.retention(), 0, -1) == []


def test_a_run_with_a_ttl_after_one_without_expires_every_key(client: Client) -> None:  # lease TTL 20 s
    """TTL, no TTL, TTL on one thread: the last run's use expires every key of the thread, the earlier
    runs' records and event streams too (they used to be left without an expiry for good: the run without
    a TTL deleted the key set that named them)."""
    kv = client.kv
    first = client.enqueue("five-steps", FIVE, thread_id="tt18", config={"thread_ttl_s": 60})
    work(client)
    kept = client.enqueue("five-steps", FIVE, thread_id="tt18")
    work(client)
    last = client.enqueue("five-steps", FIVE, thread_id="tt18", config={"thread_ttl_s": 60})
    work(client)
    assert client.get_run(last).status == RunStatus.COMPLETED
    found = ttls(kv, "tt18")
    for run_id in (first, kept, last):
        assert keys.run("tt18", run_id) in found and keys.run_events("tt18", run_id) in found
    assert all(0 < left <= 60_000 for left in found.values()), {k: v for k, v in found.items() if v <= 0}
    members = {m.decode() for m in kv.zrange(keys.retention(), 0, -1)}
    assert members == {"tt18", *(f"tt18:{r}" for r in (first, kept, last))}


def test_the_setting_is_range_checked(monkeypatch: pytest.MonkeyPatch, client: Client) -> None:
    monkeypatch.setenv("GRAPHQ_THREAD_TTL_S", "0")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == "GRAPHQ_THREAD_TTL_S: must be 1 ≤ value ≤ 315360000 (got '0')"
    monkeypatch.setenv("GRAPHQ_THREAD_TTL_S", "10")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == (
        "GRAPHQ_THREAD_TTL_S=10.0 must be at least GRAPHQ_LEASE_TTL_S=20.0 (a thread's keys must outlive the "
        "lease of its step)"
    )
    monkeypatch.delenv("GRAPHQ_THREAD_TTL_S")
    get_settings.cache_clear()
    with pytest.raises(ConfigError) as err:
        client.enqueue("five-steps", FIVE, config={"thread_ttl_s": 5})
    assert str(err.value) == (
        "thread_ttl_s=5.0 is below GRAPHQ_LEASE_TTL_S=20.0 (a thread's keys must outlive the lease of its "
        "step)"
    )


def test_event_streams_are_capped(client: Client) -> None:
    kv = client.kv
    assert f"'MAXLEN', '~', {EVENTS_MAXLEN}," in source("_events")
    run_key, lease, stream = keys.run("tt7", "r1"), keys.lease("tt7", "r1"), keys.run_events("tt7", "r1")
    kv.hset(run_key, "status", "running")
    kv.set(lease, "tok")
    xadd = script(kv, "fenced_xadd")
    xadd.load()  # EVALSHAs queued on a pipeline: the script must be there
    pipe = kv.pipeline(transaction=False)
    for i in range(EVENTS_MAXLEN + 500):
        xadd.queue(pipe, [lease, run_key, stream], ["tok", "custom", "1", str(i)])
    pipe.execute()
    assert EVENTS_MAXLEN <= kv.xlen(stream) < EVENTS_MAXLEN + 100
    last = kv.xrevrange(stream, count=1)[0][1]
    assert last[b"data"] == str(EVENTS_MAXLEN + 499).encode()


def test_threads_delete_removes_everything(ttl: None, client: Client, redis_url: str) -> None:
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt8")
    work(client)
    result = invoke(FLOWS, redis_url, "threads", "delete", "tt8")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("deleted thread tt8: ") and result.stdout.endswith(" keys, 1 run\n")
    assert thread_keys(kv, "tt8") == []
    assert mentions(kv, "tt8", run_id) == []
    again = invoke(FLOWS, redis_url, "threads", "delete", "tt8")
    assert again.exit_code == 2
    assert again.stderr == "error: no thread 'tt8': it has no keys (never used, deleted or expired)\n"


def test_threads_delete_without_ttl(client: Client) -> None:
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt9")
    work(client)
    done = client.delete_thread("tt9")
    assert done.runs == 1 and done.keys > 0
    assert thread_keys(client.kv, "tt9") == []
    assert mentions(client.kv, "tt9", run_id) == []


def test_threads_delete_after_a_cancel_request_says_to_wait(client: Client, redis_url: str) -> None:
    """A running run whose worker holds its step: graphq runs cancel only requests the cancel; threads
    delete then says so (it said to cancel it again)."""
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt12")
    kv.hset(keys.run("tt12", run_id), "status", "running")
    kv.set(keys.lease("tt12", run_id), "tok")  # a worker holds its step
    assert client.cancel(run_id) == "cancel requested: the run stops before its next super-step"
    result = invoke(FLOWS, redis_url, "threads", "delete", "tt12")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: thread 'tt12' has an active run {run_id} (running): its cancel is requested already "
        "(it stops before its next super-step): wait for it to end\n"
    )


def test_threads_delete_is_refused_while_a_run_is_active(client: Client, redis_url: str) -> None:
    kv = client.kv
    queued = client.enqueue("five-steps", FIVE, thread_id="tt10")
    result = invoke(FLOWS, redis_url, "threads", "delete", "tt10")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: thread 'tt10' has an active run {queued} (queued): cancel it (graphq runs cancel {queued}) "
        "or wait for it to end\n"
    )
    work(client)
    asking = client.enqueue("asking", {"topic": "x"}, thread_id="tt11", config={"request_timeout_s": 600})
    work(client)
    assert client.get_run(asking).status == RunStatus.AWAITING_INPUT
    with pytest.raises(ThreadActiveError) as err:
        client.delete_thread("tt11")
    assert str(err.value) == (
        f"thread 'tt11' has an active run {asking} (awaiting_input): answer or cancel it, or pass --force"
    )
    assert thread_keys(kv, "tt11")
    assert kv.zscore(keys.request_deadlines(), f"tt11:{asking}") is not None
    forced = invoke(FLOWS, redis_url, "threads", "delete", "tt11", "--force")
    assert forced.exit_code == 0, forced.output
    assert thread_keys(kv, "tt11") == []
    assert mentions(kv, "tt11", asking) == []


def test_a_worker_subprocess_keeps_every_key_within_the_ttl(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, start: Start, client: Client
) -> None:
    start(GRAPHQ_THREAD_TTL_S="2", GRAPHQ_LEASE_TTL_S="1", GRAPHQ_HEARTBEAT_INTERVAL_S="0.5")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPHQ_THREAD_TTL_S", "2")
        mp.setenv("GRAPHQ_LEASE_TTL_S", "1")
        mp.setenv("GRAPHQ_HEARTBEAT_INTERVAL_S", "0.5")
        get_settings.cache_clear()
        run_id = client.enqueue("five-steps", FIVE, thread_id="tt12")
    assert ended(client, run_id).status == RunStatus.COMPLETED
    # the thread is handed over just after the run's end: its active-run key goes then
    wait_for(lambda: not redis_client.exists(keys.thread_active("tt12")), what="the hand-over")
    found = ttls(redis_client, "tt12")
    assert found and all(0 < left <= 2000 for left in found.values()), found
    assert expire_and_sweep(redis_client, "tt12") == 2
    assert mentions(redis_client, "tt12", run_id) == []


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, FLOWS, tmp_path)


def rq_bounded(kv: redis.Redis, registries: list[str], count: int, ttl_s: float) -> None:
    """``registries`` hold ``count`` jobs, each expiring within ``ttl_s``, as do every job hash and result."""
    now = time.time()
    scores = [score for key in registries for _, score in kv.zrange(key, 0, -1, withscores=True)]
    assert len(scores) == count and all(now < score <= now + ttl_s for score in scores), scores
    held = [k for k in kv.keys("rq:job:*") + kv.keys("rq:results:*") if kv.type(k) in (b"hash", b"stream")]
    assert held and all(0 < kv.pttl(k) <= ttl_s * 1000 for k in held)


def test_rq_job_results_and_failures_are_bounded(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    """Finished and failed step jobs (one that fails in RQ itself: its run record cannot be read) expire
    after GRAPHQ_RESULT_TTL_S, and RQ's registry cleaning (every worker's maintenance) empties the finished
    and failed registries."""
    monkeypatch.setenv("GRAPHQ_RESULT_TTL_S", "3")
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    queue = RQStepQueue(redis_client, load_settings())
    client = Client(redis_client, REGISTRY, queue)
    done = client.enqueue("five-steps", FIVE)
    work(client)
    assert client.get_run(done).status == RunStatus.COMPLETED
    # its first step on the workflow's queue, the next four on its version's
    rq_queues = [queue.queue("five-steps"), queue.of(client.get_run(done))]
    rq_bounded(redis_client, [q.finished_job_registry.key for q in rq_queues], 5, 3)
    broken = client.enqueue("five-steps", FIVE, thread_id="tt13")
    redis_client.hset(keys.run("tt13", broken), "step", "not a number")
    work(client)
    rq_bounded(redis_client, [rq_queues[0].failed_job_registry.key], 1, 3)
    gone = ("rq:job:*", "rq:results:*")
    wait_for(lambda: not any(redis_client.keys(pattern) for pattern in gone), 20, "the jobs to expire")
    for rq_queue in rq_queues:
        clean_registries(rq_queue)
        assert redis_client.zcard(rq_queue.failed_job_registry.key) == 0
        assert redis_client.zcard(rq_queue.finished_job_registry.key) == 0


def test_rq_keeps_step_jobs_no_longer_than_the_thread_ttl(
    ttl: None, monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    """K3, from the new-user trial: with GRAPHQ_THREAD_TTL_S=2 RQ kept the thread's step jobs (hashes,
    results, finished-registry entries) GRAPHQ_RESULT_TTL_S (3600 s) after the thread's own keys were gone.
    A step job's result and failure TTL is now the thread TTL when that is shorter."""
    monkeypatch.setenv("GRAPHQ_RESULT_TTL_S", "3600")
    get_settings.cache_clear()
    queue = RQStepQueue(redis_client, load_settings())
    client = Client(redis_client, REGISTRY, queue)
    done = client.enqueue("five-steps", FIVE, thread_id="tt14")
    work(client)
    assert client.get_run(done).status == RunStatus.COMPLETED
    queues = (queue.queue("five-steps"), queue.of(client.get_run(done)))
    registries = [q.finished_job_registry.key for q in queues]
    rq_bounded(redis_client, registries, 5, 2)


def test_a_continuation_joins_its_thread_retention(ttl: None, client: Client, redis_url: str) -> None:
    """The reaper's continuation of a run whose worker died (reap_run.lua) refreshes its thread's expiry,
    joins the key set and the retention index; after the TTL and a sweep nothing of either run is left."""
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt15")
    lease = Lease(kv, "tt15", run_id, 0.05, 0.025)
    assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), "w-1")[0] == 3
    kv.hset(keys.run("tt15", run_id), "status", "running")
    wait_for(lambda: not kv.exists(lease.key), 20, "the lease to lapse")
    lapsed = wait_for(lambda: lapsed_leases(kv, server_ms(kv)), 20, "the lapsed lease")
    outcome = reap(kv, lapsed[0], resume=True, max_attempts=1)
    assert outcome.verdict == "continued"
    new = outcome.detail
    assert 0 < kv.pttl(keys.run("tt15", new)) <= 2000
    assert 0 < kv.pttl(keys.thread_active("tt15")) <= 2000
    assert kv.sismember(keys.thread_keys("tt15"), keys.run("tt15", new))
    members = {m.decode() for m in kv.zrange(keys.retention(), 0, -1)}
    assert members == {"tt15", f"tt15:{run_id}", f"tt15:{new}"}
    Reaper(kv, Settings(redis_url=redis_url)).sweep()  # the staged work: the continuation's step job
    assert expire_and_sweep(kv, "tt15", RQStepQueue(kv, load_settings())) == 3
    work(client)  # the continuation's job finds no run: its unclaimed-job entry goes with its claim
    assert mentions(kv, "tt15", run_id, new) == []


def test_a_continuation_refreshes_its_thread_and_a_job_left_behind_is_skipped(
    ttl: None, client: Client, redis_url: str
) -> None:
    """From the second new-user trial: a continuation queued late in its thread's TTL took its predecessor's
    expiry, so the thread expired under the queued continuation, whose job then failed in RQ with a
    RunNotFoundError traceback. A continuation is a use of the thread (K3): every key expires a whole TTL
    (2 s) from its creation; a step job whose run is gone is skipped, not failed."""
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id="tt16")
    time.sleep(1.2)  # most of the 2 s TTL gone
    lease = Lease(kv, "tt16", run_id, 0.05, 0.025)
    assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), "w-1")[0] == 3
    kv.hset(keys.run("tt16", run_id), "status", "running")
    wait_for(lambda: not kv.exists(lease.key), 20, "the lease to lapse")
    lapsed = wait_for(lambda: lapsed_leases(kv, server_ms(kv)), 20, "the lapsed lease")
    new = reap(kv, lapsed[0], resume=True, max_attempts=1).detail
    left = ttls(kv, "tt16")
    assert keys.run("tt16", run_id) in left and keys.run("tt16", new) in left
    assert all(1400 < ms <= 2000 for ms in left.values()), left  # the predecessor's expiry: <= 800
    Reaper(kv, Settings(redis_url=redis_url)).sweep()  # the continuation's step job
    expire_and_sweep(kv, "tt16", RQStepQueue(kv, load_settings()))
    work(client)
    job = RQStepQueue(kv, load_settings()).queue("five-steps").fetch_job(step_job_id(new, 0))
    assert job is not None and job.get_status() == "finished"
    assert job.return_value() == "skipped: no such run (its thread expired or was deleted)"


class _DiesReleasing(RQStepQueue):
    """An admission queue whose process dies as it builds the first release (a sweep killed mid-way)."""

    def timestamp(self) -> str:
        raise SystemExit("killed")


def continued(client: Client, thread: str, redis_url: str) -> tuple[str, str]:
    """A run on ``thread`` whose worker died, and the reaper's continuation of it, queued and holding an
    admission slot: ``(run id, continuation's id)``."""
    kv = client.kv
    run_id = client.enqueue("five-steps", FIVE, thread_id=thread)
    lease = Lease(kv, thread, run_id, 0.05, 0.025)
    assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), "w-1")[0] == 3
    kv.hset(keys.run(thread, run_id), "status", "running")
    wait_for(lambda: not kv.exists(lease.key), 20, "the lease to lapse")
    lapsed = wait_for(lambda: lapsed_leases(kv, server_ms(kv)), 20, "the lapsed lease")
    new = reap(kv, lapsed[0], resume=True, max_attempts=1).detail
    Reaper(kv, Settings(redis_url=redis_url)).sweep()  # the staged work: the continuation's step job
    assert kv.hexists(keys.admission("holders"), f"{thread}:{new}")
    return run_id, new


def test_a_sweep_that_dies_before_giving_admission_back_leaves_it_to_the_next(
    ttl: None, client: Client, redis_url: str
) -> None:
    """A run whose thread expired while it held a slot (a continuation queued by the reaper): the first
    sweep dies before its releases; the next one gives the slot back and removes every entry. Admission
    used to be given back after the script had removed the entries, so a sweep dying there leaked it."""
    kv = client.kv
    run_id, new = continued(client, "tt17", redis_url)
    with pytest.raises(SystemExit):
        expire_and_sweep(kv, "tt17", _DiesReleasing(kv, load_settings()))
    assert kv.zcard(keys.retention()) == 3
    assert sweep(kv, get_settings(), server_ms(kv), 1000, RQStepQueue(kv, load_settings())) == 3
    work(client)
    assert mentions(kv, "tt17", run_id, new) == []


def test_a_release_that_fails_keeps_its_run_for_the_next_sweep_and_not_the_others(
    ttl: None, client: Client, redis_url: str
) -> None:
    """The admission script fails on one run's slot (a corrupt holder entry): that run's retention entry is
    kept for the next sweep, the thread's and the other run's go (the sweep is not held back); once the
    entry is sound again the next sweep frees the slot and removes it."""
    kv = client.kv
    run_id, new = continued(client, "tt19", redis_url)
    holders, member = keys.admission("holders"), f"tt19:{new}"
    held = kv.hget(holders, member)
    assert held is not None
    kv.hset(holders, member, "corrupt")
    queue = RQStepQueue(kv, load_settings())
    assert expire_and_sweep(kv, "tt19", queue) == 2
    assert [m.decode() for m in kv.zrange(keys.retention(), 0, -1)] == [member]
    kv.hset(holders, member, held)
    assert sweep(kv, get_settings(), server_ms(kv), 1000, queue) == 1
    work(client)
    assert mentions(kv, "tt19", run_id, new) == []
