"""Bulk operations (``Client.cancel_runs``, ``resume_runs``, ``delete_threads``; ``graphq runs cancel``,
``runs resume`` and ``threads delete`` with filters), on a real Redis."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.connection import Connection

from graphcore import keys
from graphcore.backend.bulk import BulkResult
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunFilter, RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from graphcore.settings import Settings
from graphq.cli.bulk import perform
from graphq.cli.errors import CliError
from graphq.worker.queue import RQStepQueue
from tests.cli_helpers import error_line, invoke, ok
from tests.workers import ended, wait_for, work, worker_env

MODULE = "tests.workflows.admission"
REGISTRY = Registry.load([MODULE, "tests.workflows.node_errors"])
FAILING = f"{MODULE},tests.workflows.node_errors"

QUEUED = RunFilter(tenant="a", status=RunStatus.QUEUED)


def statuses(client: Client, tenant: str) -> dict[str, int]:
    """How many runs of ``tenant`` have each status."""
    counted: dict[str, int] = {}
    for run in client.list_runs(10_000, RunFilter(tenant=tenant)):
        counted[run.status.value] = counted.get(run.status.value, 0) + 1
    return counted


def enqueue(client: Client, tenant: str, n: int) -> list[str]:
    """``n`` queued runs of ``tick`` for ``tenant``, each on a thread of its own."""
    return client.enqueue_many([RunRequest("tick", {}, tenant=tenant) for _ in range(n)])


def test_cancel_runs_cancels_one_tenants_queued_runs_and_again_nothing(client: Client) -> None:
    enqueue(client, "a", 300)
    enqueue(client, "b", 200)
    ended = enqueue(client, "a", 4)
    for run_id in ended:
        client.cancel(run_id)

    first = client.cancel_runs(RunFilter(tenant="a"))
    assert first == BulkResult(
        matched=304, done=300, skipped={"already ended": 4}, sample=first.sample, dry_run=False
    )
    assert first.sample == ended[::-1] + first.sample[4:] and len(first.sample) == 10  # newest first
    assert statuses(client, "a") == {"canceled": 304}
    assert statuses(client, "b") == {"queued": 200}
    again = client.cancel_runs(RunFilter(tenant="a"))
    assert (again.matched, again.done, again.requested, again.skipped) == (304, 0, 0, {"already ended": 304})
    assert client.cancel_runs(QUEUED).matched == 0


def test_cancel_runs_hands_each_thread_to_its_next_run(client: Client, redis_client: redis.Redis) -> None:
    """A thread whose active run is canceled goes to its next waiting run of another tenant; one whose
    runs are all canceled is idle."""
    both = client.enqueue_many([RunRequest("tick", {}, tenant="a", thread_id="t1") for _ in range(2)])
    first, kept = client.enqueue_many([RunRequest("tick", {}, tenant=t, thread_id="t2") for t in ("a", "b")])
    result = client.cancel_runs(QUEUED)
    assert (result.matched, result.done, result.skipped) == (3, 3, {})
    assert [client.get_run(r).status for r in (*both, first)] == [RunStatus.CANCELED] * 3
    assert redis_client.get(keys.thread_active("t1")) is None
    assert redis_client.llen(keys.thread_waiting("t1")) == 0
    assert redis_client.get(keys.thread_active("t2")) == kept.encode()
    assert redis_client.llen(keys.thread_waiting("t2")) == 0
    assert client.get_run(kept).status == RunStatus.QUEUED


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, MODULE, tmp_path)


def test_cancel_runs_applies_the_one_run_rules_to_a_running_and_a_waiting_run(
    client: Client, redis_client: redis.Redis, worker: subprocess.Popen[bytes]
) -> None:
    """A run awaiting input ends canceled at once; a running one, whose step a worker holds, is asked to
    stop before its next super-step; a second call does nothing more to either."""
    waiting = client.enqueue("ask", {}, tenant="a")
    wait_for(lambda: client.get_run(waiting).status == RunStatus.AWAITING_INPUT, 60, "the question")
    running = client.enqueue("ticks", {"sleep": 5}, tenant="a")
    lease = keys.lease(client.get_run(running).thread_id, running)
    wait_for(lambda: redis_client.exists(lease), 60, "its first step held")
    dry = client.cancel_runs(RunFilter(tenant="a"), dry_run=True)
    assert (dry.matched, dry.done, dry.requested, dry.skipped, dry.dry_run) == (2, 1, 1, {}, True)
    assert redis_client.hget(keys.run(client.get_run(running).thread_id, running), "cancel") is None
    assert client.get_run(waiting).status == RunStatus.AWAITING_INPUT
    first = client.cancel_runs(RunFilter(tenant="a"))
    assert (first.matched, first.done, first.requested, first.skipped) == (2, 1, 1, {})
    assert client.get_run(waiting).status == RunStatus.CANCELED
    assert redis_client.hget(keys.run(client.get_run(running).thread_id, running), "cancel") == b"cooperative"
    second = client.cancel_runs(RunFilter(tenant="a"))
    assert (second.matched, second.requested) == (2, 0)
    assert (second.done, second.skipped) in (
        (0, {"already ended": 1, "cancel requested already": 1}),  # its step still in flight
        (0, {"already ended": 2}),  # its step was committed meanwhile, and the run ended with it
        (1, {"already ended": 1}),  # its step was committed, and no worker held the next one yet
    )
    assert ended(client, running, 60).status == RunStatus.CANCELED
    assert client.get_run(running).step == 1  # the step in flight was committed, the next one never ran
    third = client.cancel_runs(RunFilter(tenant="a"))
    assert (third.done, third.requested, third.skipped) == (0, 0, {"already ended": 2})


def test_dry_run_counts_what_the_rules_would_do_and_changes_nothing(client: Client) -> None:
    ids = enqueue(client, "a", 12)
    enqueue(client, "b", 3)
    for run_id in ids[:5]:
        client.cancel(run_id)
    result = client.cancel_runs(RunFilter(tenant="a"), dry_run=True, batch=4)
    assert result == BulkResult(
        matched=12, done=7, skipped={"already ended": 5}, sample=ids[::-1][:10], dry_run=True
    )
    assert statuses(client, "a") == {"canceled": 5, "queued": 7}
    done = client.cancel_runs(RunFilter(tenant="a"))
    assert (done.done, done.skipped) == (result.done, result.skipped)


def test_stop_between_pages_keeps_the_counts_so_far(client: Client) -> None:
    enqueue(client, "a", 250)
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 1  # after the first page

    pages: list[int] = []
    result = client.cancel_runs(QUEUED, batch=100, stop=stop, progress=lambda r: pages.append(r.done))
    assert (result.matched, result.done, result.stopped, pages) == (250, 100, True, [100])
    assert statuses(client, "a") == {"canceled": 100, "queued": 150}
    rest = client.cancel_runs(QUEUED, batch=100)
    assert (rest.matched, rest.done, rest.stopped) == (150, 150, False)


class _Counting(Connection):
    """A connection that counts the round trips it makes (each packed send: one command, or a pipeline)."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        type(self).sent += 1
        super().send_packed_command(command, check_health)


