"""Metrics (O1) and health endpoints (O2): a real `graphq worker --metrics-port` scraped over HTTP."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.connection import outlast
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphq.worker import metrics
from tests.workers import Procs, ended, graphq, wait_for, worker_env
from tests.workflows.shutdown import started

WORKFLOWS = "tests.workflows.basic,tests.workflows.shutdown"
REGISTRY = Registry.load(WORKFLOWS.split(","))
DASHBOARD = Path(__file__).resolve().parent.parent / "charts" / "graphq" / "dashboards" / "graphq.json"


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, WORKFLOWS, tmp_path, TMPDIR=str(tmp_path))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str) -> tuple[int, str]:
    """HTTP GET on localhost: (status, body)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """(name, labels) → value of every sample in a Prometheus text exposition."""
    found = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        found[(match.group(1), labels)] = float(match.group(3))
    return found


def value(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, have), v in scraped.items() if n == name and want <= have)


def start_worker(procs: Procs, env: dict[str, str], port: int, concurrency: int) -> subprocess.Popen[bytes]:
    proc = procs.start("worker", "--concurrency", str(concurrency), "--metrics-port", str(port), env=env)
    wait_for(lambda: get(port, "/readyz")[0] == 200, what="/readyz 200")
    return proc


def workload(client: Client) -> list[str]:
    """3 runs of the 2-step counter and 1 failing run."""
    runs = [client.enqueue("counter", {"limit": 2}, tenant="acme") for _ in range(3)]
    runs.append(client.enqueue("failing", {"n": 1}, tenant="beta"))
    for run_id in runs:
        ended(client, run_id)
    return runs


@pytest.mark.parametrize("concurrency", [1, 2])
def test_metrics_after_a_known_workload(
    client: Client, procs: Procs, env: dict[str, str], concurrency: int
) -> None:
    port = free_port()
    start_worker(procs, env, port, concurrency)
    runs = workload(client)
    assert [client.get_run(r).status for r in runs] == [RunStatus.COMPLETED] * 3 + [RunStatus.FAILED]
    # A step is counted as its job returns, just after its commit ended the run, in three writes one after
    # another (steps_total, the duration, runs_total): wait for the last two of every step (a scrape between
    # them, from another process's file with --concurrency 2, saw steps_total 8 and runs_total 3).
    got = wait_for(
        lambda: (
            (s := samples(get(port, "/metrics")[1]))
            and value(s, "graphq_step_duration_seconds_count") == 8
            and value(s, "graphq_runs_total") == 4
            and s
        ),
        what="the 8 steps (6 counter, 2 failing) and the 4 runs to be counted",
    )
    assert value(got, "graphq_steps_total", workflow="counter") == 6
    assert value(got, "graphq_steps_total", workflow="counter", outcome="committed") == 3
    assert value(got, "graphq_steps_total", workflow="counter", outcome="completed") == 3
    assert value(got, "graphq_steps_total", workflow="failing", outcome="failed") == 1
    assert value(got, "graphq_steps_total", workflow="failing", outcome="committed") == 1
    assert value(got, "graphq_runs_total", workflow="counter", status="completed") == 3
    assert value(got, "graphq_runs_total", workflow="failing", status="failed") == 1
    assert value(got, "graphq_step_duration_seconds_count", workflow="counter") == 6
    assert value(got, "graphq_step_duration_seconds_bucket", workflow="counter", le="+Inf") == 6
    assert value(got, "graphq_step_duration_seconds_sum", workflow="counter") > 0
    assert value(got, "graphq_node_duration_seconds_count", workflow="counter", node="bump") == 6
    assert value(got, "graphq_admission_wait_seconds_count", workflow="counter") == 3
    assert value(got, "graphq_queue_depth", workflow="counter") == 0
    assert ("graphq_queue_depth", frozenset({("workflow", "failing")})) in got
    assert value(got, "graphq_fenced_writes_rejected_total") == 0
    names = {name for name, _ in got}
    assert names <= metrics.exposed_names() | {n.replace("_total", "_created") for n in names}
    assert not any(label in ("run", "run_id", "thread", "thread_id") for _, ls in got for label, _ in ls)


