"""Faults in split (wide) super-steps, with real ``graphq worker`` processes and real signals: a helper
killed or stopped while it holds a batch, the step's owner killed mid-split, a cancel with interrupt, and
the step's ``progress`` events (graphq.worker.step.split, .splitting, .batch).

The workflow is tests/workflows/split_wide.py: one task per item, batches of 5 from 10 tasks on. Its ``block``
items wait for the file ``release``, so a batch is held at a known task while the test acts; each task
writes ``<item> <pid>`` to work.log (who ran it, how often).
"""

from __future__ import annotations

import collections
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphq.worker.step.split import Split
from tests.workers import Start, ended, graphq, rq_states, wait_for, worker_env
from tests.workflows.split_wide import wide

REGISTRY = Registry({"split-wide": wide})
BATCH = 5
STEPS = [3, 2, 1, 0, -1]
"""The steps of a wide run's checkpoints, newest first (the split step is 2): each step committed once."""


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(
        redis_url,
        "tests.workflows.split_wide",
        tmp_path,
        GRAPHQ_SHARD_MIN_TASKS="10",
        GRAPHQ_SHARD_BATCH_TASKS=str(BATCH),
        GRAPHQ_LEASE_TTL_S="2",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.3",
        GRAPHQ_REAPER_INTERVAL_S="0.5",
    )


def _log(tmp_path: Path, name: str = "work.log") -> list[tuple[int, int]]:
    """``(item, pid)`` of each line of ``name`` (work.log: a task started; canceled.log: it saw its cancel
    token), in order."""
    path = tmp_path / name
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(item), int(pid)) for item, pid in (line.split() for line in lines)]


def _runs(tmp_path: Path) -> collections.Counter[int]:
    """Item → how many times its task started."""
    return collections.Counter(item for item, _ in _log(tmp_path))


def _pid(worker_id: str | None) -> int:
    """The pid in a worker id (``host.pid.suffix``)."""
    assert worker_id is not None
    return int(worker_id.split(".")[-2])


def _started(tmp_path: Path, block: list[int], count: int) -> dict[int, int]:
    """Wait until ``count`` tasks of ``block`` started; returns item → the pid running it."""

    def started() -> list[tuple[int, int]]:
        found = [(i, p) for i, p in _log(tmp_path) if i in block]
        return found if len(found) == count else []

    return dict(wait_for(started, what=f"{count} blocked tasks to start"))


def _persisted(kv: redis.Redis, thread: str, head: str, count: int) -> None:
    """Wait until ``count`` tasks of the step after ``head`` persisted their writes."""
    pending = keys.pending_writes(thread, "", head)
    wait_for(lambda: kv.hlen(pending) == count, what=f"{count} tasks' pending writes")


def _progress(client: Client, thread: str, run_id: str) -> list[dict[str, Any]]:
    """The run's ``progress`` events, in stream order."""
    events = read_events(client.kv, thread, run_id, count=10_000)
    return [e.data for e in events if e.mode == "progress"]


def _counts_every_task_once(progress: list[dict[str, Any]], n: int) -> None:
    """A step's ``progress`` events: ``done`` never goes back, and the last one counts all ``n`` tasks."""
    done = [p["done"] for p in progress]
    assert done == sorted(done)
    assert {p["total"] for p in progress} == {n}
    assert progress[-1] == {"done": n, "total": n}


def _ends_with_its_status(client: Client, thread: str, run_id: str, status: str) -> int:
    """Check that the run's last event is its end (``status``); returns how many events it has."""
    events = list(read_events(client.kv, thread, run_id, count=10_000))
    assert (events[-1].mode, events[-1].data.get("status")) == ("status", status)
    return len(events)


def _result(input: dict[str, Any]) -> dict[str, Any]:
    """The result of the run of ``input``: every item's square once, in task order, and their sum."""
    out = [i * i for i in range(input["n"])]
    return {**input, "out": out, "total": sum(out)}


def _owner(client: Client, run_id: str) -> tuple[str, int]:
    """``(the step's head checkpoint, the pid of the process owning the split step)``, once it is split."""
    thread = client.get_run(run_id).thread_id

    def split_head() -> str | None:
        head = client.get_run(run_id).head
        return head if head is not None and Split.read(client.kv, thread, head) is not None else None

    head = wait_for(split_head, what="the split's record")
    return head, _pid(client.get_run(run_id).worker)