@pytest.fixture
def counted(redis_url: str) -> Iterator[Client]:
    """A client whose round trips :class:`_Counting` counts."""
    kv = redis.Redis.from_url(redis_url, connection_class=_Counting)
    yield Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=redis_url)))
    kv.close()


def test_a_bulk_cancel_takes_a_few_round_trips_per_page(client: Client, counted: Client) -> None:
    enqueue(client, "a", 1000)
    counted.cancel_runs(QUEUED, dry_run=True)  # connections made
    _Counting.sent = 0
    result = counted.cancel_runs(QUEUED, batch=500)
    assert (result.matched, result.done) == (1000, 1000)
    assert _Counting.sent <= 2 * 3 + 2 * 15  # 3 per 500 ids read, at most 15 per page of 500 canceled


FAILED_A = RunFilter(tenant="a", status=RunStatus.FAILED)


def failed_runs(client: Client) -> tuple[list[str], str, str]:
    """30 failed runs of tenant a and 5 of tenant b, each on a thread of its own, then two on thread t of
    tenant a (the second ran after the first, on its checkpoints): (the 30, the older and the newer of t)."""
    ids = client.enqueue_many([RunRequest("keyerror", {}, tenant="a") for _ in range(30)])
    client.enqueue_many([RunRequest("keyerror", {}, tenant="b") for _ in range(5)])
    older, newer = client.enqueue_many(
        [RunRequest("keyerror", {}, tenant="a", thread_id="t") for _ in range(2)]
    )
    assert work(client)
    assert statuses(client, "a") == {"failed": 32}
    return ids, older, newer