def test_probes_and_cluster_gauges_while_a_step_runs_and_while_draining(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    proc = start_worker(procs, {**env, "GRAPHQ_DRAIN_TIMEOUT_S": "30"}, port, 1)
    assert get(port, "/healthz") == (200, "ok\n")
    assert get(port, "/readyz") == (200, "ok\n")
    assert get(port, "/") == (404, "see /metrics, /healthz, /readyz\n")
    slow = client.enqueue("two-steps", {"first": {"sleep": 2.5}}, tenant="slow")
    wait_for(lambda: started(tmp_path, "first"), what="the slow step to start")
    for _ in range(2):
        client.enqueue("counter", {"limit": 2}, tenant="acme")
    got = samples(get(port, "/metrics")[1])
    assert value(got, "graphq_queue_depth", workflow="counter") == 2
    assert value(got, "graphq_queue_depth", workflow="two-steps") == 0
    assert value(got, "graphq_runs_running", tenant="slow") == 1
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: get(port, "/readyz")[0] == 503, what="/readyz 503 while draining")
    assert get(port, "/healthz")[0] == 200
    assert proc.wait(20) == 0
    assert client.get_run(slow).status == RunStatus.RUNNING  # its second step waits for a worker


def test_dashboard_names_only_defined_metrics() -> None:
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 8
    used = {n for e in exprs for n in re.findall(r"\bgraphq_[a-z_]+", e)}
    assert used, exprs
    assert used <= metrics.exposed_names(), used - metrics.exposed_names()
    titles = " ".join(p["title"].lower() for p in board["panels"])
    for topic in ("throughput", "latency", "queue depth", "tenant", "fail", "reap", "continuation", "lag"):
        assert topic in titles, topic


def test_every_metric_name_has_a_base_unit_and_counters_end_in_total() -> None:
    for name in metrics.METRICS:
        assert name.startswith("graphq_")
        assert not re.search(r"_(ms|milliseconds|minutes)(_|$)", name), name
    counters = [n for n in metrics.METRICS if n.endswith("_total")]
    assert len(counters) == 11


