"""Runs pinned to the version of their workflow they started with: two releases of one workflow
(tests/workflows/versioned_v1.py and versioned_v2.py, another catalog version each), their workers in this
process (burst) and as ``graphq worker`` subprocesses."""

from __future__ import annotations

import json
import signal

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker import metrics
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.pinned import unserved, version_queues
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue, step_job_id
from graphq.worker.step.context import WorkerContext
from tests.cli_helpers import invoke
from tests.workers import Procs, ended, graphq, wait_for, worker_env

V1 = Registry.load(["tests.workflows.versioned_v1"])
V2 = Registry.load(["tests.workflows.versioned_v2"])
LATEST = Registry.load(["tests.workflows.versioned_latest"])
REGISTRY = V1
VERSION_1, VERSION_2 = V1.version("versioned"), V2.version("versioned")


def burst(kv: redis.Redis, redis_url: str, registry: Registry) -> bool:
    """A burst worker of ``registry``'s release in this process: works what its queues hold."""
    return run_worker(Settings(redis_url=redis_url), burst=True, registry=registry, kv=kv)


def ran(client: Client, run_id: str) -> list[str]:
    """The marks of the nodes that ran in ``run_id``'s thread: ``["v1:a", "v1:ask", ...]``."""
    marks: list[str] = client.get_state(client.get_run(run_id).thread_id).channel_values.get("ran", [])
    return marks


def queued(kv: redis.Redis, version: str | None) -> list[bytes]:
    """The job ids on the queue of ``versioned``'s runs pinned to ``version`` (None: its own queue)."""
    return kv.lrange(RQStepQueue(kv).queue("versioned", version).key, 0, -1)


def job_of(client: Client, run_id: str) -> str:
    """The id of the step job ``run_id`` waits for (its step now)."""
    return step_job_id(run_id, client.get_run(run_id).step)


def paused(client: Client, kv: redis.Redis, url: str, registry: Registry = V1) -> str:
    """A run of ``versioned`` that ``registry``'s release started and that waits for an answer at ``ask``."""
    run_id = client.enqueue("versioned", {"ask": True})
    burst(kv, url, registry)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    return run_id