def test_resume_runs_resumes_failed_runs_but_not_one_whose_thread_went_on(
    client: Client, counted: Client
) -> None:
    ids, older, newer = failed_runs(client)
    dry = counted.resume_runs(FAILED_A, dry_run=True)  # (and connections made)
    assert (dry.matched, dry.done, dry.skipped) == (32, 31, {"its thread has a newer run": 1})
    assert statuses(client, "a") == {"failed": 32}
    _Counting.sent = 0
    result = counted.resume_runs(FAILED_A)
    assert (result.matched, result.done, result.skipped) == (32, 31, {"its thread has a newer run": 1})
    assert _Counting.sent <= 3 + 15  # the ids read, then at most 15 for the page: not one per run
    for run_id in [*ids, newer]:
        record = client.get_run(run_id)
        follower = client.get_run(record.continued_by_run_id or "")
        assert (follower.continued_from_run_id, follower.status, follower.tenant) == (run_id, "queued", "a")
    assert client.get_run(older).continued_by_run_id is None
    assert statuses(client, "a") == {"failed": 32, "queued": 31}
    assert statuses(client, "b") == {"failed": 5}
    again = client.resume_runs(FAILED_A)
    assert (again.matched, again.done) == (32, 0)
    assert again.skipped == {"continued already": 31, "its thread has a newer run": 1}
    assert statuses(client, "a") == {"failed": 32, "queued": 31}


def test_resume_refuses_a_run_whose_thread_has_a_newer_run(client: Client) -> None:
    _, older, newer = failed_runs(client)
    with pytest.raises(InvalidUpdateError) as raised:
        client.resume(older)
    assert str(raised.value) == (
        f"run {older} is not the newest run of thread 't': run {newer} came after it; a resume continues a "
        f"thread from its newest run (graphq runs resume {newer}, once it ended)"
    )
    assert client.get_run(older).continued_by_run_id is None
    assert client.get_run(client.resume(newer)).continued_from_run_id == newer


# -- the CLI


def test_cli_resume_with_filters(client: Client, redis_url: str) -> None:
    failed_runs(client)
    dry = ok(invoke(FAILING, redis_url, "runs", "resume", "--status", "failed", "--tenant", "a", "--dry-run"))
    assert dry.stdout.splitlines()[0] == (
        "32 runs match: 31 to resume, 1 skipped: its thread has a newer run (dry run, nothing changed); the "
        "first 10:"
    )
    done = ok(invoke(FAILING, redis_url, "runs", "resume", "--status", "failed", "--tenant", "a", "--yes"))
    assert done.stdout == "resumed 31 runs; 1 skipped: its thread has a newer run\n"
    refused = ok(invoke(FAILING, redis_url, "runs", "resume", "--status", "failed", "--wait"), 2)
    assert error_line(refused) == "error: --wait go with RUN, one run; not with filters"