def test_a_helper_killed_holding_a_batch_reruns_only_that_batchs_unfinished_task(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    block = [2, 7, 12, 17]  # the third task of each of the 4 batches
    input = {"n": 20, "block": block}
    run_id = client.enqueue("split-wide", input, thread_id="t-helper")
    head, owner = _owner(client, run_id)
    running = _started(tmp_path, block, 2)  # one batch on each process, each held at its third task
    _persisted(client.kv, "t-helper", head, 8)  # the other 4 tasks of each
    [(killed_item, helper)] = [(i, p) for i, p in running.items() if p != owner]
    os.kill(helper, signal.SIGKILL)
    (tmp_path / "release").touch()
    record = ended(client, run_id, 60)
    assert (record.status, record.result) == (RunStatus.COMPLETED, _result(input))
    assert [r.id for r in client.chain(run_id)] == [run_id]  # its owner finished it
    ran = _runs(tmp_path)
    assert {i: n for i, n in ran.items() if n != 1} == {killed_item: 2}
    assert sorted(ran) == list(range(20))
    _counts_every_task_once(_progress(client, "t-helper", run_id), 20)


def test_the_process_started_in_place_of_a_killed_helper_gets_batches(
    client: Client, start: Start, tmp_path: Path, redis_client: redis.Redis
) -> None:
    start(processes=2)
    block = [2, 7]  # batches 0 and 1 held at their third task, one on each process
    input = {"n": 60, "block": block, "sleep_s": 0.3}
    run_id = client.enqueue("split-wide", input, thread_id="t-replaced")
    _, owner = _owner(client, run_id)
    running = _started(tmp_path, block, 2)
    [helper] = [p for p in running.values() if p != owner]
    os.kill(helper, signal.SIGKILL)
    wait_for(lambda: rq_states(redis_client).count("idle") >= 1, what="the process started in its place")
    (tmp_path / "release").touch()
    record = ended(client, run_id, 60)
    assert (record.status, record.result) == (RunStatus.COMPLETED, _result(input))
    ran_on = {pid for _, pid in _log(tmp_path)}
    assert len(ran_on - {owner, helper}) == 1  # the new process ran batches of the step it joined


def test_a_killed_helpers_batch_is_lapsed_at_once_by_its_supervisor(
    client: Client, start: Start, tmp_path: Path
) -> None:
    """With a 60 s lease TTL the run still ends within 30 s: the supervisor lapses the dead child's batch."""
    start(processes=2, GRAPHQ_LEASE_TTL_S="60")
    block = [2, 7, 12, 17]
    input = {"n": 20, "block": block}
    run_id = client.enqueue("split-wide", input, thread_id="t-lapsed")
    _, owner = _owner(client, run_id)
    running = _started(tmp_path, block, 2)
    [helper] = [p for p in running.values() if p != owner]
    os.kill(helper, signal.SIGKILL)
    (tmp_path / "release").touch()
    record = ended(client, run_id, 30)
    assert (record.status, record.result) == (RunStatus.COMPLETED, _result(input))


def test_the_owner_killed_mid_split_is_continued_and_batches_done_are_not_run_again(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    block = [17, 22, 27]  # batches 3, 4 and 5 are held; 0, 1 and 2 finish
    input = {"n": 30, "block": block}
    run_id = client.enqueue("split-wide", input, thread_id="t-owner")
    head, owner = _owner(client, run_id)
    running = _started(tmp_path, block, 2)
    _persisted(client.kv, "t-owner", head, 3 * BATCH + 2 * (BATCH - 1))
    split = Split.read(client.kv, "t-owner", head)
    assert split is not None
    wait_for(lambda: split.state() == (3, [], {}), what="batches 0, 1 and 2 to be done")
    [killed_item] = [i for i, p in running.items() if p == owner]
    os.kill(owner, signal.SIGKILL)
    wait_for(lambda: len(client.chain(run_id)) == 2, 30, "the run's continuation")
    (tmp_path / "release").touch()
    first, second = client.chain(run_id)
    last = ended(client, second.id, 60)
    assert first.status == RunStatus.FAILED and first.error is not None
    assert first.error.type == "WorkerLost"
    assert (last.status, last.continued_from_run_id, last.result) == (
        RunStatus.COMPLETED,
        run_id,
        _result(input),
    )
    ran = _runs(tmp_path)
    assert {i: n for i, n in ran.items() if n != 1} == {killed_item: 2}
    assert sorted(ran) == list(range(30))
    _counts_every_task_once(_progress(client, "t-owner", second.id), 30)
    _ends_with_its_status(client, "t-owner", run_id, "failed")  # the helper's batch went on under the next
    assert [c.step for c in client.get_history("t-owner")] == STEPS


def test_a_helper_stopped_past_its_lease_has_its_late_writes_refused(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    block = [2, 7, 12, 17]
    input = {"n": 20, "block": block}
    run_id = client.enqueue("split-wide", input, thread_id="t-stop")
    head, owner = _owner(client, run_id)
    running = _started(tmp_path, block, 2)
    _persisted(client.kv, "t-stop", head, 8)
    [(stopped_item, helper)] = [(i, p) for i, p in running.items() if p != owner]
    os.kill(helper, signal.SIGSTOP)
    try:
        (tmp_path / "release").touch()
        record = ended(client, run_id, 60)  # the owner took the stopped batch over once its lease lapsed
    finally:
        os.kill(helper, signal.SIGCONT)
    assert (record.status, record.result) == (RunStatus.COMPLETED, _result(input))
    run_key = keys.run("t-stop", run_id)

    def refused() -> dict[bytes, bytes]:
        return {k: v for k, v in client.kv.hgetall(run_key).items() if k.startswith(b"refused:")}

    late = wait_for(refused, what="the stopped helper's late writes to be refused")
    assert late == {b"refused:pending": b"1"}  # its task's writes: the batch ends there, writing nothing more
    ran = _runs(tmp_path)
    assert {i: n for i, n in ran.items() if n != 1} == {stopped_item: 2}
    assert [p for i, p in _log(tmp_path) if i == stopped_item] == [helper, owner]
    assert [c.step for c in client.get_history("t-stop")] == STEPS
    assert client.kv.exists(keys.pending_writes("t-stop", "", head)) == 0
    assert client.get_run(run_id).result == _result(input)


def _beats(kv: redis.Redis, times: int) -> None:
    """Wait until every live worker process beat ``times`` more times (its lease keeper ticks as often)."""
    seen: dict[bytes, list[float]] = {}

    def beaten() -> bool:
        for member, score in kv.zrange(keys.workers(), 0, -1, withscores=True):
            scores = seen.setdefault(member, [])
            if not scores or scores[-1] != score:
                scores.append(score)
        return bool(seen) and all(len(s) > times for s in seen.values())

    wait_for(beaten, what=f"{times} more heartbeats of each worker")


def test_a_cancel_with_interrupt_reaches_the_tasks_of_every_batch_and_nothing_follows_the_end(
    client: Client, start: Start, tmp_path: Path, env: dict[str, str], redis_client: redis.Redis
) -> None:
    start(processes=2)
    items = list(range(10))  # two batches: the owner's and a helper's
    run_id = client.enqueue("split-wide", {"n": 10, "block": items, "heed": True}, thread_id="t-cancel")
    _, owner = _owner(client, run_id)
    running = _started(tmp_path, items, 10)
    done = graphq("runs", "cancel", run_id, "--interrupt", env=env)
    assert done.returncode == 0, done.stderr
    record = ended(client, run_id, 60)
    assert record.status == RunStatus.CANCELED
    wait_for(lambda: len(_log(tmp_path, "canceled.log")) == 10, what="every task to see the cancel")
    assert sorted(_log(tmp_path, "canceled.log")) == sorted(running.items())
    wait_for(lambda: sorted(rq_states(redis_client)) == ["idle", "idle"], 30, "both processes to be idle")
    assert len(set(running.values())) == 2 and owner in running.values()
    events = _ends_with_its_status(client, "t-cancel", run_id, "canceled")
    _beats(redis_client, 3)
    assert len(list(read_events(client.kv, "t-cancel", run_id, count=10_000))) == events


def test_a_helper_that_wakes_after_the_cancel_ended_the_run_stops_its_tasks(
    client: Client, start: Start, tmp_path: Path, env: dict[str, str]
) -> None:
    """The owner closes the split as it ends the run, taking every batch's lease: a helper whose keeper
    looks only then (here: stopped meanwhile) must still see the cancel, else its tasks run on."""
    start(processes=2)
    items = list(range(10))
    run_id = client.enqueue("split-wide", {"n": 10, "block": items, "heed": True}, thread_id="t-woken")
    _, owner = _owner(client, run_id)
    running = _started(tmp_path, items, 10)
    [helper] = set(running.values()) - {owner}
    os.kill(helper, signal.SIGSTOP)
    try:
        assert graphq("runs", "cancel", run_id, "--interrupt", env=env).returncode == 0
        assert ended(client, run_id, 60).status == RunStatus.CANCELED
    finally:
        os.kill(helper, signal.SIGCONT)
    wait_for(lambda: len(_log(tmp_path, "canceled.log")) == 10, what="every task to see the cancel")
    assert sorted(_log(tmp_path, "canceled.log")) == sorted(running.items())
    _ends_with_its_status(client, "t-woken", run_id, "canceled")


def test_the_progress_of_a_split_step_never_goes_back_and_ends_at_every_task(
    client: Client, start: Start, tmp_path: Path
) -> None:
    start(processes=2)
    input = {"n": 60, "sleep_s": 0.02}
    run_id = client.enqueue("split-wide", input, thread_id="t-progress")
    record = ended(client, run_id, 60)
    assert (record.status, record.result) == (RunStatus.COMPLETED, _result(input))
    progress = _progress(client, "t-progress", run_id)
    _counts_every_task_once(progress, 60)
    assert progress[0] == {"done": 0, "total": 60}
    assert len(set(pid for _, pid in _log(tmp_path))) == 2  # batches on both processes
