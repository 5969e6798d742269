"""Wide super-steps split into batches (graphq.worker.step.split): the same checkpoint as unsplit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client import generate_latest

from graphcore import Command, keys
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.ttl import delete_thread
from graphcore.checkpoints import layout, serde
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.registry import Registry
from graphcore.engine.task_metadata import PUSH, task_paths
from graphcore.errors import ConfigError
from graphcore.settings import Settings, get_settings
from graphcore.types import PendingTask, TaskWrites
from graphq.worker import metrics
from graphq.worker.queue import BATCH_FUNC, STEP_FUNC
from graphq.worker.step.batch import Batch, call_helpers
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.fence import RefusedWriteError
from graphq.worker.step.lease import Lease
from graphq.worker.step.split import BatchFailure, Split
from tests.workers import Start, ended, wait_for, work, worker_env
from tests.workflows.split_wide import fan, wide, wide_rich, wide_stops, wide_timed

REGISTRY = Registry(
    {"split-wide": wide, "split-rich": wide_rich, "split-stops": wide_stops, "split-timed": wide_timed}
)


def _run(client: Client, thread: str, n: int, **extra: Any) -> str:
    run_id = client.enqueue("split-wide", {"n": n, **extra}, thread_id=thread)
    work(client)
    return run_id


def _history(client: Client, thread: str) -> list[tuple[int, bytes]]:
    """Each checkpoint of ``thread``, newest first: its step and its values as stored (msgpack)."""
    return [(cp.step, serde.dumps(cp.channel_values)) for cp in client.get_history(thread)]


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", "10")
    monkeypatch.setenv("GRAPHQ_SHARD_BATCH_TASKS", "7")
    get_settings.cache_clear()


def test_a_split_step_commits_what_the_unsplit_step_commits(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    split_run = _run(client, "t-split", 40)
    monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", "0")
    get_settings.cache_clear()
    whole_run = _run(client, "t-whole", 40)
    records = [client.get_run(r) for r in (split_run, whole_run)]
    assert [r.status for r in records] == [RunStatus.COMPLETED] * 2
    assert (
        records[0].result
        == records[1].result
        == {"n": 40, "out": [i * i for i in range(40)], "total": sum(i * i for i in range(40))}
    )
    assert _history(client, "t-split") == _history(client, "t-whole")


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(
        redis_url,
        "tests.workflows.split_wide",
        tmp_path,
        GRAPHQ_SHARD_MIN_TASKS="10",
        GRAPHQ_SHARD_BATCH_TASKS="5",
    )


def _ran_by(tmp_path: Path) -> dict[int, set[int]]:
    """Item → the pids of the processes that ran its task (work.log)."""
    seen: dict[int, set[int]] = {}
    for line in (tmp_path / "work.log").read_text().splitlines():
        item, pid = line.split()
        seen.setdefault(int(item), set()).add(int(pid))
    return seen


def test_the_batches_of_a_split_step_run_on_every_worker_process(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    run_id = client.enqueue("split-wide", {"n": 60, "sleep_s": 0.05}, thread_id="t-pool")
    record = ended(client, run_id, 60)
    assert record.status == RunStatus.COMPLETED
    assert record.result["out"] == [i * i for i in range(60)]
    ran = _ran_by(tmp_path)
    assert sorted(ran) == list(range(60))
    assert all(len(pids) == 1 for pids in ran.values())  # each task ran once
    assert len(set().union(*ran.values())) == 2  # on both processes
    progress = [e.data for e in read_events(client.kv, "t-pool", run_id) if e.mode == "progress"]
    done = [p["done"] for p in progress]
    assert (progress[0], progress[-1]) == ({"done": 0, "total": 60}, {"done": 60, "total": 60})
    assert done == sorted(done)  # counted across both processes, never going back


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """``(tasks, batches)`` of each split opened in this process."""
    seen: list[tuple[int, int]] = []
    real_open = Split.open

    def spied(self: Split, *args: Any) -> bool:
        seen.append((self.tasks, self.batches))
        return real_open(self, *args)

    monkeypatch.setattr(Split, "open", spied)
    return seen


def test_a_step_splits_from_shard_min_tasks_tasks_in_batches_of_shard_batch_tasks(
    client: Client, split: None, opened: list[tuple[int, int]]
) -> None:
    assert client.get_run(_run(client, "t-narrow", 9)).status == RunStatus.COMPLETED
    assert opened == []  # 9 tasks: under GRAPHQ_SHARD_MIN_TASKS=10
    assert client.get_run(_run(client, "t-wide", 10)).status == RunStatus.COMPLETED
    assert opened == [(10, 2)]  # batches of 7: 7 + 3


@pytest.mark.parametrize(
    ("setting", "config", "splits"),
    [
        ("128", {"shard_min_tasks": 10}, True),  # the run's option wins over the setting
        ("10", {"shard_min_tasks": 0}, False),  # 0 never splits
        ("10", {"max_concurrency": 4}, False),  # batches on several processes would exceed it
    ],
)
def test_a_runs_options_decide_whether_its_step_splits(
    client: Client,
    opened: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    config: dict[str, int],
    splits: bool,
) -> None:
    monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", setting)
    monkeypatch.setenv("GRAPHQ_SHARD_BATCH_TASKS", "7")
    get_settings.cache_clear()
    run_id = client.enqueue("split-wide", {"n": 10}, thread_id="t-options", config=config)
    work(client)
    record = client.get_run(run_id)
    assert (record.status, record.result["total"]) == (RunStatus.COMPLETED, sum(i * i for i in range(10)))
    assert opened == ([(10, 2)] if splits else [])


def _compare(client: Client, monkeypatch: pytest.MonkeyPatch, **input: Any) -> list[RunRecord]:
    """The record of the run of ``input`` split (batches of 7), then unsplit."""
    split_run = _run(client, "t-split", **input)
    monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", "0")
    get_settings.cache_clear()
    return [client.get_run(split_run), client.get_run(_run(client, "t-whole", **input))]


def test_a_task_failing_in_a_batch_fails_the_run_as_unsplit(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _compare(client, monkeypatch, n=30, fail=17)  # batch 2 of 5 (tasks 14..20)
    assert [r.status for r in records] == [RunStatus.FAILED] * 2
    errors = [r.error for r in records]
    assert errors[0] is not None and errors[1] is not None
    assert (errors[0].type, errors[0].message, errors[0].node, errors[0].step) == (
        "NodeError",
        errors[1].message,
        "work",
        2,
    )
    assert errors[0].type == errors[1].type
    assert "item 17 fails" in errors[0].message


def _failure(record: RunRecord) -> tuple[str, str, str | None, int | None]:
    assert record.error is not None
    return record.error.type, record.error.message, record.error.node, record.error.step


def test_graphqs_own_error_in_a_batch_fails_the_run_as_unsplit_and_closes_the_split(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _compare(client, monkeypatch, n=30, unavailable=17)  # batch 2 of 5: not a NodeError
    assert [r.status for r in records] == [RunStatus.FAILED] * 2
    expected = ("RedisUnavailableError", "item 17: its Redis is away", None, 2)
    assert _failure(records[0]) == _failure(records[1]) == expected
    assert client.kv.exists(keys.split("t-split", records[0].head or "")) == 0  # no batch runs on


def test_the_first_failure_in_task_order_fails_the_run_whatever_its_kind(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _compare(client, monkeypatch, n=30, fail=3, unavailable=17)  # batches 0 and 2
    assert [r.status for r in records] == [RunStatus.FAILED] * 2
    assert _failure(records[0]) == _failure(records[1])
    assert _failure(records[0])[0::2] == ("NodeError", "work")
    assert "item 3 fails" in _failure(records[0])[1]


def test_timed_tasks_more_than_the_threads_complete_split_and_unsplit(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 tasks of a node with ``timeout=1`` taking 0.5 s each, on 8 threads (GRAPHQ_MAX_WORKERS_PER_STEP):
    no task outlives its timeout, though the step outlives one; neither step is given up at 1 s."""
    monkeypatch.setenv("GRAPHQ_MAX_WORKERS_PER_STEP", "8")
    runs: list[RunRecord] = []
    for thread, least in (("t-timed-split", "10"), ("t-timed-whole", "0")):
        monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", least)
        get_settings.cache_clear()
        run_id = client.enqueue("split-timed", {"n": 40, "sleep_s": 0.5}, thread_id=thread)
        work(client)
        runs.append(client.get_run(run_id))
    assert [(r.status, r.error) for r in runs] == [(RunStatus.COMPLETED, None)] * 2
    assert _history(client, "t-timed-split") == _history(client, "t-timed-whole")