def test_cli_cancel_with_filters(client: Client, redis_url: str) -> None:
    ids = enqueue(client, "a", 3)
    enqueue(client, "b", 2)
    dry = ok(invoke(MODULE, redis_url, "runs", "cancel", "--tenant", "a", "--dry-run"))
    assert dry.stdout.splitlines() == ["3 runs match: 3 to cancel (dry run, nothing changed):", *ids[::-1]]
    refused = ok(invoke(MODULE, redis_url, "runs", "cancel", "--tenant", "a"), 2)
    assert error_line(refused) == "error: cancel 3 runs: add --yes to confirm (no terminal to ask on)"
    assert statuses(client, "a") == {"queued": 3}
    done = ok(invoke(MODULE, redis_url, "runs", "cancel", "--tenant", "a", "--yes"))
    assert done.stdout == "canceled 3 runs\n"
    assert "3 of 3 runs looked at" in done.stderr
    dry_again = ok(invoke(MODULE, redis_url, "runs", "cancel", "--tenant", "a", "--dry-run"))
    assert dry_again.stdout.splitlines()[0] == (
        "3 runs match: 0 to cancel, 3 skipped: already ended (dry run, nothing changed):"
    )
    again = ok(invoke(MODULE, redis_url, "runs", "cancel", "--tenant", "a", "--yes", "-o", "json"))
    assert json.loads(again.stdout) == {
        "matched": 3,
        "done": 0,
        "requested": 0,
        "skipped": {"already ended": 3},
        "sample": ids[::-1],
        "dry_run": False,
        "stopped": False,
    }
    text = ok(invoke(MODULE, redis_url, "runs", "cancel", "--tenant", "a", "--yes"))
    assert text.stdout == "canceled 0 runs; 3 skipped: already ended\n"
    assert "3 of 3 runs looked at" in text.stderr and "done" not in text.stderr
    assert statuses(client, "b") == {"queued": 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "error: runs cancel: give RUN, or at least one of --status, --workflow, --tenant, --schedule to "
            "cancel every run they match (see graphq runs cancel --help)",
        ),
        (["--dry-run"], "error: runs cancel: give RUN, or at least one of --status"),
        (
            ["RUN1", "--status", "queued", "--yes"],
            "error: RUN RUN1 names one run; --status, --yes go with filters instead of RUN, not with it",
        ),
        (["--tenant", "a b"], "error: --tenant: "),
        (
            ["--status", "bogus"],
            "error: main runs cancel: Invalid value for '--status': 'bogus' is not one of",
        ),
        (["--schedule", "nope", "--yes"], "error: no schedule"),
    ],
)
def test_cli_cancel_bad_input_is_one_line(redis_url: str, args: list[str], message: str) -> None:
    line = error_line(ok(invoke(MODULE, redis_url, "runs", "cancel", *args), 2))
    assert line.startswith(message), line


def test_ctrl_c_between_pages_prints_what_was_done_and_exits_130(client: Client) -> None:
    enqueue(client, "a", 250)
    before = signal.getsignal(signal.SIGINT)

    def work(progress: Any = None, **kw: Any) -> BulkResult:
        def then_ctrl_c(result: BulkResult) -> None:
            progress(result)
            os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, after the first page

        return client.cancel_runs(QUEUED, batch=100, progress=then_ctrl_c if progress else None, **kw)

    with pytest.raises(CliError) as raised:
        perform(
            work, verb="canceled", infinitive="cancel", noun="run", dry_run=False, yes=True, output="table"
        )
    assert raised.value.exit_code == 130
    assert raised.value.message == (
        "interrupted: canceled 100 runs; 150 of 250 runs left as they were (run the command again to go on)"
    )
    assert statuses(client, "a") == {"canceled": 100, "queued": 150}
    assert signal.getsignal(signal.SIGINT) is before  # put back


DAY_S = 86_400.0


def aged(client: Client, run_id: str, days: float) -> None:
    """Set the times of ``run_id``'s record ``days`` days back (no sleeping for days)."""
    record = client.get_run(run_id)
    then = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    fields = {"created_at": then} | ({"ended_at": then} if record.ended_at else {})
    client.kv.hset(keys.run(record.thread_id, run_id), mapping=fields)


def threads_of_all_ages(client: Client) -> None:
    """Threads of tenant a: old1..old3 (their runs ended 40 days ago), new (ended now), busy (a queued run
    created 40 days ago); of tenant b: oldb (ended 40 days ago)."""
    for thread, tenant in (("old1", "a"), ("old2", "a"), ("old3", "a"), ("new", "a"), ("oldb", "b")):
        run_id = client.enqueue("tick", {}, thread_id=thread, tenant=tenant)
        client.cancel(run_id)
        if thread != "new":
            aged(client, run_id, 40)
    aged(client, client.enqueue("tick", {}, thread_id="busy", tenant="a"), 40)


def threads_left(client: Client) -> list[str]:
    return sorted({r.thread_id for r in client.list_runs(1000)})


