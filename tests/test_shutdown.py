"""The worker process model with real `graphq worker` processes and real signals (R17, R18).

SIGTERM drains (the step in flight finishes, or is given up after GRAPHQ_DRAIN_TIMEOUT_S), a second SIGTERM
stops at once; a node holding the GIL past the lease TTL keeps its lease (the supervising parent renews
it); a node blocking past its deadline has its process killed GRAPHQ_KILL_GRACE_S later and replaced.
Short settings: lease TTL 1 s, drain timeout 1 s, kill grace 1 s. A test whose step must end within the
drain timeout on a loaded machine gives it longer; upper bounds on how long something took compare with
what it must not wait for (a 30 s node, a 30 s lease), with LATE_S of slack.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.workers import live_workers
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue, step_job_id
from tests.workers import Procs, Start, ended, rq_states, run_queue, wait_for, worker_children
from tests.workflows.shutdown import DRAIN_S, behave, log_lines, shutdown_env, started

REGISTRY = Registry.load(["tests.workflows.shutdown"])
GIVE_UP_GRACE_S = 2.0
"""graphq.worker.process.supervisor._GIVE_UP_GRACE_S: from asking a child to give its step up to SIGKILL."""
LONG_GRACE = {"GRAPHQ_TEST_GIVE_UP_GRACE_S": "10"}
"""A supervisor that waits 10 s before SIGKILL (tests/workflows/shutdown.py): a child that closes its run
itself is seen to do so well before."""
LATE_S = 9.0
"""How much later than its due time a loaded machine may end something (upper bounds), below the 10 s of
LONG_GRACE and far below the 30 s of the long nodes."""
# A plain stop of a worker is waited for 15 s at most: it took 22-24 s with redis-py 8.2 (test_stop_times).

BOTH_STEPS = ["first start", "first end", "second start", "second end"]


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return shutdown_env(redis_url, tmp_path)


def listed(kv: redis.Redis) -> list[str]:
    """The ids of the workers graphq's registry lists as live."""
    return [w.id for w in live_workers(kv, server_ms(kv))]


def idle_workers(kv: redis.Redis) -> int:
    return rq_states(kv).count("idle")


def assert_continued(client: Client, kv: redis.Redis, run: RunRecord) -> None:
    """``run`` was continued at once: a queued continuation (attempt 2) whose step job is on the queue."""
    assert run.continued_by_run_id is not None
    successor = client.get_run(run.continued_by_run_id)
    assert (successor.status, successor.continued_from_run_id, successor.attempt, successor.head) == (
        RunStatus.QUEUED,
        run.id,
        2,
        run.head,
    )
    queued = [j.decode() for j in kv.lrange(run_queue(client, successor.id), 0, -1)]
    assert queued == [step_job_id(successor.id, 0)]


