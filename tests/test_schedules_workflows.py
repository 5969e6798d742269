"""A scheduler that lacks a scheduled workflow's code: started as the schedules guide's
block did (no ``--workflows``), every fire of a module workflow was recorded missed while ``schedules show``
said ``problem: null``. It now says so where a user looks: its start line, ``schedules list``/``show``,
``graphq health --scheduler --ready`` and ``/readyz``; started with the module, all of it is clear."""

from __future__ import annotations

import json
import signal
import socket
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.scheduler.api import Schedules
from graphq.scheduler.loop import Scheduler, live_schedulers
from tests.cli_helpers import invoke, ok
from tests.envs import clean_env
from tests.test_schedules_cli import http_status
from tests.workers import Procs, wait_for

MODULE = "tests.workflows.basic"
REGISTRY = Registry.load([MODULE])
SIM = datetime(2026, 5, 1, tzinfo=UTC).timestamp()
HINT = "--workflows MODULE or GRAPHQ_WORKFLOWS"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def show(redis_url: str, name: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(
        ok(invoke(MODULE, redis_url, "schedules", "show", name, "-o", "json")).stdout
    )
    return found


def test_a_scheduler_without_a_scheduled_workflow_says_so_and_one_with_it_starts_the_fire(
    procs: Procs,
    client: Client,
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    adder = Schedules(client, lambda: SIM)
    adder.add("mod", workflow="counter", cron="* * * * *")
    adder.add("still", workflow="counter", cron="* * * * *")
    adder.pause("still")  # a paused schedule does not fire: no problem of it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the probes read this test's status files
    env = clean_env(GRAPHQ_REDIS_URL=redis_url, PYTHONUNBUFFERED="1", TMPDIR=str(tmp_path))  # no workflows
    port = free_port()
    without = procs.start(
        "scheduler",
        "--metrics-port",
        str(port),
        env=env,
        GRAPHQ_SCHEDULER_INTERVAL_S="0.2",
        GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM + 90},0,0",
    )
    [fire] = wait_for(lambda: adder.history("mod"), what="the fire of 'mod'")
    assert (fire.outcome, fire.run_id) == ("missed", None)
    assert fire.note.startswith("not started: unknown workflow 'counter'")
    [started] = [line for line in procs.logged(without).splitlines() if line.startswith("graphq scheduler ")]
    instance = started.split()[2].rstrip(":")
    problem = (
        f"scheduler {instance} cannot load workflow 'counter': start it with {HINT}; its fires are recorded "
        "missed"
    )
    assert show(redis_url, "mod")["problem"] == problem
    assert started.endswith(
        f"; cannot load workflow 'counter' (schedule mod): start it with {HINT}; their fires are recorded "
        "missed"
    )
    assert show(redis_url, "still")["problem"] is None
    listed = json.loads(ok(invoke(MODULE, redis_url, "schedules", "list", "-o", "json")).stdout)
    assert [(s["name"], s["problem"]) for s in listed] == [("mod", problem), ("still", None)]
    table = ok(invoke(MODULE, redis_url, "schedules", "list")).stdout
    assert table.splitlines()[0].split()[-1] == "problem"
    cells = [line.split("│")[-1] for line in table.splitlines()[2:] if line.split("│")[-1].strip()]
    assert "".join(cells).replace(" ", "") == problem.replace(" ", "")  # the whole problem, wrapped
    unready = ok(invoke(MODULE, redis_url, "health", "--scheduler", "--ready"), 1)
    assert unready.stderr.strip() == (
        f"error: unhealthy: the scheduler (pid {without.pid}) cannot load workflow 'counter' (schedule mod): "
        f"start it with {HINT}; their fires are recorded missed"
    )
    ok(invoke(MODULE, redis_url, "health", "--scheduler"))  # liveness: a restart would not load it
    assert (http_status(port, "/readyz"), http_status(port, "/healthz")) == (503, 200)
    without.send_signal(signal.SIGTERM)
    assert without.wait(timeout=10) == 0
    assert redis_client.keys("graphq:scheduler*") == []  # its heartbeat, its entry in their index, the lock

    with_it = procs.start(
        "scheduler",
        env={**env, "GRAPHQ_WORKFLOWS": MODULE},
        GRAPHQ_SCHEDULER_INTERVAL_S="0.2",
        GRAPHQ_SCHEDULER_TEST_CLOCK=f"{SIM + 150},0,0",
    )
    newest = wait_for(lambda: [f for f in adder.history("mod") if f.outcome == "started"], what="a start")
    assert [f.run_id for f in newest] == ["mod-20260501T000200Z"]
    [started] = [line for line in procs.logged(with_it).splitlines() if line.startswith("graphq scheduler ")]
    assert "cannot load" not in started
    assert show(redis_url, "mod")["problem"] is None
    ok(invoke(MODULE, redis_url, "health", "--scheduler", "--ready"))
    with_it.send_signal(signal.SIGTERM)
    assert with_it.wait(timeout=10) == 0


def test_each_schedule_a_scheduler_cannot_load_is_logged_once_and_in_its_heartbeat(
    client: Client, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """In process, a scheduler whose client has no workflow: three ticks log the schedule once, its
    heartbeat lists no workflow and names the problem; paused, the schedule is no problem any more."""
    now = [SIM]
    Schedules(client, lambda: now[0]).add("a", workflow="counter", cron="* * * * *")
    sched = Scheduler(Client(client.kv, Registry({}), client.queue), Settings(), lambda: now[0], "s1")
    for _ in range(3):
        now[0] += 60
        sched.tick()
    logged = [r.getMessage() for r in caplog.records if "cannot load" in r.getMessage()]
    assert logged == [
        f"schedule a: this scheduler cannot load workflow 'counter': start it with {HINT}; its fires are "
        "recorded missed"
    ]
    [beat] = live_schedulers(redis_client)
    assert (beat["id"], beat["workflows"], beat["problem"]) == (
        "s1",
        [],
        f"cannot load workflow 'counter' (schedule a): start it with {HINT}; their fires are recorded missed",
    )
    Schedules(client, lambda: now[0]).pause("a")
    sched.tick()
    assert (sched.unloadable, live_schedulers(redis_client)[0]["problem"]) == ({}, None)