def test_interrupts_in_several_batches_pause_the_run_once_with_every_question(
    client: Client, split: None
) -> None:
    run_id = _run(client, "t-ask", 30, ask=[3, 25])  # batches 0 and 3
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    asked = client.requests(run_id)
    assert [i.value for i in asked] == [{"item": 3}, {"item": 25}]
    client.answer(run_id, {asked[0].id: 1000, asked[1].id: 2000})
    work(client)
    last = client.chain(run_id)[-1]
    assert last.status == RunStatus.COMPLETED
    out = [i * i for i in range(30)]
    out[3] += 1000
    out[25] += 2000
    assert last.result["out"] == out


def test_chunks_retries_commands_and_subgraphs_in_a_split_step_as_unsplit(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[RunRecord] = []
    for thread, least in (("t-rich-split", "10"), ("t-rich-whole", "0")):
        monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", least)
        get_settings.cache_clear()
        run_id = client.enqueue("split-rich", {"n": 30}, thread_id=thread)
        work(client)
        runs.append(client.get_run(run_id))
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 2
    out = sorted(runs[0].result["out"])
    assert out == sorted(runs[1].result["out"])
    assert (out.count(-1), out.count(1), out.count(2)) == (1, 4, 3)  # extra once; item 1; 3 subgraphs
    assert _history(client, "t-rich-split") == _history(client, "t-rich-whole")
    events = [list(read_events(client.kv, r.thread_id, r.id)) for r in runs]
    chunks = [sorted(e.data["chunk"]["item"] for e in ev if e.mode == "custom") for ev in events]
    assert chunks[0] == chunks[1] == sorted([*range(30), 3, 13, 23])  # a chunk a try
    retries = [sorted(e.data["node"] for e in ev if e.mode == "retry") for ev in events]
    assert retries[0] == retries[1] == ["work"] * 3  # items 3, 13, 23


def test_subgraphs_stopping_at_their_breakpoint_in_a_split_step_stop_the_run_as_unsplit(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    for thread, least in (("t-stops-split", "10"), ("t-stops-whole", "0")):
        monkeypatch.setenv("GRAPHQ_SHARD_MIN_TASKS", least)
        get_settings.cache_clear()
        runs.append(client.enqueue("split-stops", {"n": 20}, thread_id=thread))
        work(client)
    stopped = [client.get_run(r) for r in runs]
    assert [r.status for r in stopped] == [RunStatus.AWAITING_INPUT] * 2
    assert [{k: r.breakpoint[k] for k in ("when", "nodes")} for r in stopped if r.breakpoint] == [
        {"when": "before", "nodes": ["b"]}
    ] * 2
    assert _history(client, "t-stops-split") == _history(client, "t-stops-whole")
    for run_id in runs:
        client.resume(run_id)
        work(client)
    done = [client.get_run(r) for r in runs]
    assert [r.status for r in done] == [RunStatus.COMPLETED] * 2
    assert done[0].result == done[1].result == {"n": 20, "out": [1, 2] * 20}
    assert _history(client, "t-stops-split") == _history(client, "t-stops-whole")


def test_a_run_timeout_during_a_split_step_cancels_the_run(client: Client, split: None) -> None:
    run_id = client.enqueue(
        "split-wide", {"n": 40, "sleep_s": 0.5}, thread_id="t-late", config={"run_timeout_s": 1.5}
    )
    work(client)
    record = client.get_run(run_id)
    assert record.status == RunStatus.CANCELED
    assert record.error is not None and record.error.type == "RunTimeout"
    assert client.kv.exists(keys.split("t-late", record.head or "")) == 0  # the split was closed


def test_a_worker_that_starts_during_a_split_step_gets_its_batches(
    client: Client, start: Start, tmp_path: Path
) -> None:
    first = start(processes=1)
    run_id = client.enqueue("split-wide", {"n": 80, "sleep_s": 0.2, "gate": True}, thread_id="t-late-worker")
    wait_for(lambda: (tmp_path / "work.log").exists(), 60, "the owner's first batch to start")
    start(processes=1)  # ready once RQ has it idle: it takes the helpers the owner enqueues from now on
    (tmp_path / "go").touch()
    record = ended(client, run_id, 90)
    assert record.status == RunStatus.COMPLETED
    ran = _ran_by(tmp_path)
    assert sorted(ran) == list(range(80))
    pids = set().union(*ran.values())
    assert len(pids) == 2 and first.pid not in pids  # the supervisor's two children


def test_each_batch_reads_the_pending_writes_of_its_own_tasks_only(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    real_decode = layout.decode_writes

    def counted(data: bytes) -> TaskWrites:
        tw = real_decode(data)
        decoded.append(tw.task_id)
        return tw

    monkeypatch.setattr(layout, "decode_writes", counted)
    assert client.get_run(_run(client, "t-reads", 40)).status == RunStatus.COMPLETED
    # 6 batches of 7 (the last 5) each read its own tasks' entries (none yet: 0), then the owner reads the
    # step back once (40). Batches reading the whole step's pending writes read 0 + 7 + ... + 35 = 105 more.
    assert len(decoded) == 40
    assert len(set(decoded)) == 40


@pytest.mark.parametrize("only", [range(0, 3), range(2, 5), range(4, 7), range(6, 7)])
def test_a_batch_builds_the_paths_of_its_own_tasks_as_the_whole_step_has_them(only: range) -> None:
    kinds = [
        ("a", False),
        ("work", True),
        ("b", False),
        ("work", True),
        ("work", True),
        ("c", False),
        ("work", True),
    ]
    cp = Checkpoint(
        "cp", None, 0, {}, next_tasks=[PendingTask(n, send=s, arg={} if s else None) for n, s in kinds]
    )
    assert task_paths(cp, only) == task_paths(cp)[only.start : only.stop]
    assert task_paths(cp)[3] == (PUSH, 1, False)


def test_the_supervisor_renews_a_batch_whose_node_holds_the_gil(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2, GRAPHQ_LEASE_TTL_S="1", GRAPHQ_HEARTBEAT_INTERVAL_S="0.3")
    run_id = client.enqueue(
        "split-wide", {"n": 20, "sleep_s": 0.05, "hold": 7, "gil_s": 3.0}, thread_id="t-gil"
    )
    record = ended(client, run_id, 60)
    assert record.status == RunStatus.COMPLETED
    runs = [int(line.split()[0]) for line in (tmp_path / "work.log").read_text().splitlines()]
    assert sorted(runs) == list(
        range(20)
    )  # each task once: the 3 s hold outlived the 1 s lease, not the batch


def test_a_lapsed_batch_is_claimed_again_and_its_claims_counted(redis_client: redis.Redis) -> None:
    lease = Lease(redis_client, "t-claims", "r1", ttl_s=30, heartbeat_s=5)
    assert lease.acquire()
    split = Split(redis_client, "t-claims", "cp1", tasks=10, size=4)
    assert split.open(lease, "r1", 3, 60_000, 0) is False
    first = [split.claim("a", 30_000) for _ in range(3)]
    assert [(c.batch, c.run_id, c.left, c.claims) for c in first if c] == [
        (0, "r1", 2, 1),
        (1, "r1", 1, 1),
        (2, "r1", 0, 1),
    ]
    assert split.claim("b", 30_000) is None  # all three held
    redis_client.hset(split.key, "u:1", 0)  # batch 1's lease lapses (its worker died)
    again = split.claim("b", 30_000)
    assert again is not None and (again.batch, again.claims) == (1, 2)
    assert split.finish("a#1", None) is False  # the first holder's finish is refused: not its batch now
    assert split.finish("b#1", None) is True
    assert split.state() == (1, [], {})
    assert split.close(lease) is True and Split.read(redis_client, "t-claims", "cp1") is None


def test_interrupts_in_batches_on_two_worker_processes_pause_once_then_complete(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    run_id = client.enqueue("split-wide", {"n": 40, "sleep_s": 0.05, "ask": [2, 38]}, thread_id="t-ask-pool")
    wait_for(lambda: client.get_run(run_id).status == RunStatus.AWAITING_INPUT, 60, "the pause")
    asked = client.requests(run_id)
    assert [i.value for i in asked] == [{"item": 2}, {"item": 38}]  # batches 0 and 7, in task order
    assert len(set().union(*_ran_by(tmp_path).values())) == 2  # the step ran on both processes
    client.answer(run_id, {asked[0].id: 5, asked[1].id: 7})
    [record] = client.wait([run_id], timeout_s=60)
    assert record.status == RunStatus.COMPLETED
    out = [i * i for i in range(40)]
    out[2] += 5
    out[38] += 7
    assert record.result["out"] == out


def test_batches_are_counted_by_outcome(client: Client, split: None) -> None:
    registry = metrics.enable()
    try:
        _run(client, "t-count", 40)  # 6 batches of 7
        _run(client, "t-count-fail", 20, fail=9)  # 3 batches, one ends with a failure
        scraped = generate_latest(registry).decode()
    finally:
        metrics.disable()
    counted = {
        line.split("outcome=")[1].split('"')[1]: float(line.rsplit(" ", 1)[1])
        for line in scraped.splitlines()
        if line.startswith("graphq_batches_total{")
    }
    assert counted == {"done": 8.0, "failed": 1.0}


def test_a_helper_left_with_a_node_running_past_its_timeout_is_replaced(
    client: Client, start: Start, tmp_path: Path
) -> None:
    """Every task blocks in C past its node's 1 s timeout, deaf to its cancel token: the run fails at the
    first task's timeout, and each process that ran tasks (the owner's and a helper's) takes no more jobs
    and is replaced, as after an unsplit step."""
    start(processes=2)
    run_id = client.enqueue("split-timed", {"n": 40, "stuck_s": 120}, thread_id="t-stuck")
    record = ended(client, run_id, 90)
    assert record.status == RunStatus.FAILED
    assert record.error is not None and (record.error.type, record.error.message, record.error.node) == (
        "NodeTimeoutError",
        "node 'work' timed out after 1 s (timeout=1 set on add_node)",
        "work",
    )
    pids = set().union(*_ran_by(tmp_path).values())
    assert len(pids) >= 2  # both processes, and any started in place of one that retired meanwhile
    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), 60, "those processes to end")


def test_a_splits_keys_are_keys_of_its_thread_and_go_with_it(redis_client: redis.Redis) -> None:
    """K3: under a thread TTL the split's record and its list of batches done join the thread's key set,
    with its expiry, and ``graphq threads delete`` removes them (a split its owner left open, e.g. the owner
    died and its run was not continued, would outlive the thread)."""
    kv, thread = redis_client, "t-k3"
    kv.sadd(keys.thread_keys(thread), "run")  # the key set of a thread whose TTL applies, 60 s left
    kv.pexpire(keys.thread_keys(thread), 60_000)
    lease = Lease(kv, thread, "r1", ttl_s=30, heartbeat_s=5)
    assert lease.acquire()
    split = Split(kv, thread, "cp1", tasks=4, size=4)
    assert split.open(lease, "r1", 1, 3_600_000, 0) is False
    claim = split.claim("a", 30_000)
    assert claim is not None and split.finish(f"a#{claim.batch}", None)
    named = {k.decode() for k in kv.smembers(keys.thread_keys(thread))}
    assert {split.key, split.done_key} <= named
    assert all(0 < kv.pttl(k) <= 60_000 for k in (split.key, split.done_key))
    delete_thread(kv, thread)
    assert kv.exists(split.key, split.done_key) == 0


def test_an_error_that_fails_the_run_closes_its_split(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Batch) -> str:
        raise RuntimeError("a bug in a batch")

    monkeypatch.setattr(Batch, "run", broken)
    record = client.get_run(_run(client, "t-broken", 20))
    assert record.status == RunStatus.FAILED
    assert record.error is not None and record.error.message == "a bug in a batch"
    assert client.kv.exists(keys.split("t-broken", record.head or "")) == 0


def test_the_step_that_applies_an_input_command_is_not_split(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = client.get_run(_run(client, "t-command", 3))
    assert first.status == RunStatus.COMPLETED
    opened: list[int] = []
    real_open = Split.open
    monkeypatch.setattr(Split, "open", lambda self, *a: opened.append(self.tasks) or real_open(self, *a))
    goto = fan({"n": 20})  # the Sends plan would send
    run_id = client.enqueue("split-wide", Command(goto=goto), thread_id="t-command")
    work(client)
    record = client.get_run(run_id)
    assert record.status == RunStatus.COMPLETED
    assert record.result["out"] == [0, 1, 4] + [i * i for i in range(20)]
    assert opened == []  # 20 tasks, over GRAPHQ_SHARD_MIN_TASKS=10, yet not split: the Command's step


def test_a_batch_left_more_often_than_the_resume_limit_fails_the_run(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHQ_MAX_RESUME_ATTEMPTS", "1")
    get_settings.cache_clear()
    real = Batch._run_tasks
    tries: list[int] = []

    def stalls(self: Batch) -> BatchFailure | None:
        if self.claim.batch != 1:
            return real(self)
        tries.append(self.claim.claims)
        self.split.kv.hset(self.split.key, "u:1", 0)  # its lease lapses: the process stalled past it
        raise RefusedWriteError("its writes were refused")

    monkeypatch.setattr(Batch, "_run_tasks", stalls)
    record = client.get_run(_run(client, "t-stalls", 20))
    assert tries == [1, 2]  # run, left, run again, left: then given up (GRAPHQ_MAX_RESUME_ATTEMPTS=1)
    assert record.status == RunStatus.FAILED and record.error is not None
    assert (record.error.type, record.error.step) == ("WorkerLost", 2)
    assert record.error.message == (
        "batch 1 of 3 of the split step was left 2 times (its worker died or stopped renewing its lease); "
        "not run again: the chain reached GRAPHQ_MAX_RESUME_ATTEMPTS=1"
    )


def test_a_cancel_during_a_split_step_lets_the_step_commit_then_ends_the_run(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    run_id = client.enqueue("split-wide", {"n": 40, "sleep_s": 0.05, "gate": True}, thread_id="t-cancel")
    wait_for(lambda: (tmp_path / "work.log").exists(), 60, "the split step's tasks to start")
    assert client.cancel(run_id).startswith("cancel requested")
    (tmp_path / "go").touch()
    record = ended(client, run_id, 60)
    assert record.status == RunStatus.CANCELED
    assert sorted(_ran_by(tmp_path)) == list(range(40))  # the step in flight finished: every task ran
    head = client.get_state("t-cancel")
    assert head.channel_values["out"] == [i * i for i in range(40)]  # and was committed, in task order
    assert [t.node for t in head.next_tasks] == ["join"]  # the step after it never ran


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (True, "Input should be a valid integer (got True)"),
        ("5", "Input should be a valid integer (got '5')"),
        (-1, "must be 0 ≤ value ≤ 1000000 (got -1)"),
    ],
)
def test_a_bad_shard_min_tasks_is_refused_naming_the_option(client: Client, value: Any, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        client.enqueue("split-wide", {"n": 3}, config={"shard_min_tasks": value})
    assert str(info.value) == f"run option shard_min_tasks: {why}"
    assert client.list_runs() == []


def test_a_split_steps_progress_events_read_as_an_unsplit_steps(client: Client, split: None) -> None:
    run_id = _run(client, "t-progress", 20)
    record = client.get_run(run_id)
    shown = [e.data for e in read_events(client.kv, record.thread_id, run_id) if e.mode == "progress"]
    assert shown[0] == {"done": 0, "total": 20} and shown[-1] == {"done": 20, "total": 20}
    assert [list(data) for data in shown] == [["done", "total"]] * len(shown)  # one key order, as JSON shows


def test_the_first_helpers_go_to_the_front_of_the_queue_and_a_yielding_ones_to_the_back(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    ctx = WorkerContext.build(redis_client, Settings(redis_url=redis_url), REGISTRY)
    run = client.get_run(client.enqueue("split-wide", {"n": 3}, thread_id="t-front"))  # its step job waits
    split = Split(redis_client, "t-front", "cp1", tasks=64, size=32)
    call_helpers(ctx, run, split, 1, at_front=True)
    call_helpers(ctx, run, split, 1, at_front=False)
    queue = ctx.queue.queue("split-wide")
    assert [job.func_name for job in queue.get_jobs()] == [BATCH_FUNC, STEP_FUNC, BATCH_FUNC]


def test_a_pinned_runs_helpers_go_to_its_versions_queue(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """A split step's batches run on the version of a pinned run: its helper jobs go to that version's
    queue, which only workers serving it listen on."""
    ctx = WorkerContext.build(redis_client, Settings(redis_url=redis_url), REGISTRY)
    run = client.get_run(client.enqueue("split-wide", {"n": 3}, thread_id="t-pinned"))
    version = "ab" * 32
    pinned = run.model_copy(update={"version": version})
    assert pinned.pinned
    call_helpers(ctx, pinned, Split(redis_client, "t-pinned", "cp1", tasks=64, size=32), 2, at_front=True)
    assert [job.func_name for job in ctx.queue.queue("split-wide", version).get_jobs()] == [BATCH_FUNC] * 2
    assert [job.func_name for job in ctx.queue.queue("split-wide").get_jobs()] == [STEP_FUNC]
