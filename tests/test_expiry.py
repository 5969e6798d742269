"""Human-request expiry (R13, K2): deadlines from interrupt(timeout_s=...) and request_timeout_s, the
deadline index, the scan, and answers racing it. Real Redis; one case end to end with a worker process."""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
import redis

from graphcore import START, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.expiry import DEADLINE_FIELD, due, expire
from graphcore.backend.reaper import iso_ms, server_ms
from graphcore.backend.runs import RunError, RunStatus, RunStore
from graphcore.engine.interrupts import NotAwaitingInputError
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.settings import Settings, get_settings
from graphq.worker import logs
from graphq.worker.housekeeping.expiry import RequestExpiry
from tests.cli_helpers import invoke, ok, process_state_restored
from tests.workers import Start, wait_for, work, worker_env
from tests.workflows import expiry

MODULE = "tests.workflows.expiry"
REGISTRY = Registry.load([MODULE])
INDEX = keys.request_deadlines()


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, MODULE, tmp_path)


def expired(request_id: str, deadline_ms: int) -> RunError:
    return RunError(
        type="RequestExpired",
        message=f"request {request_id} was not answered by its deadline {iso_ms(deadline_ms)} "
        "(interrupt timeout_s or the workflow's request_timeout_s)",
    )


def paused(client: Client, timeout: float | None, workflow: str = "timed-ask") -> str:
    """A run of ``workflow`` paused at its request (``timeout``: the node's timeout_s)."""
    run_id = client.enqueue(workflow, {} if timeout is None else {"timeout": timeout})
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    return run_id


def scanner(redis_url: str, **settings: float) -> RequestExpiry:
    return RequestExpiry(redis.Redis.from_url(redis_url), Settings(redis_url=redis_url, **settings))


def test_a_request_expires_at_the_next_scan_on_a_worker(
    client: Client, redis_client: redis.Redis, start: Start, redis_url: str
) -> None:
    """End to end: interrupt(timeout_s=0.5) on a worker process scanning every 0.2 s."""
    start(GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S="0.2")
    run_id = client.enqueue("timed-ask", {"timeout": 0.5})
    wait_for(lambda: client.get_run(run_id).status == RunStatus.AWAITING_INPUT, what="the pause")
    run = client.get_run(run_id)
    [request] = client.requests(run_id)
    deadline = request.deadline_ms
    assert deadline == round(datetime.fromisoformat(request.created_at).timestamp() * 1000 + 500)
    member = keys.lease_member(run.thread_id, run_id)
    assert redis_client.zrange(INDEX, 0, -1, withscores=True) == [(member.encode(), float(deadline))]
    [made] = client.run_requests(run_id)
    assert (made.deadline, made.deadline_ms) == (iso_ms(deadline), deadline)
    shown = ok(invoke(MODULE, redis_url, "runs", "show", run_id)).stdout
    assert f"request deadline │ {iso_ms(deadline)[:19].replace('T', ' ')} UTC (request {request.id}" in shown
    listed = json.loads(ok(invoke(MODULE, redis_url, "runs", "requests", run_id, "-o", "json")).stdout)
    assert [(r["id"], r["deadline_ms"], r["deadline"]) for r in listed] == [
        (request.id, deadline, iso_ms(deadline))
    ]

    done = wait_for(lambda: (r := client.get_run(run_id)).terminal and r, 10, "the expiry")
    assert done.status == RunStatus.CANCELED
    assert done.error == expired(request.id, deadline)
    assert datetime.fromisoformat(done.ended_at or "").timestamp() * 1000 >= deadline
    assert redis_client.exists(INDEX) == 0
    assert redis_client.hexists(keys.run(run.thread_id, run_id), DEADLINE_FIELD) == 0
    # handed over like other ends: by the scan right after it closed the run (a moment later, not with it)
    wait_for(lambda: redis_client.get(keys.thread_active(run.thread_id)) is None, 5, "the hand-over")
    *_, last = read_events(redis_client, run.thread_id, run_id)
    assert (last.mode, last.step, last.data) == (
        "status",
        1,
        {"status": "canceled", "error": f"RequestExpired: {done.error.message}"},
    )
    with pytest.raises(NotAwaitingInputError) as refused:
        client.answer(run_id, "yes")
    assert str(refused.value) == (
        f"run {run_id} is canceled: its request {request.id} expired at {iso_ms(deadline)}; nothing to answer"
    )
    with process_state_restored():
        answered = ok(invoke(MODULE, redis_url, "runs", "answer", run_id, "--value", '"yes"'), 2)
    assert answered.stderr.splitlines() == [f"error: {refused.value}"]