def test_a_killed_worker_process_is_reaped_and_continued_and_counted(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    fast = {
        **env,
        "GRAPHQ_LEASE_TTL_S": "1",
        "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.2",
        "GRAPHQ_REAPER_INTERVAL_S": "0.3",
    }
    start_worker(procs, fast, port, 1)
    run_id = client.enqueue("two-steps", {"first": {"sleep": 30}})
    [pid] = wait_for(lambda: started(tmp_path, "first"), what="the slow step to start")
    os.kill(pid, signal.SIGKILL)
    record = ended(client, run_id)
    assert (record.status, record.continued_by_run_id is not None) == (RunStatus.FAILED, True)
    got = wait_for(
        lambda: (s := samples(get(port, "/metrics")[1])) and value(s, "graphq_continuations_total") and s,
        what="the continuation to be counted",
    )
    assert value(got, "graphq_runs_reaped_total", outcome="continued") == 1
    assert value(got, "graphq_runs_reaped_total") == 1
    assert value(got, "graphq_continuations_total", cause="reaper") == 1


def delta(
    before: dict[tuple[str, frozenset[tuple[str, str]]], float],
    after: dict[tuple[str, frozenset[tuple[str, str]]], float],
    name: str,
    **labels: str,
) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_recording_functions_in_process() -> None:
    registry = metrics.enable()
    try:
        before = samples(generate_latest(registry).decode())
        metrics.schedule_fired("started", 0.2)
        metrics.schedule_fired("skipped-overlap", 0.0)
        metrics.requests_expired(3)
        metrics.requests_expired(0)
        metrics.lease_lost()
        calls = []

        def flaky() -> str:
            calls.append(1)
            if len(calls) == 1:
                raise redis.ConnectionError("dropped")
            return "ok"

        assert outlast(flaky) == "ok"
        after = samples(generate_latest(registry).decode())
    finally:
        metrics.disable()
    assert delta(before, after, "graphq_schedule_fires_total", outcome="started") == 1
    assert delta(before, after, "graphq_schedule_fires_total", outcome="skipped-overlap") == 1
    assert delta(before, after, "graphq_schedule_fire_lag_seconds_count") == 2
    assert delta(before, after, "graphq_schedule_fire_lag_seconds_bucket", le="0.25") == 2
    assert delta(before, after, "graphq_schedule_fire_lag_seconds_bucket", le="0.1") == 1
    assert delta(before, after, "graphq_request_expirations_total") == 3
    assert delta(before, after, "graphq_leases_lost_total") == 1
    assert delta(before, after, "graphq_redis_retries_total") == 1


def test_tenant_label_is_capped(redis_client: redis.Redis) -> None:
    for tenant in ("a", "b", "c"):
        redis_client.hset(keys.admission("counts"), f"t\0{tenant}", 2)
    redis_client.hset(keys.admission("counts"), "q\0a", 1)
    for cap, want in ((4, {"a": 2, "b": 2, "c": 2}), (3, {"*": 6})):
        collector = metrics.RedisCollector(redis_client, {"w": "rq:queue:graphq:w"}, cap)
        registry = CollectorRegistry()
        registry.register(collector)
        got = samples(generate_latest(registry).decode())
        running = {dict(ls)["tenant"]: v for (n, ls), v in got.items() if n == "graphq_runs_running"}
        assert running == want
        assert value(got, "graphq_runs_queued") == 1
        assert value(got, "graphq_queue_depth", workflow="w") == 0


@pytest.mark.parametrize("command", [["worker", "--burst"], ["scheduler"]])
def test_a_metrics_port_in_use_is_refused_with_one_line(env: dict[str, str], command: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = graphq(*command, "--metrics-port", str(port), env=env)
    assert (result.returncode, result.stderr.splitlines()[-1]) == (
        2,
        f"error: --metrics-port {port}: cannot listen there (Address already in use)",
    )
    assert "Traceback" not in result.stderr  # the scheduler crashed with an OSError's
    assert graphq("worker", "--metrics-port", "x", env=env).returncode == 2


def test_the_multiprocess_directory_is_private_and_removed(
    procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = tmp_path / f"graphq-metrics-{dead.pid}-x1y2"  # a killed worker's
    left.mkdir()
    (left / "counter_1.db").write_bytes(b"")
    port = free_port()
    proc = start_worker(procs, env, port, 2)
    assert not left.exists()
    [own] = tmp_path.glob(f"graphq-metrics-{proc.pid}-*")
    assert len(list(own.glob("*.db"))) >= 2  # the parent's and its children's files
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    assert not own.exists()


def test_the_scheduler_exports_the_cluster_gauges_with_no_worker(
    client: Client, procs: Procs, env: dict[str, str]
) -> None:
    """With the workers scaled to zero the scheduler's /metrics still has the queue depth and the runs
    (the dashboard's panels and a KEDA trigger on graphq_runs_running read them); it had neither."""
    port = free_port()
    procs.start("scheduler", "--metrics-port", str(port), env=env)
    wait_for(lambda: get(port, "/readyz")[0] == 200, what="the scheduler's /readyz 200")
    for _ in range(2):
        client.enqueue("counter", {"limit": 2}, tenant="acme")
    got = samples(get(port, "/metrics")[1])
    assert value(got, "graphq_queue_depth", workflow="counter") == 2
    assert value(got, "graphq_queue_depth", workflow="two-steps") == 0
    assert value(got, "graphq_runs_running", tenant="acme") == 2
    assert value(got, "graphq_runs_queued", tenant="acme") == 0
