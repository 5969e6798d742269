"""`graphq health` (O2): exit codes and the line saying why, with real workers and a Redis that is down.
The probes run in-process (click's runner) but for a few run as processes, as Kubernetes runs them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.engine.registry import Registry
from graphq.worker.health import publish_status, served, statuses
from tests.cli_helpers import run_in_process
from tests.workers import Procs, graphq, wait_for, worker_env
from tests.workflows.shutdown import started

WORKFLOWS = "tests.workflows.shutdown"
REGISTRY = Registry.load([WORKFLOWS])


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, WORKFLOWS, tmp_path, TMPDIR=str(tmp_path), GRAPHQ_DRAIN_TIMEOUT_S="30")


@pytest.fixture(autouse=True)
def _status_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process reads the status files where the workers write them (their TMPDIR)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def probe(env: dict[str, str], *args: str) -> tuple[int, str]:
    """``graphq health ARGS`` in-process (click's runner), with ``env``'s ``GRAPHQ_*`` settings only: exit
    code and output. The status files are read from this test's directory (``_status_dir``)."""
    result = run_in_process("health", *args, env=env)
    return result.returncode, (result.stdout + result.stderr).strip()


def probe_process(env: dict[str, str], *args: str) -> tuple[int, str]:
    """``graphq health ARGS`` as a process (what a Kubernetes probe runs): exit code and output."""
    result = graphq("health", *args, env=env)
    return result.returncode, (result.stdout + result.stderr).strip()


def test_redis_down_is_exit_1_with_one_line_and_no_password(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = worker_env(f"redis://:hunter2@127.0.0.1:{port}/0", WORKFLOWS, tmp_path, TMPDIR=str(tmp_path))
    for args in ((), ("--worker", "--ready"), ("--scheduler", "--ready")):
        code, said = probe_process(env, *args)
        assert code == 1
        assert len(said.splitlines()) == 1, said
        assert said.startswith(f"error: unhealthy: Redis unreachable at redis://:***@127.0.0.1:{port}/0: ")
        assert "hunter2" not in said


def test_without_a_worker_on_this_host(env: dict[str, str], tmp_path: Path, redis_url: str) -> None:
    assert probe(env) == (0, "ok")
    code, said = probe(env, "--worker")
    here = redis_url.removeprefix("redis://")
    assert (code, said) == (
        1,
        f"error: unhealthy: no graphq worker for Redis {here} runs on this host "
        f"(no live {tmp_path}/graphq-worker.<pid>.json of it)",
    )
    assert probe(env, "--scheduler")[0] == 1


def test_worker_live_and_ready_then_draining_then_gone(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    proc = procs.start("worker", env=env)
    wait_for(lambda: probe(env, "--worker", "--ready")[0] == 0, what="the worker to be ready")
    assert probe(env, "--worker") == (0, "ok: worker")
    assert probe_process(env, "--worker", "--ready") == (0, "ok: worker ready")
    [status] = statuses("worker")
    assert (status.pid, status.draining, len(status.children)) == (proc.pid, False, 1)
    client.enqueue("two-steps", {"first": {"sleep": 4}})
    wait_for(lambda: started(tmp_path, "first"), what="the slow step to start")
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: statuses("worker")[0].draining, what="the status to say draining")
    assert probe_process(env, "--worker", "--ready") == (
        1,
        f"error: unhealthy: the worker (pid {proc.pid}) is draining (SIGTERM received)",
    )
    assert probe(env, "--worker") == (0, "ok: worker")
    assert proc.wait(30) == 0
    assert statuses("worker") == []
    assert not list(tmp_path.glob("graphq-worker.*.json"))
    assert probe(env, "--worker")[0] == 1


def test_a_stopped_worker_has_no_fresh_heartbeat(procs: Procs, env: dict[str, str]) -> None:
    fast = {**env, "GRAPHQ_LEASE_TTL_S": "1", "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.2"}
    proc = procs.start("worker", env=fast)
    wait_for(lambda: probe(fast, "--worker")[0] == 0, what="the worker to be live")
    [status] = statuses("worker")
    child = status.children[0]
    os.kill(child, signal.SIGSTOP)  # its heartbeat stops; the supervisor's loop goes on
    try:
        wait_for(lambda: probe(fast, "--worker", "--ready")[0] == 1, timeout_s=10, what="the probe to fail")
        assert probe(fast, "--worker") == (0, "ok: worker")  # liveness: its process is alive
        assert probe(fast, "--worker", "--ready") == (
            1,
            f"error: unhealthy: no worker process of the worker (pid {proc.pid}) has a fresh heartbeat "
            f"(processes: {child})",
        )
    finally:
        os.kill(child, signal.SIGCONT)


def test_scheduler_probe_reads_its_status_file_and_heartbeat_key(
    env: dict[str, str], redis_client: redis.Redis, redis_url: str
) -> None:
    key = keys.scheduler("host-1-abcd")
    state = {"draining": False, "loop_at": time.time()}
    with publish_status(
        "scheduler",
        60,
        lambda: state["draining"],
        lambda: state["loop_at"],
        heartbeat_key=key,
        redis_url=redis_url,
    ) as rewrite:
        pid = os.getpid()
        assert probe(env, "--scheduler") == (0, "ok: scheduler")  # liveness: no Redis call
        assert probe(env, "--scheduler", "--ready") == (
            1,
            f"error: unhealthy: the scheduler (pid {pid}) has no fresh heartbeat ({key} expired)",
        )
        redis_client.set(key, "{}", px=60_000)
        assert probe(env, "--scheduler") == (0, "ok: scheduler")
        assert probe(env, "--scheduler", "--ready") == (0, "ok: scheduler ready")
        assert probe(env, "--worker")[0] == 1  # no worker here
        state["draining"] = True
        rewrite()
        assert probe(env, "--scheduler", "--ready") == (
            1,
            f"error: unhealthy: the scheduler (pid {pid}) is draining (SIGTERM received)",
        )
        state["loop_at"] = time.time() - 100
        rewrite()
        code, said = probe(env, "--scheduler")
        assert code == 1
        assert said.startswith(f"error: unhealthy: the scheduler (pid {pid}) main loop last ran 10"), said
    assert statuses("scheduler") == []


def test_status_files_left_by_killed_processes_are_ignored_and_cleaned(
    env: dict[str, str], redis_client: redis.Redis, tmp_path: Path, redis_url: str
) -> None:
    def leave(pid: int, written_at: float) -> Path:
        path = tmp_path / f"graphq-scheduler.{pid}.json"
        body = {"role": "scheduler", "pid": pid, "draining": False, "loop_at": written_at, "children": []}
        body["redis"] = served(redis_url)
        path.write_text(json.dumps({**body, "heartbeat_key": None, "written_at": written_at}))
        return path

    dead = subprocess.Popen(["true"])
    dead.wait()
    with subprocess.Popen(["sleep", "30"]) as reused:  # an unrelated process now has that pid
        try:
            stale = leave(reused.pid, time.time() - 100)
            left = leave(dead.pid, time.time())
            code, said = probe(env, "--scheduler")
            assert code == 1
            assert said.startswith(
                f"error: unhealthy: the scheduler (pid {reused.pid}) last wrote its status 10"
            )
            state = {"loop_at": time.time()}
            with publish_status(
                "scheduler", 60, lambda: False, lambda: state["loop_at"], redis_url=redis_url
            ):
                assert not left.exists() and stale.exists()  # a dead pid's file is removed at start
                assert probe(env, "--scheduler") == (0, "ok: scheduler")  # the stale one is ignored
        finally:
            reused.kill()


def test_served_names_the_redis_without_credentials() -> None:
    assert [
        served(url)
        for url in (
            "redis://:s3cret@10.0.0.5:6380/2",
            "rediss://user:pw@redis.example",
            "unix:///run/redis.sock?db=3",
            "",
        )
    ] == ["10.0.0.5:6380/2", "redis.example:6379/0", "unix:/run/redis.sock/3", ""]


def test_only_processes_serving_this_redis_count(procs: Procs, env: dict[str, str], redis_url: str) -> None:
    """A status file of a process serving another Redis (another session's worker on this host, draining
    and with no heartbeat) neither fails the probe nor makes it ready; it used to (exit 1 naming it)."""
    other = {"draining": True, "loop_at": time.time() - 1000}
    with publish_status(
        "worker",
        60,
        lambda: other["draining"],
        lambda: other["loop_at"],
        lambda: [1],
        redis_url=redis_url.removesuffix("/0") + "/1",  # another db
    ):
        assert statuses("worker", served(redis_url)) == []
        assert [s.redis for s in statuses("worker")] == [served(redis_url).removesuffix("/0") + "/1"]
        procs.start("worker", env=env)
        wait_for(lambda: probe(env, "--worker", "--ready")[0] == 0, what="the worker to be ready")
        assert probe(env, "--worker") == (0, "ok: worker")
        assert probe(env, "--worker", "--ready") == (0, "ok: worker ready")
        [mine] = statuses("worker", served(redis_url))
        assert mine.pid != os.getpid()


def test_worker_and_scheduler_together_are_refused(env: dict[str, str]) -> None:
    assert probe(env, "--worker", "--scheduler") == (
        2,
        "error: graphq health: --worker and --scheduler exclude each other: probe one process "
        "(see graphq health --help)",
    )


def test_a_missing_or_wrong_password_is_said_as_other_commands_say_it(tmp_path: Path) -> None:
    server = EmbeddedRedis(appendonly=False, extra_args=["--requirepass", "s3cret-pw"]).start()
    try:
        bare = server.url
        wrong = bare.replace("redis://", "redis://:nope@")
        said = {
            url: probe(worker_env(url, WORKFLOWS, tmp_path, TMPDIR=str(tmp_path))) for url in (bare, wrong)
        }
    finally:
        server.stop()
    masked = wrong.replace(":nope@", ":***@")
    assert said == {
        bare: (
            1,
            f"error: unhealthy: Redis at {bare} needs a password: give it in the URL, "
            "redis://:PASSWORD@HOST:PORT/DB (or redis://USER:PASSWORD@... for an ACL user)",
        ),
        wrong: (
            1,
            f"error: unhealthy: Redis at {masked} refused the password in the URL (authentication failed: "
            "a wrong password, or a user it does not know)",
        ),
    }


def test_liveness_does_not_ask_redis_and_readiness_does(procs: Procs, tmp_path: Path) -> None:
    """Redis down: a worker's and a scheduler's liveness pass (their loops go on: no pod restarted),
    readiness fails naming Redis; a worker whose worker processes are all gone is not live."""
    server = EmbeddedRedis(appendonly=False).start()
    env = worker_env(server.url, WORKFLOWS, tmp_path, TMPDIR=str(tmp_path), GRAPHQ_DRAIN_TIMEOUT_S="30")
    try:
        proc = procs.start("worker", env=env)
        wait_for(lambda: probe(env, "--worker", "--ready")[0] == 0, what="the worker to be ready")
    finally:
        server.stop()
    with publish_status("scheduler", 60, lambda: False, time.time, redis_url=server.url):
        time.sleep(1.0)  # the worker's loop goes on without Redis
        for role in ("worker", "scheduler"):
            assert probe(env, f"--{role}") == (0, f"ok: {role}")
            code, said = probe(env, f"--{role}", "--ready")
            assert (code, said.split(": ")[:3]) == (
                1,
                ["error", "unhealthy", "Redis unreachable at " + server.url],
            )
    proc.terminate()
    assert proc.wait(30) == 0  # idle: a clean stop, Redis down or not
    dead = subprocess.Popen(["true"])
    dead.wait()
    with publish_status("worker", 60, lambda: False, time.time, lambda: [dead.pid], redis_url=server.url):
        assert probe(env, "--worker") == (
            1,
            f"error: unhealthy: the worker (pid {os.getpid()}) has no worker process alive "
            f"(processes: {dead.pid})",
        )
