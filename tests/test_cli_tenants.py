"""`graphq tenants` and `graphq runs list --tenant/--status/--workflow/--stuck` (R8), in-process on
a real Redis."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import pytest
import redis

from graphcore.backend import published
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import CANCEL_ERROR, now_iso
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.cli.tenants import waited
from graphq.worker.queue import RQStepQueue
from graphq.worker.step.lease import Lease
from tests.cli_helpers import error_line, invoke, ok

MODULE = "tests.workflows.admission"
REGISTRY = Registry.load([MODULE])


@pytest.fixture
def client(redis_client: redis.Redis, redis_url: str) -> Client:
    """A client with 3 slots and b weighing 2; the limits are published as a worker would."""
    settings = Settings(redis_url=redis_url, max_concurrent_runs=3, tenant_weights="b=2")
    published.publish(redis_client, settings, "w-1")
    return Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))


def test_tenants_shows_running_queued_limit_and_oldest_wait(client: Client, redis_url: str) -> None:
    """The shell has no limits set: it shows the workers' (published) ones."""
    client.enqueue_many([RunRequest("tick", {}, tenant="acme") for _ in range(4)])
    client.enqueue_many([RunRequest("ticks", {}, tenant="b")])
    time.sleep(0.05)
    shown = json.loads(ok(invoke(MODULE, redis_url, "tenants", "-o", "json")).stdout)
    waits = [t.pop("oldest_wait_s") for t in shown["tenants"]]
    assert shown == {
        "limit": 3,
        "per_tenant_limit": None,
        "running": 3,
        "queued": 2,
        "tenants": [
            {"tenant": "acme", "weight": 1, "running": 3, "queued": 1, "limit": 3},
            {"tenant": "b", "weight": 2, "running": 0, "queued": 1, "limit": 3},
        ],
    }
    assert all(0.05 <= w < 10 for w in waits)
    table = ok(invoke(MODULE, redis_url, "tenants")).stdout.splitlines()
    assert [line.split()[:5] for line in table[2:4]] == [
        ["acme", "│", "1", "│", "3"],
        ["b", "│", "2", "│", "0"],
    ]
    assert table[-1] == "cluster: 3 running of 3 (GRAPHQ_MAX_CONCURRENT_RUNS), 2 queued"


def test_tenants_with_nothing_running(redis_url: str, redis_client: redis.Redis) -> None:
    out = ok(invoke(MODULE, redis_url, "tenants")).stdout.splitlines()
    assert out[-1] == "cluster: 0 running of no limit (GRAPHQ_MAX_CONCURRENT_RUNS unset), 0 queued"
    assert json.loads(ok(invoke(MODULE, redis_url, "tenants", "-o", "json")).stdout)["tenants"] == []


def test_waited() -> None:
    assert [waited(s) for s in (None, 4.24, 192, 7500)] == ["", "4.2 s", "3 min 12 s", "2 h 05 min"]


def test_runs_list_filters(client: Client, redis_url: str) -> None:
    a1, a2, a3, a4 = client.enqueue_many([RunRequest("tick", {}, tenant="a") for _ in range(4)])
    [b1] = client.enqueue_many([RunRequest("ticks", {}, tenant="b")])
    client.cancel(a1)

    def listed(*args: str) -> list[str]:
        return [
            r["id"]
            for r in json.loads(ok(invoke(MODULE, redis_url, "runs", "list", *args, "-o", "json")).stdout)
        ]

    assert listed("--tenant", "a") == [a4, a3, a2, a1]
    assert listed("--tenant", "a", "--status", "queued") == [a4, a3, a2]
    assert listed("--status", "canceled") == [a1]
    assert listed("--workflow", "ticks") == [b1]
    assert listed("--workflow", "ticks", "--tenant", "a") == []
    assert listed("--tenant", "a", "-n", "2") == [a4, a3]
    bad = ok(invoke(MODULE, redis_url, "runs", "list", "--status", "lost"), 2)
    assert error_line(bad).startswith("error: ")
    assert "'lost' is not one of 'queued', 'running', 'awaiting_input', 'completed'" in error_line(bad)


def test_runs_list_stuck_lists_the_runs_whose_lease_lapsed(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    dead, alive, _ = client.enqueue_many([RunRequest("tick", {}, tenant=t) for t in ("a", "b", "a")])
    for run_id, ttl_s, worker in ((dead, 0.05, "w-dead"), (alive, 30.0, "w-live")):
        run = client.get_run(run_id)
        lease = Lease(redis_client, run.thread_id, run_id, ttl_s, ttl_s / 2)
        assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), worker)[0] == 3
    time.sleep(0.1)
    [row] = json.loads(ok(invoke(MODULE, redis_url, "runs", "list", "--stuck", "-o", "json")).stdout)
    assert (row["id"], row["worker"], row["tenant"]) == (dead, "w-dead", "a")
    lapsed_ms = datetime.fromisoformat(row["lease_lapsed_at"]).timestamp() * 1000
    assert server_ms(redis_client) - 5000 < lapsed_ms <= server_ms(redis_client)
    assert (
        json.loads(
            ok(invoke(MODULE, redis_url, "runs", "list", "--stuck", "--tenant", "b", "-o", "json")).stdout
        )
        == []
    )
    table = ok(invoke(MODULE, redis_url, "runs", "list", "--stuck")).stdout.splitlines()
    assert table[2].split()[0] == dead and "w-dead" in table[2]
    mixed = ok(invoke(MODULE, redis_url, "runs", "list", "--stuck", "--chain", dead), 2)
    expected = "it does not combine with --tenant, --status, --workflow, --schedule or --stuck"
    assert f"--chain lists one chain; {expected}" in error_line(mixed)


def test_runs_show_says_a_queued_run_waits_for_a_slot_and_until_when(client: Client, redis_url: str) -> None:
    ids = client.enqueue_many([RunRequest("tick", {}, tenant="acme") for _ in range(4)])  # 3 slots
    waiting = ok(invoke(MODULE, redis_url, "runs", "show", ids[3])).stdout
    assert "waiting for │ a slot (GRAPHQ_MAX_CONCURRENT_RUNS[_PER_TENANT] or its workflow's)" in waiting
    created = client.get_run(ids[3]).created_at
    deadline = datetime.fromisoformat(created) + timedelta(seconds=86_400)
    assert f"deadline    │ {deadline:%Y-%m-%d %H:%M:%S} UTC (canceled if still waiting)" in waiting
    admitted = ok(invoke(MODULE, redis_url, "runs", "show", ids[0])).stdout
    assert "a slot" not in admitted and "deadline" not in admitted  # (no worker is live: it waits for one)
    as_json = json.loads(ok(invoke(MODULE, redis_url, "runs", "show", ids[3], "-o", "json")).stdout)
    assert as_json["waiting_for_slot_until"].startswith(f"{deadline:%Y-%m-%dT%H:%M:%S}")
