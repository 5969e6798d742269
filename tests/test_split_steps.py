"""Wide super-steps split into batches (graphq.worker.step.split): the same checkpoint as unsplit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.checkpoints import layout, serde
from graphcore.engine.registry import Registry
from graphcore.settings import get_settings
from graphcore.types import TaskWrites
from graphq.worker.step.split import Split
from tests.workers import Start, ended, work, worker_env
from tests.workflows.wide import wide

REGISTRY = Registry({"wide": wide})


def _run(client: Client, thread: str, n: int, **extra: object) -> str:
    run_id = client.enqueue("wide", {"n": n, **extra}, thread_id=thread)
    work(client)
    return run_id


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
    histories = [client.get_history(t) for t in ("t-split", "t-whole")]
    values = [[(cp.step, serde.dumps(cp.channel_values)) for cp in h] for h in histories]
    assert values[0] == values[1]


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(
        redis_url, "tests.workflows.wide", tmp_path, GRAPHQ_SHARD_MIN_TASKS="10", GRAPHQ_SHARD_BATCH_TASKS="5"
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
    run_id = client.enqueue("wide", {"n": 60, "sleep_s": 0.05}, thread_id="t-pool")
    record = ended(client, run_id, 60)
    assert record.status == RunStatus.COMPLETED
    assert record.result["out"] == [i * i for i in range(60)]
    ran = _ran_by(tmp_path)
    assert sorted(ran) == list(range(60))
    assert all(len(pids) == 1 for pids in ran.values())  # each task ran once
    assert len(set().union(*ran.values())) == 2  # on both processes


def test_a_step_splits_from_shard_min_tasks_tasks_in_batches_of_shard_batch_tasks(
    client: Client, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[int, int]] = []
    real_open = Split.open

    def spied(self: Split, *args: Any) -> bool:
        opened.append((self.tasks, self.batches))
        return real_open(self, *args)

    monkeypatch.setattr(Split, "open", spied)
    assert client.get_run(_run(client, "t-narrow", 9)).status == RunStatus.COMPLETED
    assert opened == []  # 9 tasks: under GRAPHQ_SHARD_MIN_TASKS=10
    assert client.get_run(_run(client, "t-wide", 10)).status == RunStatus.COMPLETED
    assert opened == [(10, 2)]  # batches of 7: 7 + 3


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
