"""End to end with real processes: ``graphq worker`` subprocesses, ``graphq enqueue/state/runs/run``."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.embedded import EmbeddedRedis
from tests.cli_helpers import invoke, ok
from tests.envs import clean_env
from tests.workers import Procs, graphq, rq_states, wait_for, worker_children, worker_env

TIMEOUT_S = 20


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    """Environment of the subprocesses: the test Redis and the test workflows."""
    return worker_env(redis_url, "tests.workflows.basic")


def graphq_json(*args: str, env: dict[str, str]) -> Any:
    done = graphq(*args, "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_until_idle(kv: redis.Redis, count: int, timeout_s: float = 10.0) -> None:
    """Wait until ``count`` RQ workers wait for jobs (registered, signal handlers installed, state idle)."""
    wait_for(lambda: len(states := rq_states(kv)) >= count and set(states) == {"idle"}, timeout_s, "workers")


def test_enqueue_wait_with_a_worker_process(env: dict[str, str], procs: Procs) -> None:
    procs.start("worker", env=env, script=True)
    done = graphq("enqueue", "counter", "--input", '{"limit": 5}', "--thread", "e2e-1", "--wait", env=env)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    history = graphq_json("state", "e2e-1", "--history", env=env)
    assert [c["step"] for c in history] == [5, 4, 3, 2, 1, 0, -1]
    assert [c["source"] for c in history] == ["loop"] * 6 + ["input"]
    record = graphq_json("runs", "show", run_id, env=env)
    assert record["status"] == "completed"
    assert record["result"]["n"] == 5 and record["result"]["log"] == [f"bump{i}" for i in range(1, 6)]


def test_batch_on_two_burst_worker_processes(
    env: dict[str, str], procs: Procs, redis_client: redis.Redis, tmp_path: Path
) -> None:
    items = [[1], [1, 2], [1, 2, 3], [4, 5], [7], [10, 20, 30, 40]]
    batch = tmp_path / "runs.jsonl"
    batch.write_text(
        "".join(
            json.dumps({"input": {"items": i}, "tenant": f"t{n % 2}"}) + "\n" for n, i in enumerate(items)
        )
    )
    done = graphq("enqueue", "fanout", "--input-file", str(batch), env=env)
    assert done.returncode == 0, done.stderr
    ids = done.stdout.split()
    assert len(ids) == 6
    worker = procs.start("worker", "--burst", "--concurrency", "2", env=env)
    assert worker.wait(TIMEOUT_S) == 0
    listed = {r["id"]: r["status"] for r in graphq_json("runs", "list", env=env)}
    assert listed == dict.fromkeys(ids, "completed")
    url, workflows = env["GRAPHQ_REDIS_URL"], env["GRAPHQ_WORKFLOWS"]
    for run_id, numbers in zip(ids, items, strict=True):  # in-process: runs show as a process is tested above
        record = json.loads(ok(invoke(workflows, url, "runs", "show", run_id, "-o", "json")).stdout)
        assert record["status"] == "completed", record
        assert record["result"]["total"] == sum(n * n for n in numbers)
        assert sorted(record["result"]["squares"]) == sorted(n * n for n in numbers)
    assert redis_client.llen("rq:queue:graphq:fanout") == 0


def test_workers_exit_when_their_parent_is_sigkilled(
    env: dict[str, str], procs: Procs, redis_client: redis.Redis
) -> None:
    """A SIGKILLed `graphq worker -c 2` must not leave orphan workers taking jobs."""
    parent = procs.start("worker", "--concurrency", "2", env=env)
    wait_until_idle(redis_client, 2)
    workers = worker_children(parent.pid)
    assert len(workers) == 2
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 15
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]


def test_failed_run_end_to_end(env: dict[str, str], procs: Procs) -> None:
    procs.start("worker", env=env)
    done = graphq("enqueue", "failing", "--wait", env=env)
    assert done.returncode == 1
    run_id = done.stdout.strip()
    assert run_id in done.stderr and "did not complete" in done.stderr and "Traceback" not in done.stderr
    shown = graphq("runs", "show", run_id, env=env)
    assert shown.returncode == 0
    assert "kaboom" in shown.stdout and "failed" in shown.stdout


def test_run_with_embedded_redis_survives_a_restart(redis_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = clean_env()
    env = {**base, "GRAPHQ_DATA_DIR": str(data), "GRAPHQ_WORKFLOWS": "tests.workflows.basic"}
    for limit in (3, 5):  # the second run continues the thread (C2): n goes on from 3 to 5
        done = graphq("run", "counter", "--input", json.dumps({"limit": limit}), "--thread", "local", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["n"] == limit
        assert "(embedded; data in" in done.stderr
    assert (data / "appendonly.aof").exists()
    listed = graphq_json("runs", "list", env=env)  # no URL: reads the local data of `graphq run`
    assert [r["status"] for r in listed] == ["completed", "completed"]
    history = graphq_json("state", "local", "--history", env=env)
    assert [(c["step"], c["source"]) for c in history] == [
        (7, "loop"),
        (6, "loop"),
        (5, "loop"),
        (4, "input"),
        (3, "loop"),
        (2, "loop"),
        (1, "loop"),
        (0, "loop"),
        (-1, "input"),
    ]
    with EmbeddedRedis(data_dir=data) as server:  # the data of both runs is still there (AOF reload)
        client = redis.Redis.from_url(server.url)
        assert client.zcard(keys.runs_index()) == 2
        assert client.llen(keys.history("local")) == 5 + 4
        client.close()


def test_ctrl_c_stops_a_local_run_and_its_embedded_redis(tmp_path: Path, procs: Procs) -> None:
    base = clean_env()
    env = {
        **base,
        "GRAPHQ_DATA_DIR": str(tmp_path / "data"),
        "GRAPHQ_WORKFLOWS": "tests.workflows.basic",
        "GRAPHQ_MAX_SUPER_STEPS": "100000",
        "PYTHONUNBUFFERED": "1",
    }
    proc = procs.start("run", "counter", "--input", '{"limit": 100000}', "--thread", "long", env=env)
    deadline = time.monotonic() + 10
    while "step  10" not in procs.logged(proc):
        assert proc.poll() is None and time.monotonic() < deadline, procs.logged(proc)
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 130, procs.logged(proc)
    output = procs.logged(proc)
    assert "error: interrupted: run " in output and "Traceback" not in output
    port = int(output.split("redis://127.0.0.1:", 1)[1].split("/", 1)[0])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # the embedded server is gone