def test_sigterm_during_a_short_step_finishes_it_and_the_next_step_goes_to_another_worker(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """The step sleeps 2 s (the SIGTERM lands in it) and ends well within the 10 s drain timeout: exit 0."""
    first = start(GRAPHQ_DRAIN_TIMEOUT_S="10")
    run_id = client.enqueue("two-steps", {"first": {"sleep": 2}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the first step to start")
    first.send_signal(signal.SIGTERM)
    assert first.wait(15) == 0  # a step given up at the drain timeout exits 1
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.RUNNING, 1)  # step 0 committed, step 1 queued
    assert started(tmp_path, "second") == []  # the stopping worker took no job after SIGTERM
    start()
    run = ended(client, run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.result is not None and run.result["done"] == ["first", "second"]
    [first_pid], [second_pid] = started(tmp_path, "first"), started(tmp_path, "second")
    assert first_pid != second_pid
    assert [what for _, what in log_lines(tmp_path)] == BOTH_STEPS
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]


def test_a_node_sees_its_workers_drain_as_runtime_drain_requested(
    client: Client, start: Start, tmp_path: Path
) -> None:
    """SIGTERM drains the worker's ``RunControl`` (``runtime.control``): the node in flight sees
    ``runtime.drain_requested`` with LangGraph's default reason, returns, and the run goes on elsewhere."""
    first = start(GRAPHQ_DRAIN_TIMEOUT_S="30")
    run_id = client.enqueue("two-steps", {"first": {"until_drain": 30}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the first step to start")
    first.send_signal(signal.SIGTERM)
    assert first.wait(40) == 0
    start()
    run = ended(client, run_id)
    assert (run.status, run.result is not None and run.result["done"]) == (
        RunStatus.COMPLETED,
        ["first", "second"],
    )
    assert [what for _, what in log_lines(tmp_path)] == [
        "first start",
        "first saw drain: shutdown",
        "first end",
        "second start",
        "second end",
    ]


@pytest.mark.parametrize(
    ("plan", "settings", "exit_by_s"),
    [
        # ignores its cancel token: killed at the drain timeout + 2 s, the parent closes the run
        ({"c_sleep": 30}, {}, DRAIN_S + GIVE_UP_GRACE_S),
        # stops on its cancel token: the worker closes the run itself, long before the SIGKILL (10 s later)
        ({"until_cancel": 30}, LONG_GRACE, DRAIN_S),
        # returns early: was committed, the run went on as if done
        ({"returns_on_cancel": 30}, LONG_GRACE, DRAIN_S),
    ],
    ids=["blocked-node", "cooperative-node", "node-returning-early"],
)
def test_sigterm_during_a_step_longer_than_the_drain_timeout_gives_it_up(
    client: Client,
    start: Start,
    tmp_path: Path,
    redis_client: redis.Redis,
    plan: dict[str, float],
    settings: dict[str, str],
    exit_by_s: float,
) -> None:
    worker = start(**settings)
    run_id = client.enqueue("two-steps", {"first": {}, "second": plan})
    wait_for(lambda: started(tmp_path, "second"), what="the long step to start")
    worker.send_signal(signal.SIGTERM)
    begun = time.monotonic()
    assert worker.wait(30) == 1
    took = time.monotonic() - begun
    assert exit_by_s - 0.2 < took < exit_by_s + LATE_S, took
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    assert run.error is not None
    assert (run.error.type, run.error.message) == (
        "WorkerShutdown",
        "the worker was stopped (SIGTERM) and the step did not end within GRAPHQ_DRAIN_TIMEOUT_S=1 s",
    )
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]  # checkpoints kept
    assert redis_client.exists(keys.lease(run.thread_id, run_id)) == 0
    assert "second end" not in [what for _, what in log_lines(tmp_path)]
    events = [(e.mode, e.data) for e in read_events(redis_client, run.thread_id, run_id)][-1:]
    canceled = {"status": "canceled", "error": f"WorkerShutdown: {run.error.message}"}
    assert events == [("status", canceled | {"continued_by_run_id": run.continued_by_run_id})]
    assert_continued(client, redis_client, run)


def test_tasks_that_return_after_a_give_up_leave_no_pending_writes(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """Two parallel tasks that return early once the drain timeout sets their cancel tokens: neither's
    writes are kept as pending writes (they were: the continuation then took them for finished, I2)."""
    worker = start()
    run_id = client.enqueue("shutdown-pair", {"node": {"returns_on_cancel": 30}})
    wait_for(lambda: started(tmp_path, "left") and started(tmp_path, "right"), what="both tasks to start")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 1
    assert sorted(what for _, what in log_lines(tmp_path)) == sorted(
        ["left start", "right start", "left cut short", "right cut short"]
    )
    run = client.get_run(run_id)
    assert (run.status, run.error and run.error.type) == (RunStatus.CANCELED, "WorkerShutdown")
    assert run.head is not None and redis_client.hlen(keys.pending_writes(run.thread_id, "", run.head)) == 0
    successor = client.get_run(run.continued_by_run_id or "")
    assert (successor.status, successor.head) == (RunStatus.QUEUED, run.head)


def test_two_sigterms_stop_at_once_and_hand_the_run_over(
    client: Client, start: Start, procs: Procs, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """The second SIGTERM comes once the first is taken (the drain timeout is 30 s here): the node, blocked
    for 30 s, is killed GIVE_UP_GRACE_S later, not at the drain timeout."""
    worker = start(GRAPHQ_DRAIN_TIMEOUT_S="30")
    run_id = client.enqueue("two-steps", {"first": {}, "second": {"c_sleep": 30}})
    wait_for(lambda: started(tmp_path, "second"), what="the long step to start")
    worker.send_signal(signal.SIGTERM)
    wait_for(lambda: "SIGTERM: stopping" in procs.logged(worker), what="the first SIGTERM to be taken")
    worker.send_signal(signal.SIGTERM)
    begun = time.monotonic()
    assert worker.wait(30) == 1
    assert time.monotonic() - begun < GIVE_UP_GRACE_S + LATE_S
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    assert run.error is not None
    assert (run.error.type, run.error.message) == (
        "WorkerShutdown",
        "the worker was stopped at once (a second SIGTERM, or SIGINT) while the step ran",
    )
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]
    assert redis_client.exists(keys.lease(run.thread_id, run_id)) == 0
    assert_continued(client, redis_client, run)


def test_sigint_stops_an_idle_worker_at_once_with_status_0(start: Start) -> None:
    worker = start()
    worker.send_signal(signal.SIGINT)
    assert worker.wait(15) == 0


@pytest.mark.parametrize("pools", [1, pytest.param(3, marks=pytest.mark.chaos)])
def test_sigint_stops_idle_worker_processes_themselves_not_by_the_kill(start: Start, pools: int) -> None:
    """At Ctrl-C the supervisor sent each idle child SIGUSR2 (give up your step) right behind its SIGTERM:
    5 times in 8 a child's main thread slept on in its pop until the kill, the give-up grace later (here
    10 s). Idle children get only the SIGTERM now, and stop by themselves. Pools of two: one in make test,
    three in make chaos."""
    for _ in range(pools):
        worker = start(processes=2, **LONG_GRACE)
        worker.send_signal(signal.SIGINT)
        assert worker.wait(8) == 0


def test_sigterm_just_after_the_pop_runs_the_job_it_took(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """RQ's warm shutdown raised out of the worker's dequeue (SystemExit): a step job popped just before the
    SIGTERM was dropped — in no list, the run stuck until the reaper enqueued it again a lease TTL later.
    GRAPHQ_TEST_SLOW_FETCH_S holds the worker 2 s between the pop and the job's start; the SIGTERM lands
    there: the job it took is run (the drain, 10 s here), its run moves on to step 1, whose job waits on
    the queue."""
    worker = start(GRAPHQ_TEST_SLOW_FETCH_S="2", GRAPHQ_DRAIN_TIMEOUT_S="10")
    run_id = client.enqueue("two-steps", {})
    wait_for(lambda: [w for _, w in log_lines(tmp_path) if w.startswith("popped")], what="the pop")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(15) == 0
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.RUNNING, 1)
    assert [what for _, what in log_lines(tmp_path)] == [f"popped {step_job_id(run_id, 0)}", *BOTH_STEPS[:2]]
    assert redis_client.lrange(run_queue(client, run_id), 0, -1) == [step_job_id(run_id, 1).encode()]


def test_a_give_up_asked_while_an_idle_process_is_ending_does_not_fail_the_worker(start: Start) -> None:
    """The drain timeout (1 s) ends while the idle children are still ending (GRAPHQ_TEST_SLOW_EXIT_S: their
    interpreter finalizes for 1.5 s, its signal handlers put back to the defaults): the parent's SIGUSR1
    must not kill them (it did: exit status 1, 'worker process(es) exited with an error: [-10]'). The
    SIGKILL would come 10 s after the SIGUSR1 here (LONG_GRACE)."""
    worker = start(processes=2, GRAPHQ_TEST_SLOW_EXIT_S="1.5", **LONG_GRACE)
    worker.send_signal(signal.SIGTERM)
    begun = time.monotonic()
    assert worker.wait(30) == 0
    assert DRAIN_S < time.monotonic() - begun < DRAIN_S + LATE_S  # SIGUSR1 came; no SIGKILL


def test_a_node_holding_the_gil_past_the_lease_ttl_keeps_its_lease_and_its_worker_listed(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """The node blocks 4 s in C holding the GIL (its process's keeper and heartbeat threads cannot run)
    against a 1 s lease TTL, with the reaper looking every 0.3 s: the supervising parent renews the lease,
    the step commits once, the run completes. The parent renews the worker's record too: the busy worker
    stays in graphq's registry and RQ's all along (the reaper used to remove it from both, and it never
    came back to RQ's)."""
    start(GRAPHQ_REAPER_INTERVAL_S="0.3")
    [worker_id] = listed(redis_client)
    rq_key = f"rq:worker:{worker_id}".encode()
    run_id = client.enqueue("two-steps", {"first": {"gil_sleep": 4}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the step to start")
    seen = []
    while "first end" not in [what for _, what in log_lines(tmp_path)]:  # the GIL is held meanwhile
        seen.append((listed(redis_client), rq_key in redis_client.smembers("rq:workers")))
        time.sleep(0.1)
    assert len(seen) > 10  # about 40 looks: the hold outlived the lease TTL several times
    assert [look for look in seen if look != ([worker_id], True)] == []
    run = ended(client, run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert [what for _, what in log_lines(tmp_path)] == BOTH_STEPS
    assert (listed(redis_client), rq_key in redis_client.smembers("rq:workers")) == ([worker_id], True)
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]


def test_gil_sleep_really_holds_the_gil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test node's ``gil_sleep`` starves every other thread of its process (a ticking thread stops)."""
    import threading

    monkeypatch.setenv("GRAPHQ_TEST_DIR", str(tmp_path))  # where the node logs its start and end

    ticks = [0]
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.01)

    threading.Thread(target=tick, daemon=True).start()
    time.sleep(0.1)
    before = ticks[0]
    behave("node", {"gil_sleep": 1})
    during = ticks[0] - before
    stop.set()
    assert during <= 1


@pytest.mark.chaos  # make test: the GIL-holding node above, test_worker's duplicate step job
def test_b17_a_long_c_level_node_runs_once_while_its_worker_lives(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    """A step's job delivered twice while its lease is held (R18; as LangGraph Platform's background runs and
    Celery's visibility timeout can), shortened: one node blocks 4 s in a C-level sleep against a 1 s lease
    TTL with two idle workers beside it; a duplicate of the step's job is taken by one of them and skipped
    (the lease is held): the node runs exactly once."""
    workers = [start() for _ in range(3)]
    run_id = client.enqueue("two-steps", {"first": {"c_sleep": 4}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the long node to start")
    run = client.get_run(run_id)
    token = redis_client.get(keys.lease(run.thread_id, run_id))
    assert token is not None
    pipe = redis_client.pipeline(transaction=True)
    pipe.multi()
    RQStepQueue(redis_client, Settings(redis_url=redis_url)).stage(pipe, run)  # a duplicate of the job
    pipe.execute()
    time.sleep(2.5)  # the duplicate is taken by an idle worker meanwhile
    assert redis_client.get(keys.lease(run.thread_id, run_id)) == token  # never lapsed, never taken
    run = ended(client, run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert len(started(tmp_path, "first")) == 1
    assert [c.step for c in client.get_history(run.thread_id)] == [2, 1, 0, -1]
    assert all(w.poll() is None for w in workers)


def test_a_node_blocked_past_the_run_timeout_is_killed_at_the_deadline_plus_the_grace(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    worker = start()
    before = worker_children(worker.pid)
    run_id = client.enqueue(
        "two-steps", {"first": {}, "second": {"c_sleep": 60}}, config={"run_timeout_s": 3}
    )
    created = time.time()
    run = ended(client, run_id, timeout_s=30)
    took = time.time() - created
    assert 3 + 1 - 0.3 < took < 3 + 1 + LATE_S, took  # the node would block 60 s
    assert run.status == RunStatus.CANCELED
    assert run.error is not None
    [pid] = started(tmp_path, "second")
    assert (run.error.type, run.error.message) == (
        "RunTimeout",
        "run exceeded run_timeout_s=3 s (GRAPHQ_RUN_TIMEOUT_S or the run option run_timeout_s) while its "
        "step was running; the step did not end within GRAPHQ_KILL_GRACE_S=1 s, so its worker process "
        f"(pid {pid}) was killed",
    )
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]
    assert redis_client.exists(keys.lease(run.thread_id, run_id)) == 0
    assert worker.poll() is None  # the supervisor lives on, with a new worker process
    wait_for(lambda: idle_workers(redis_client) == 1, what="the replacement worker")
    after = worker_children(worker.pid)
    assert len(after) == 1 and after != before and not Path(f"/proc/{pid}").exists()
    again = ended(client, client.enqueue("two-steps", {}))
    assert again.status == RunStatus.COMPLETED


def test_a_node_holding_the_gil_past_its_node_timeout_is_killed(
    client: Client, start: Start, tmp_path: Path
) -> None:
    """The node's own timeout (1 s) cannot fire while the node holds the GIL; its process is killed at
    the timeout plus the grace and the run fails with the timeout error."""
    start()
    run_id = client.enqueue("timed", {"node": {"gil_sleep": 30}})
    wait_for(lambda: started(tmp_path, "node"), what="the node to start")
    begun = time.monotonic()
    run = ended(client, run_id, timeout_s=30)
    assert time.monotonic() - begun < 1 + 1 + LATE_S  # the node would hold the GIL 30 s
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    [pid] = started(tmp_path, "node")
    assert (run.error.type, run.error.message) == (
        "NodeTimeoutError",
        "node 'node' timed out after 1 s (timeout=1 set on add_node); the step did not end within "
        f"GRAPHQ_KILL_GRACE_S=1 s, so its worker process (pid {pid}) was killed",
    )


def test_shutdown_settings_defaults() -> None:
    s = Settings()
    assert (s.drain_timeout_s, s.kill_grace_s) == (20.0, 10.0)


@pytest.mark.chaos  # make test: one step drained, one given up, an idle pool stopped (test_e2e)
def test_sigterm_to_a_worker_pool_drains_every_process(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """`--concurrency 2`: the signal reaches both processes; the short step (2 s, the SIGTERM lands in it)
    finishes, the long one is given up after the drain timeout (5 s here), and the pool exits within the
    bound, long before the long node's 30 s."""
    pool = start(processes=2, GRAPHQ_DRAIN_TIMEOUT_S="5")
    long = client.enqueue("two-steps", {"first": {"c_sleep": 30}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the long step to start")
    short = client.enqueue("two-steps", {"first": {"sleep": 2}, "second": {}})
    wait_for(lambda: len(started(tmp_path, "first")) == 2, what="the short step to start")
    pool.send_signal(signal.SIGTERM)
    begun = time.monotonic()
    assert pool.wait(30) == 1
    assert time.monotonic() - begun < 5 + GIVE_UP_GRACE_S + LATE_S
    assert (client.get_run(short).status, client.get_run(short).step) == (RunStatus.RUNNING, 1)
    run = client.get_run(long)
    assert run.status == RunStatus.CANCELED
    assert run.error is not None and run.error.type == "WorkerShutdown"
    assert started(tmp_path, "second") == []


def test_a_stopped_worker_process_loses_its_lease(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """The supervisor renews only for a process that can run: a SIGSTOPped one's lease lapses (1 s TTL)."""
    worker = start()
    run_id = client.enqueue("two-steps", {"first": {"c_sleep": 30}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the step to start")
    [pid] = started(tmp_path, "first")
    run = client.get_run(run_id)
    lease = keys.lease(run.thread_id, run_id)
    assert redis_client.exists(lease) == 1
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: redis_client.exists(lease) == 0, timeout_s=15, what="the lease to lapse")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert worker.poll() is None


def test_a_worker_process_that_dies_is_replaced_and_its_lease_lapses_at_once(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """SIGKILL of a worker process (as the OOM killer would) under a 30 s lease TTL: its supervisor lets the
    lease lapse at once, so the reaper continues the run within its interval, and starts a new process.
    The reaper runs in the supervisor, so the killed process held no reaper lock: the lock keeps its owner.
    The killed process leaves graphq's and RQ's worker registries at once too (it stayed listed, holding the
    run, until its 30 s heartbeat expired)."""
    worker = start(GRAPHQ_LEASE_TTL_S="30", GRAPHQ_REAPER_INTERVAL_S="0.5")
    run_id = client.enqueue("two-steps", {"first": {"c_sleep": 30}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the step to start")
    [pid] = started(tmp_path, "first")
    run = client.get_run(run_id)
    wait_for(lambda: redis_client.get(keys.reaper_lock()), what="the reaper lock")
    lock = redis_client.get(keys.reaper_lock())
    [victim] = [w for w in live_workers(redis_client, server_ms(redis_client)) if w.pid == pid]
    assert victim.id in listed(redis_client)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    wait_for(lambda: redis_client.exists(keys.lease(run.thread_id, run_id)) == 0, 15, "the lease to lapse")
    wait_for(lambda: victim.id not in listed(redis_client), 15, "the killed process to leave the registry")
    assert not redis_client.exists(f"rq:worker:{victim.id}")
    assert f"rq:worker:{victim.id}".encode() not in redis_client.smembers("rq:workers")
    wait_for(lambda: client.get_run(run_id).continued_by_run_id, 20, "the continuation")
    assert time.monotonic() - killed < 20  # the 30 s lease TTL would take longer
    assert redis_client.get(keys.reaper_lock()) == lock  # held by the supervisor all along
    old = client.get_run(run_id)
    assert old.status == RunStatus.FAILED and old.error is not None and old.error.type == "WorkerLost"
    assert worker.poll() is None
    wait_for(lambda: worker_children(worker.pid) not in ([], [pid]), what="the new worker process")


def test_a_dead_worker_process_is_continued_by_its_supervisor_not_at_the_reapers_next_pass(
    client: Client, start: Start, tmp_path: Path
) -> None:
    """The supervisor continues the run of a child it sees die at once: with a 60 s
    reaper interval and a 60 s lease TTL, the continuation used to wait for the reaper's next pass."""
    start(GRAPHQ_LEASE_TTL_S="60", GRAPHQ_REAPER_INTERVAL_S="60")
    run_id = client.enqueue("two-steps", {"first": {"c_sleep": 60}, "second": {}})
    wait_for(lambda: started(tmp_path, "first"), what="the step to start")
    [pid] = started(tmp_path, "first")
    os.kill(pid, signal.SIGKILL)
    successor = wait_for(lambda: client.get_run(run_id).continued_by_run_id, 20, "the continuation")
    old = client.get_run(run_id)
    assert (old.status, old.error.type if old.error else None) == (RunStatus.FAILED, "WorkerLost")
    new = client.get_run(successor)
    assert (new.continued_from_run_id, new.attempt) == (run_id, 2)
    wait_for(lambda: client.get_run(successor).status == RunStatus.RUNNING, 20, "the continuation to run")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"GRAPHQ_MAX_RESUME_ATTEMPTS": "0"},
            "the worker was stopped (SIGTERM) and the step did not end within GRAPHQ_DRAIN_TIMEOUT_S=1 s; "
            "not continued: the chain reached GRAPHQ_MAX_RESUME_ATTEMPTS=0 (attempt 1)",
        ),
        (
            {"GRAPHQ_RESUME_INTERRUPTED_RUNS": "false"},
            "the worker was stopped (SIGTERM) and the step did not end within GRAPHQ_DRAIN_TIMEOUT_S=1 s",
        ),
    ],
    ids=["chain-limit", "resume-off"],
)
def test_a_step_given_up_is_not_continued_at_the_chain_limit_or_with_resume_off(
    client: Client,
    start: Start,
    tmp_path: Path,
    redis_client: redis.Redis,
    settings: dict[str, str],
    message: str,
) -> None:
    worker = start(**settings)
    run_id = client.enqueue("two-steps", {"first": {}, "second": {"until_cancel": 30}})
    wait_for(lambda: started(tmp_path, "second"), what="the long step to start")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(15) == 1
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    assert run.error is not None and (run.error.type, run.error.message) == ("WorkerShutdown", message)
    assert run.continued_by_run_id is None
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]
    assert redis_client.llen(run_queue(client, run_id)) == 0
    assert redis_client.exists(keys.thread_active(run.thread_id)) == 0  # the thread is free again


def test_a_process_left_with_a_node_running_past_its_timeout_is_replaced(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    """A node blocked in C (the GIL free) past its 1 s timeout, ignoring its cancel token: the run fails at
    the timeout; the node's thread cannot be stopped, so its process takes no more jobs and is replaced."""
    worker = start()
    run_id = client.enqueue("timed", {"node": {"c_sleep": 30}})
    run = ended(client, run_id, timeout_s=20)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert (run.error.type, run.error.message) == (
        "NodeTimeoutError",
        "node 'node' timed out after 1 s (timeout=1 set on add_node)",
    )
    [pid] = started(tmp_path, "node")
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 20, "the stuck process to end")  # before its 30 s
    wait_for(
        lambda: len(worker_children(worker.pid)) == 1 and idle_workers(redis_client) >= 1, what="a new one"
    )
    again = ended(client, client.enqueue("two-steps", {}))
    assert again.status == RunStatus.COMPLETED
    assert worker.poll() is None