def test_the_first_step_records_the_version_and_the_next_go_to_its_queue(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = client.enqueue("versioned", {"ask": True})
    before = client.get_run(run_id)
    assert (before.version, before.pinned) == (None, True)  # pinned (the default policy), no version yet
    assert queued(redis_client, None) == [step_job_id(run_id, 0).encode()]  # a new run: its workflow's queue
    run_id2 = paused(client, redis_client, redis_url)
    assert client.get_run(run_id).version == VERSION_1
    client.answer(run_id2, "yes")
    assert queued(redis_client, VERSION_1) == [job_of(client, run_id2).encode()]
    assert queued(redis_client, None) == []


def test_a_worker_of_another_version_hands_the_step_back_untouched(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """A pinned run's step on a queue a release-2 worker listens on (as after a move to another version
    raced with its queued step): release 2 takes nothing — no lease, no write, no node run — and the job goes
    back to the queue of release 1, which then runs it."""
    run_id = paused(client, redis_client, redis_url)
    client.answer(run_id, "yes")
    job = job_of(client, run_id)
    assert queued(redis_client, VERSION_1) == [job.encode()]
    run = client.get_run(run_id)
    steps = RQStepQueue(redis_client)
    redis_client.lmove(steps.queue("versioned", VERSION_1).key, steps.queue("versioned", VERSION_2).key)
    redis_client.hset(f"rq:job:{job}", "origin", steps.queue("versioned", VERSION_2).name)
    registry = metrics.enable()
    try:
        assert burst(redis_client, redis_url, V2)
        labels = {"workflow": "versioned", "outcome": "handed_back"}
        handed = registry.get_sample_value("graphq_steps_total", labels)
    finally:
        metrics.disable()
    assert handed == 1
    after = client.get_run(run_id)
    assert (after.status, after.step, after.worker, after.head) == (
        RunStatus.QUEUED,
        run.step,
        run.worker,
        run.head,
    )
    assert not redis_client.exists(keys.lease(run.thread_id, run_id))
    assert queued(redis_client, VERSION_1) == [job.encode()]
    assert queued(redis_client, VERSION_2) == []
    assert redis_client.hget(f"rq:job:{job}", "status") == b"queued"
    assert redis_client.ttl(f"rq:job:{job}") == -1
    assert burst(redis_client, redis_url, V1)
    assert ended(client, run_id).status == RunStatus.COMPLETED
    assert ran(client, run_id) == ["v1:a", "v1:ask", "v1:c"]


def test_a_run_answered_with_no_worker_of_its_version_waits_visibly_then_runs_on_one(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = paused(client, redis_client, redis_url)
    client.answer(run_id, "yes")
    burst(redis_client, redis_url, V2)  # release 2 leaves it alone: not on its queues
    record = client.get_run(run_id)
    assert record.status == RunStatus.QUEUED and ran(client, run_id) == ["v1:a"]
    assert unserved(redis_client, "graphq", record)
    [queue] = version_queues(redis_client, "graphq")
    assert (queue.workflow, queue.version, queue.waiting, queue.served) == ("versioned", VERSION_1, 1, False)
    collector = metrics.RedisCollector(redis_client, {"versioned": "rq:queue:graphq:versioned"}, 10, "graphq")
    gauges = {m.name: [(s.labels, s.value) for s in m.samples] for m in collector.collect()}
    assert gauges["graphq_runs_waiting_for_version"] == [
        ({"workflow": "versioned", "version": VERSION_1[:12]}, 1.0)
    ]
    assert gauges["graphq_queue_depth"] == [({"workflow": "versioned"}, 1.0)]
    assert burst(redis_client, redis_url, V1)
    assert ended(client, run_id).status == RunStatus.COMPLETED
    assert ran(client, run_id) == ["v1:a", "v1:ask", "v1:c"]
    assert not unserved(redis_client, "graphq", client.get_run(run_id))


def test_latest_runs_any_step_on_any_worker_as_langgraph(redis_client: redis.Redis, redis_url: str) -> None:
    client = Client(redis_client, LATEST, RQStepQueue(redis_client, Settings(redis_url=redis_url)))
    run_id = paused(client, redis_client, redis_url, LATEST)
    record = client.get_run(run_id)
    assert (record.version, record.pinned) == (VERSION_1, False)  # recorded, not enforced
    client.answer(run_id, "yes")
    assert queued(redis_client, None) == [job_of(client, run_id).encode()]
    assert burst(redis_client, redis_url, V2)
    assert ended(client, run_id).status == RunStatus.COMPLETED
    assert ran(client, run_id) == ["v1:a", "v2:ask", "v2:c"]


def test_the_run_option_and_the_setting_choose_the_policy(
    client: Client, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    latest = client.enqueue("versioned", {}, config={"version_policy": "latest"})
    assert client.get_run(latest).pinned is False
    monkeypatch.setenv("GRAPHQ_VERSION_POLICY", "latest")
    from graphcore.settings import get_settings

    get_settings.cache_clear()
    try:
        assert client.get_run(client.enqueue("versioned", {})).pinned is False
        pinned = client.enqueue("versioned", {}, config={"version_policy": "pin"})
        assert client.get_run(pinned).pinned is True
    finally:
        get_settings.cache_clear()
    with pytest.raises(Exception, match="version_policy") as refused:
        client.enqueue("versioned", {}, config={"version_policy": "newest"})
    assert "'pin' or 'latest'" in str(refused.value)


def test_a_resume_and_a_second_answer_keep_the_version(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = paused(client, redis_client, redis_url)
    client.answer(run_id, "yes")
    burst(redis_client, redis_url, V1)
    again = client.answer_again(run_id, client.run_requests(run_id)[0].id, "no")
    record = client.get_run(again)
    assert (record.version, record.pinned) == (VERSION_1, True)
    assert queued(redis_client, VERSION_1) == [step_job_id(again, 0).encode()]  # its version from the start
    canceled = client.enqueue("versioned", {"ask": True})
    burst(redis_client, redis_url, V1)
    client.cancel(canceled)
    resumed = client.get_run(client.resume(canceled))
    assert (resumed.version, resumed.pinned) == (VERSION_1, True)


def test_runs_show_and_list_say_the_version_and_the_wait(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = paused(client, redis_client, redis_url)
    client.answer(run_id, "yes")
    env = worker_env(redis_url, "tests.workflows.versioned_v2")
    shown = graphq("runs", "show", run_id, env=env)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split("│")[0].strip(): line for line in shown.stdout.splitlines()}
    assert f"{VERSION_1[:12]} (pinned)" in rows["version"]
    assert f"a worker serving version {VERSION_1[:12]} (no live worker serves it" in rows["waiting for"]
    data = json.loads(graphq("runs", "show", run_id, "-o", "json", env=env).stdout)
    assert (data["version"], data["pinned"], data["waiting_for_version"]) == (VERSION_1, True, VERSION_1)
    [stuck] = json.loads(graphq("runs", "list", "--stuck", "-o", "json", env=env).stdout)
    assert (stuck["id"], stuck["waiting_for_version"], stuck["lease_lapsed_at"]) == (run_id, VERSION_1, None)
    table = graphq("runs", "list", "--stuck", env=env).stdout
    assert run_id in table and f"a worker serving version {VERSION_1[:12]}" in table
    listed = graphq("runs", "list", env=env).stdout
    assert f"{VERSION_1[:12]} (pinned)" in listed


def test_pinned_steps_never_run_on_the_other_release(
    client: Client, redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    """Both releases' workers (``graphq worker`` subprocesses) take new runs; every run's steps after its
    first run on the release that ran its first. Counted: no step of a run of one release ran on the
    other, and each release started some."""
    for release in ("v1", "v2"):
        procs.start("worker", env=worker_env(redis_url, f"tests.workflows.versioned_{release}"))
    wait_for(lambda: len(_live_queues(redis_client)) == 3, 60, "both releases' workers")
    requests = [RunRequest("versioned", {"pause_s": 0.05}) for _ in range(16)]
    run_ids = client.enqueue_many(requests)
    releases: dict[str, int] = {}
    for run_id in run_ids:
        assert ended(client, run_id, 120).status == RunStatus.COMPLETED
        version = client.get_run(run_id).version
        release = {VERSION_1: "v1", VERSION_2: "v2"}[version or ""]
        marks = ran(client, run_id)
        assert marks == [f"{release}:a", f"{release}:ask", f"{release}:c"], (run_id, release, marks)
        releases[release] = releases.get(release, 0) + 1
    assert set(releases) == {"v1", "v2"}, releases  # both took runs: the count above means something


def test_an_answer_waits_for_the_old_release_then_runs_when_it_returns(
    client: Client, redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    """A run paused on release 1, answered once release 1's workers are gone and release 2's run: it waits
    (listed as stuck, waiting for its version) and runs when a release-1 worker starts again."""
    old = procs.start("worker", env=worker_env(redis_url, "tests.workflows.versioned_v1"))
    run_id = client.enqueue("versioned", {"ask": True})
    wait_for(lambda: client.get_run(run_id).status == RunStatus.AWAITING_INPUT, 60, "the pause")
    old.send_signal(signal.SIGTERM)
    assert old.wait(60) == 0
    procs.start("worker", env=worker_env(redis_url, "tests.workflows.versioned_v2"))
    wait_for(lambda: len(_live_queues(redis_client)) == 2, 60, "release 2's worker")
    client.answer(run_id, "yes")
    env = worker_env(redis_url, "tests.workflows.versioned_v2")
    stuck = lambda: json.loads(graphq("runs", "list", "--stuck", "-o", "json", env=env).stdout)  # noqa: E731
    assert [(r["id"], r["waiting_for_version"]) for r in stuck()] == [(run_id, VERSION_1)]
    assert client.get_run(run_id).status == RunStatus.QUEUED and ran(client, run_id) == ["v1:a"]
    procs.start("worker", env=worker_env(redis_url, "tests.workflows.versioned_v1"))
    assert ended(client, run_id, 60).status == RunStatus.COMPLETED
    assert ran(client, run_id) == ["v1:a", "v1:ask", "v1:c"]
    assert stuck() == []


def _live_queues(kv: redis.Redis) -> set[str]:
    """The queues of ``versioned`` the live workers listen on."""
    from graphcore.backend.reaper import server_ms
    from graphcore.backend.workers import live_workers

    return {q for w in live_workers(kv, server_ms(kv)) for q in w.queues if "versioned" in q}


def test_a_fork_is_a_new_run_and_records_the_version_that_runs_it(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    done = client.enqueue("versioned", {}, thread_id="forked")
    burst(redis_client, redis_url, V1)
    assert ran(client, done) == ["v1:a", "v1:ask", "v1:c"]
    [after_a] = [cp for cp in client.get_history("forked") if cp.channel_values.get("ran") == ["v1:a"]]
    fork = client.enqueue("versioned", None, thread_id="forked", config={"checkpoint_id": after_a.id})
    assert burst(redis_client, redis_url, V2)
    record = client.get_run(fork)
    assert (record.status, record.version, record.pinned) == (RunStatus.COMPLETED, VERSION_2, True)
    assert ran(client, fork) == ["v1:a", "v2:ask", "v2:c"]


def test_a_retiring_worker_finishes_its_pinned_runs_and_starts_none(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """GRAPHQ_TAKE_NEW_RUNS=false: release 1's worker takes the steps of runs pinned to it, not a new run's
    first step, which waits for a worker that takes new runs."""
    pinned = paused(client, redis_client, redis_url)
    client.answer(pinned, "yes")
    new = client.enqueue("versioned", {})
    retiring = Settings(redis_url=redis_url, take_new_runs=False)
    assert run_worker(retiring, burst=True, registry=V1, kv=redis_client)
    assert ended(client, pinned).status == RunStatus.COMPLETED
    assert ran(client, pinned) == ["v1:a", "v1:ask", "v1:c"]
    assert client.get_run(new).status == RunStatus.QUEUED
    assert queued(redis_client, None) == [step_job_id(new, 0).encode()]
    assert burst(redis_client, redis_url, V2)
    assert ran(client, new) == ["v2:a", "v2:ask", "v2:c"]


def test_graphq_run_on_a_shared_redis_runs_its_own_run_here_and_starts_no_other(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """From the new-user trial: ``graphq run`` from a checkout of unreleased code (release 2 here) took the
    queued runs of the cluster and pinned them to its own version, which no worker served. Its run is now
    pinned to the code here from the start, and its workers take no other run's first step."""
    others = [client.enqueue("versioned", {}) for _ in range(3)]
    result = invoke("tests.workflows.versioned_v2", redis_url, "run", "versioned", "--processes", "1")
    assert result.exit_code == 0, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("run ") and " on thread " in ln]
    own = line.split()[1].rstrip(":")
    record = client.get_run(own)
    assert (record.status, record.version, record.pinned) == (RunStatus.COMPLETED, VERSION_2, True)
    assert ran(client, own) == ["v2:a", "v2:ask", "v2:c"]
    assert [client.get_run(r).status for r in others] == [RunStatus.QUEUED] * 3
    assert [client.get_run(r).version for r in others] == [None] * 3
    assert queued(redis_client, None) == [step_job_id(r, 0).encode() for r in others]


def test_answer_wait_refuses_a_run_pinned_to_another_version(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """From the new-user trial: ``runs answer --wait`` on a run of another version waited in silence (its
    workers cannot take the step), and Ctrl-C then canceled the run. Refused now, before answering."""
    run_id = paused(client, redis_client, redis_url)
    result = invoke(
        "tests.workflows.versioned_v2", redis_url, "runs", "answer", run_id, "--value", '"y"', "-w"
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: run {run_id} is pinned to version {VERSION_1[:12]} of versioned; the code here is version "
        f"{VERSION_2[:12]} and cannot continue it (nothing changed): a worker of version {VERSION_1[:12]} "
        "continues it, or `graphq runs migrate` moves it"
    )
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT


def test_runs_show_says_a_new_run_waits_when_no_live_worker_takes_new_runs(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """From the new-user trial: with every worker at GRAPHQ_TAKE_NEW_RUNS=false a new run waited with no
    sign anywhere."""
    new = client.enqueue("versioned", {})
    env = worker_env(redis_url, "tests.workflows.versioned_v1")
    rows = {
        line.split("│")[0].strip(): line for line in graphq("runs", "show", new, env=env).stdout.splitlines()
    }
    assert "a worker that takes new runs of versioned (none is live" in rows["waiting for"]


def test_an_answer_says_its_run_waits_for_a_worker_of_its_version(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = paused(client, redis_client, redis_url)
    result = invoke("tests.workflows.versioned_v2", redis_url, "runs", "answer", run_id, "--value", '"y"')
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"run {run_id} continues once a worker serving its version {VERSION_1[:12]} is live (none is now); "
        f"follow it with `graphq runs show {run_id}`"
    )


def test_the_reaper_leaves_a_pinned_step_waiting_on_its_versions_queue(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """From the second new-user trial: the reaper looked for a waiting step job on its workflow's queue
    only, took a pinned step waiting on its version's queue (longer than a lease TTL: no worker of its
    version) for lost and enqueued it again at every pass: copies, which a worker of another version ran
    once migrate moved them."""
    run_id = paused(client, redis_client, redis_url)
    client.answer(run_id, "yes")
    job = job_of(client, run_id)
    reaper = Reaper(redis_client, Settings(redis_url=redis_url))
    later = server_ms(redis_client) + 3_600_000  # the job waits for longer than any lease TTL
    for _ in range(3):
        reaper.requeue_lost_jobs(later)
    assert queued(redis_client, VERSION_1) == [job.encode()]
    assert queued(redis_client, None) == []


def test_a_started_runs_next_step_goes_ahead_of_new_runs_first_steps(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """What the versions page says: a worker takes jobs from its version's queue first. A run enqueued
    before a pinned run's answer still waits until the answered run's steps are done."""
    answered = paused(client, redis_client, redis_url)
    new = client.enqueue("versioned", {})  # its first step, on the workflow's queue, queued first
    client.answer(answered, "yes")
    ctx = WorkerContext.build(redis_client, Settings(redis_url=redis_url), V1.only(["versioned"]))
    assert ctx.listen() == [f"graphq:versioned@{VERSION_1}", "graphq:versioned"]
    assert burst(redis_client, redis_url, V1)
    done, started = client.get_run(answered).ended_at, client.get_run(new).started_at
    assert done is not None and started is not None and done < started