def test_a_backlog_drains_over_several_scans(client: Client, redis_url: str) -> None:
    runs = [paused(client, 0.05) for _ in range(5)]
    time.sleep(0.1)
    scan = scanner(redis_url, max_request_expirations_per_scan=2)
    closed = [scan.scan(), scan.scan(), scan.scan(), scan.scan()]
    assert closed == [runs[:2], runs[2:4], runs[4:], []]  # earliest deadline first, 2 a scan
    assert {client.get_run(r).status for r in runs} == {RunStatus.CANCELED}


def test_no_deadline_writes_nothing(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    run_id = paused(client, None)
    run = client.get_run(run_id)
    assert redis_client.exists(INDEX) == 0
    assert redis_client.hexists(keys.run(run.thread_id, run_id), DEADLINE_FIELD) == 0
    [made] = client.run_requests(run_id)
    assert (made.deadline, made.deadline_ms) == (None, None)
    assert client.requests(run_id)[0].deadline_ms is None
    assert scanner(redis_url).scan() == []
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT


def test_an_answer_before_the_deadline_removes_the_entry(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = paused(client, 30)
    run = client.get_run(run_id)
    assert redis_client.zcard(INDEX) == 1
    client.answer(run_id, "yes")
    assert redis_client.exists(INDEX) == 0
    assert redis_client.hexists(keys.run(run.thread_id, run_id), DEADLINE_FIELD) == 0
    work(client)
    assert client.get_run(run_id).result == {"timeout": 30, "answer": "yes"}
    assert scanner(redis_url).scan() == []


def test_a_cancel_removes_the_entry(client: Client, redis_client: redis.Redis) -> None:
    run_id = paused(client, 30)
    assert client.cancel(run_id) == "canceled"
    assert redis_client.exists(INDEX) == 0


def test_an_answer_racing_the_scan_either_wins_or_is_refused(client: Client, redis_url: str) -> None:
    """The answer first: the run continues and the scan changes nothing. The scan first: the answer is
    refused, naming the expiry."""
    won, lost = paused(client, 0.05), paused(client, 0.05)
    time.sleep(0.1)
    client.answer(won, "in time")
    [request] = client.requests(lost)
    assert scanner(redis_url).scan() == [lost]
    assert client.get_run(won).status == RunStatus.QUEUED
    work(client)
    assert client.get_run(won).result == {"timeout": 0.05, "answer": "in time"}
    with pytest.raises(NotAwaitingInputError, match=f"is canceled: its request {request.id} expired at "):
        client.answer(lost, "late")


def test_two_scanners_racing_close_each_run_once(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    runs = [paused(client, 0.05) for _ in range(6)]
    time.sleep(0.1)
    scanners = [scanner(redis_url), scanner(redis_url)]
    gate = threading.Barrier(2)
    closed: list[list[str]] = [[], []]

    def race(i: int) -> None:
        gate.wait()
        closed[i] = scanners[i].scan()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(closed[0] + closed[1]) == sorted(runs)  # each run once, by one of them
    for run_id in runs:
        run = client.get_run(run_id)
        events = read_events(redis_client, run.thread_id, run_id)
        assert [e.data.get("status") for e in events if e.mode == "status"].count("canceled") == 1


def test_the_workflow_request_timeout_applies(client: Client, redis_client: redis.Redis) -> None:
    run_id = paused(client, None, "default-ask")
    [request] = client.requests(run_id)
    assert request.deadline_ms == round(datetime.fromisoformat(request.created_at).timestamp() * 1000 + 500)
    assert redis_client.zscore(INDEX, keys.lease_member(client.get_run(run_id).thread_id, run_id)) == float(
        request.deadline_ms
    )


def test_the_reaper_command_runs_the_scan(client: Client, redis_url: str) -> None:
    run_id = paused(client, 0.05)
    time.sleep(0.1)
    with process_state_restored():
        assert ok(invoke(MODULE, redis_url, "reaper", "--once")).stdout == f"{run_id} expired\n"
    assert client.get_run(run_id).status == RunStatus.CANCELED


def test_a_bad_timeout_fails_the_run(client: Client) -> None:
    run_id = client.enqueue("timed-ask", {"timeout": -1})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED and run.error is not None
    assert (run.error.type, run.error.message) == (
        "ConfigError",
        "interrupt(timeout_s=...): must be a number of seconds > 0 (got -1)",
    )


def test_request_timeout_ranges_are_checked(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    g = StateGraph(expiry.Ask)
    g.add_node("ask", expiry.ask)
    g.add_edge(START, "ask")
    with pytest.raises(ConfigError, match=r"request_timeout_s: must be 0 < value \(got 0\)"):
        g.compile(name="zero", config={"request_timeout_s": 0})
    monkeypatch.setenv("GRAPHQ_MAX_RUN_TIMEOUT_S", "60")
    monkeypatch.setenv("GRAPHQ_RUN_TIMEOUT_S", "30")
    get_settings.cache_clear()
    too_long = g.compile(name="too-long", config={"request_timeout_s": 120})
    with pytest.raises(ConfigError) as refused:
        Registry({}).add(too_long)
    assert (
        str(refused.value)
        == "workflow 'too-long': request_timeout_s=120.0 is above the GRAPHQ_MAX_RUN_TIMEOUT_S=60.0"
    )
    with pytest.raises(
        ConfigError, match=r"^request_timeout_s=90\.0 is above the GRAPHQ_MAX_RUN_TIMEOUT_S=60\.0$"
    ):
        client.enqueue("timed-ask", {}, config={"request_timeout_s": 90})


def test_answering_one_of_two_requests_keeps_the_others_deadline(
    client: Client, redis_client: redis.Redis
) -> None:
    run_id = client.enqueue("timed-review", {"items": ["a", "b"]})
    work(client)
    first, second = client.requests(run_id)
    member = keys.lease_member(client.get_run(run_id).thread_id, run_id)
    assert redis_client.zscore(INDEX, member) == float(min(first.deadline_ms or 0, second.deadline_ms or 0))
    client.answer(run_id, {first.id: "yes"})
    assert redis_client.exists(INDEX) == 0
    work(client)
    [left] = client.requests(run_id)
    assert (left.id, left.deadline_ms) == (second.id, second.deadline_ms)  # counted from when it was asked
    assert redis_client.zscore(INDEX, member) == float(second.deadline_ms or 0)


def test_a_scan_inside_the_answers_transaction_wins_and_the_answer_is_refused(
    client: Client, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan closes the run after the answer read it (WATCH) and before its MULTI runs: the MULTI fails,
    the answer looks again and is refused, naming the expiry; nothing of it is stored."""
    from graphcore.backend import client as client_module

    run_id = paused(client, 0.05)
    time.sleep(0.1)
    [request] = client.requests(run_id)
    real = client_module.stage_admit
    scans: list[list[str]] = []

    def scan_first(*args: object, **kwargs: object) -> None:
        if not scans:
            scans.append(scanner(redis_url).scan())  # another connection: the answer's WATCH sees it
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client_module, "stage_admit", scan_first)
    with pytest.raises(NotAwaitingInputError, match=f"is canceled: its request {request.id} expired at "):
        client.answer(run_id, "late")
    assert scans == [[run_id]]
    run = client.get_run(run_id)
    assert run.status == RunStatus.CANCELED
    assert client.kv.exists(keys.answers(run.thread_id, "", run.head or "")) == 0


def test_an_answer_between_the_scans_read_and_its_script_wins(
    client: Client, redis_client: redis.Redis
) -> None:
    """The scan read the due entry, then the answer landed: the script finds the run no longer waiting for
    that request and changes nothing; the run continues."""
    run_id = paused(client, 0.05)
    time.sleep(0.1)
    [entry] = due(redis_client, server_ms(redis_client), 10)
    client.answer(run_id, "just in time")
    assert expire(redis_client, RunStore(redis_client), entry, server_ms(redis_client)) is None
    assert client.get_run(run_id).status == RunStatus.QUEUED
    work(client)
    assert client.get_run(run_id).result == {"timeout": 0.05, "answer": "just in time"}


def test_the_scans_line_carries_the_runs_context(
    client: Client, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = paused(client, 0.05)
    record = client.get_run(run_id)
    time.sleep(0.1)
    with caplog.at_level(logging.WARNING, logger="graphq.expiry"):
        assert scanner(redis_url).scan() == [run_id]
    [line] = [logs.TextFormatter().format(r) for r in caplog.records if r.name == "graphq.expiry"]
    context = f"[workflow=timed-ask run={run_id} thread={record.thread_id} tenant={record.tenant}]"
    assert line.endswith(context), line