def test_delete_threads_older_than_a_duration(client: Client) -> None:
    threads_of_all_ages(client)
    dry = client.delete_threads(30 * DAY_S, RunFilter(tenant="a"), dry_run=True)
    assert (dry.matched, dry.done, dry.skipped) == (4, 3, {"a run is active on it": 1})
    assert sorted(dry.sample) == ["busy", "old1", "old2", "old3"]
    assert threads_left(client) == ["busy", "new", "old1", "old2", "old3", "oldb"]
    done = client.delete_threads(30 * DAY_S, RunFilter(tenant="a"))
    assert (done.matched, done.done, done.skipped) == (4, 3, {"a run is active on it": 1})
    assert threads_left(client) == ["busy", "new", "oldb"]
    assert [client.kv.exists(keys.thread_runs(t)) for t in ("old1", "old2", "old3")] == [0, 0, 0]
    again = client.delete_threads(30 * DAY_S, RunFilter(tenant="a"))
    assert (again.matched, again.done, again.skipped) == (1, 0, {"a run is active on it": 1})
    assert client.delete_threads(41 * DAY_S).matched == 0
    everywhere = client.delete_threads(30 * DAY_S)
    assert (everywhere.matched, everywhere.done) == (2, 1)  # busy (skipped) and oldb
    assert threads_left(client) == ["busy", "new"]


def test_a_bulk_thread_delete_takes_a_few_round_trips_per_page(client: Client, counted: Client) -> None:
    """1,000 old threads deleted in pages of 500: a fixed number of round trips a page, not one per thread."""
    ids = enqueue(client, "a", 1000)
    client.cancel_runs(QUEUED)
    pipe = client.kv.pipeline(transaction=False)
    then = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    for run_id, thread in zip(ids, client.kv.hmget(keys.run_threads(), ids), strict=True):
        pipe.hset(keys.run(thread.decode(), run_id), mapping={"created_at": then, "ended_at": then})
    pipe.execute()
    counted.delete_threads(30 * DAY_S, dry_run=True)  # connections made
    _Counting.sent = 0
    result = counted.delete_threads(30 * DAY_S, batch=500)
    assert (result.matched, result.done, result.skipped) == (1000, 1000, {})
    assert _Counting.sent <= 2 * 5 + 2 * 15  # 5 per 500 ids read, at most 15 per page of 500 deleted
    assert client.kv.zcard(keys.runs_index()) == 0


def test_cli_threads_delete_older_than(client: Client, redis_url: str) -> None:
    threads_of_all_ages(client)
    args = ("threads", "delete", "--older-than", "30d", "--tenant", "a")
    dry = ok(invoke(MODULE, redis_url, *args, "--dry-run"))
    assert dry.stdout.splitlines()[0] == (
        "4 threads match: 3 to delete, 1 skipped: a run is active on it (dry run, nothing changed):"
    )
    assert sorted(dry.stdout.splitlines()[1:]) == ["busy", "old1", "old2", "old3"]
    done = ok(invoke(MODULE, redis_url, *args, "--yes"))
    assert done.stdout == "deleted 3 threads; 1 skipped: a run is active on it\n"
    assert threads_left(client) == ["busy", "new", "oldb"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--older-than", "30x"],
            "error: --older-than '30x' is invalid: use a number and a unit s, m, h or d (e.g. 90s, 5m, 2h)",
        ),
        (
            ["--older-than", "0"],
            "error: --older-than '0' is invalid: use a duration above 0 (e.g. 90s, 5m, 2h): a thread used "
            "just now is not old",
        ),
        (
            [],
            "error: threads delete: give THREAD, or --older-than DURATION (e.g. 30d) to delete every thread "
            "unused that long",
        ),
        (["T1", "--older-than", "1d"], "error: give THREAD (T1) or --older-than DURATION, not both"),
        (
            ["T1", "--tenant", "a", "--yes"],
            "error: THREAD T1 names one thread; --tenant, --yes go with --older-than DURATION instead",
        ),
        (["--older-than", "1d", "--tenant", "a:b"], "error: --tenant: tenant 'a:b' is invalid"),
    ],
)
def test_cli_threads_delete_bad_input_is_one_line(redis_url: str, args: list[str], message: str) -> None:
    line = error_line(ok(invoke(MODULE, redis_url, "threads", "delete", *args), 2))
    assert line.startswith(message), line
