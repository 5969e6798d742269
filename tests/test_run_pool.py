"""``graphq run --processes N``: the command works the run in its own process and N-1 more worker processes
(a pool serving only the run's workflow), on its embedded Redis; no process of the pool outlives it.

Real subprocesses and real signals. Workflow: tests/workflows/pool.py (``pids``: every node records the pid
and parent pid of the process running it; ``gate`` and ``slow`` wait on files). The test holds ``gate`` (in
the command's own process: nothing else runs yet) until the pool's process waits in its blocking pop on
the queue, so that the next step, ``slow``, goes to the pool: Redis serves the waiting pop as the commit of
``gate`` pushes the job, while the command's own worker is still busy with ``gate``.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphq.cli.main import main
from graphq.cli.run import _lost
from graphq.worker.process.supervisor import process_state
from tests.envs import clean_env
from tests.workers import Procs, graphq, wait_for, worker_children

REGISTRY = Registry.load(["tests.workflows.pool"])
RUN_LINE = re.compile(r"^run ([0-9a-f]{32}): pids on thread (\S+)$", re.M)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No GRAPHQ_REDIS_URL (the embedded Redis, data in tmp_path/data); the nodes' files in tmp_path;
    GRAPHQ_RUN_PROCESSES=1 (tests/conftest.py): --processes wins over it."""
    (tmp_path / "gate").touch()
    (tmp_path / "hold").touch()
    return clean_env(
        GRAPHQ_DATA_DIR=str(tmp_path / "data"),
        GRAPHQ_WORKFLOWS="tests.workflows.pool",
        GRAPHQ_TEST_DIR=str(tmp_path),
        PYTHONUNBUFFERED="1",
    )


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie, ended but not yet reaped, has)."""
    return process_state(pid) in ("X", "Z")


class Started:
    """``graphq run pids`` started with ``args``, inside ``gate``: its process, run id, the pool's worker
    processes and the embedded Redis (a client, and its server's pid)."""

    def __init__(self, procs: Procs, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        self.procs, self.tmp_path = procs, tmp_path
        self.proc = procs.start("run", "pids", *args, env=env)
        wait_for(lambda: (tmp_path / "gate-started").exists(), 60, "the gate step to start")
        match = RUN_LINE.search(self.log())
        assert match is not None, self.log()
        self.run_id = match[1]
        url = (tmp_path / "data" / "server.url").read_text().strip()
        self.kv = redis.Redis.from_url(url)
        self.redis_pid = int(self.kv.info("server")["process_id"])

    def log(self) -> str:
        return self.procs.logged(self.proc)

    def pool(self, size: int) -> list[int]:
        """The pool's ``size`` worker processes, once each waits for a job in its blocking pop (the command's
        own worker pops without blocking)."""
        wait_for(lambda: len(worker_children(self.proc.pid)) == size, 60, "the pool")
        wait_for(lambda: self.popping() == size, 60, "the pool's processes to wait for jobs")
        return sorted(worker_children(self.proc.pid))

    def popping(self) -> int:
        """How many clients of the embedded Redis wait in a blocking pop (not the command's XREAD)."""
        clients = self.kv.client_list()
        return sum("b" in c["flags"] and c["cmd"] in ("blmove", "blpop") for c in clients)

    def open_gate(self) -> int:
        """Let ``gate`` end; returns the pid of the process that runs ``slow``."""
        (self.tmp_path / "gate").unlink()
        started = self.tmp_path / "slow-started"
        wait_for(lambda: started.exists() and started.read_text(), 60, "the slow step to start")
        return int(started.read_text())

    def ctrl_c(self) -> None:
        """SIGINT to the process group (a terminal's Ctrl-C)."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def said_stopping(self) -> bool:
        line = (
            f"stopping: canceling run {self.run_id} after its step in flight (its nodes are asked to stop); "
        )
        return line + "Ctrl-C again to stop now" in self.log().splitlines()


def show(run_id: str, env: dict[str, str]) -> Any:
    done = graphq("runs", "show", run_id, "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ran(thread: str, env: dict[str, str]) -> list[list[int]]:
    """``[pid, parent pid]`` of the process that ran each node of the run on ``thread``, in step order."""
    done = graphq("state", thread, "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    values: list[list[int]] = json.loads(done.stdout)["values"]["ran"]
    return values


def test_the_pool_works_steps_of_the_run_and_ends_with_the_command(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    run = Started(procs, tmp_path, env, "--processes", "2")
    [pool] = run.pool(1)  # it exists while the run works: a child of the command, serving its workflow
    assert run.open_gate() == pool  # slow runs in the pool's process
    (tmp_path / "hold").unlink()
    assert run.proc.wait(120) == 0, run.log()
    assert gone(pool)  # drained and waited for before the command ended
    wait_for(lambda: gone(run.redis_pid), 20, "the embedded Redis to stop")
    lines = run.log().splitlines()
    assert lines[0].startswith("redis: redis://127.0.0.1:")
    assert lines[1] == "workers: 2 processes (--processes 2)"  # the option wins over GRAPHQ_RUN_PROCESSES
    assert sum(line.startswith("workers:") for line in lines) == 1
    assert "WARNING" not in run.log() and "Traceback" not in run.log()
    thread = RUN_LINE.search(run.log())[2]  # type: ignore[index]
    steps = ran(thread, env)
    here, in_pool = [run.proc.pid, os.getpid()], [pool, run.proc.pid]
    assert steps[:2] == [here, in_pool]  # gate in the command's own process, slow in the pool's
    assert len(steps) == 5 and all(step in (here, in_pool) for step in steps[2:]), steps


def test_first_ctrl_c_cancels_the_run_after_the_pools_step_and_stops_the_pool(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    run = Started(procs, tmp_path, env, "--processes", "2", "--input", '{"heed": true}')
    [pool] = run.pool(1)
    assert run.open_gate() == pool
    run.ctrl_c()
    wait_for(run.said_stopping, 20, "the stopping line")
    assert run.proc.wait(60) == 130, run.log()  # slow stops at its cancel token, in the pool's process
    assert run.log().splitlines()[-1] == (
        f"error: interrupted: run {run.run_id} is canceled after 1 step(s), checkpoints kept; "
        f"`graphq runs resume {run.run_id}` continues it"
    )
    assert gone(pool)
    wait_for(lambda: gone(run.redis_pid), 20, "the embedded Redis to stop")
    assert "Traceback" not in run.log()
    record = show(run.run_id, env)
    assert (record["status"], record["error"]["type"]) == ("canceled", "Canceled"), record
    (tmp_path / "hold").unlink()
    resumed = graphq("runs", "resume", run.run_id, "--processes", "2", env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.splitlines()[1] == "workers: 2 processes (--processes 2)"
    assert len(json.loads(resumed.stdout)["ran"]) == 5


def test_a_ctrl_c_while_the_pool_starts_up_prints_no_traceback(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    run = Started(procs, tmp_path, env, "--processes", "2")
    [pool] = worker_children(run.proc.pid)
    blocked = int(Path(f"/proc/{pool}/status").read_text().split("SigBlk:")[1].split()[0], 16)
    assert blocked & (1 << (signal.SIGINT - 1))  # born with SIGINT blocked: a Ctrl-C is the command's
    run.ctrl_c()  # most often while the pool's process still imports
    (tmp_path / "gate").unlink()
    assert run.proc.wait(60) == 130, run.log()
    assert "Traceback" not in run.log() and "exited with an error" not in run.log()
    wait_for(lambda: gone(pool), 20, "the pool's process to end")


def test_second_ctrl_c_exits_at_once_and_kills_the_pool(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    run = Started(procs, tmp_path, env, "--processes", "2")  # slow ignores its cancel token
    [pool] = run.pool(1)
    assert run.open_gate() == pool
    run.ctrl_c()
    wait_for(run.said_stopping, 20, "the stopping line")
    assert run.proc.poll() is None  # the pool drains: slow goes on
    run.ctrl_c()
    assert run.proc.wait(20) == 130, run.log()
    assert run.log().splitlines()[-1] == (
        f"error: interrupted again: stopped at once; run {run.run_id} is left running, its step in flight "
        "cut: once its lease lapses (GRAPHQ_LEASE_TTL_S), crash recovery ends it canceled (checkpoints "
        "kept; `graphq runs resume` continues it): the reaper of any worker on this Redis (on the local "
        "data: the next `graphq run pids`)"
    )
    wait_for(lambda: gone(pool), 20, "the pool's process to end")
    wait_for(lambda: gone(run.redis_pid), 20, "the embedded Redis to stop")


def test_a_sigkilled_command_leaves_no_pool_process(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    run = Started(procs, tmp_path, env, "--processes", "3")
    pool = run.pool(2)
    assert run.open_gate() in pool
    run.proc.kill()
    assert run.proc.wait(20) == -signal.SIGKILL
    for pid in [*pool, run.redis_pid]:
        wait_for(lambda pid=pid: gone(pid), 20, f"process {pid} to end")


def test_processes_1_starts_no_pool(procs: Procs, tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "hold").unlink()
    run = Started(procs, tmp_path, env, "--processes", "1")
    assert worker_children(run.proc.pid) == []
    run.open_gate()
    assert run.proc.wait(120) == 0, run.log()
    assert run.log().splitlines()[1] == "workers: 1 process (--processes 1)"
    thread = RUN_LINE.search(run.log())[2]  # type: ignore[index]
    assert ran(thread, env) == [[run.proc.pid, os.getpid()]] * 5


@pytest.mark.parametrize("variable", [None, "2"])
def test_one_process_per_core_or_as_the_variable_says_and_the_line_saying_why(
    procs: Procs, tmp_path: Path, env: dict[str, str], variable: str | None
) -> None:
    (tmp_path / "hold").unlink()
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in env.items() if k != "GRAPHQ_RUN_PROCESSES"}
    count, why = cores, "one per core; --processes N"
    if variable is not None:
        env["GRAPHQ_RUN_PROCESSES"] = variable
        count, why = int(variable), f"GRAPHQ_RUN_PROCESSES={variable}"
    run = Started(procs, tmp_path, env)
    assert len(run.pool(count - 1)) == count - 1
    run.open_gate()
    assert run.proc.wait(120) == 0, run.log()
    assert run.log().splitlines()[1] == f"workers: {count} process{'' if count == 1 else 'es'} ({why})"


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
@pytest.mark.parametrize("command", [["run", "pids"], ["runs", "resume", "r1"], ["runs", "answer", "r1"]])
def test_a_bad_processes_value_is_one_line_naming_the_option(command: list[str], value: str) -> None:
    args = [*command, "--value", '"yes"'] if command[1:2] == ["answer"] else command
    result = CliRunner().invoke(
        main, [*args, "--processes", value], prog_name="graphq", env={"GRAPHQ_REDIS_URL": None}
    )
    assert result.exit_code == 2
    path = "graphq " + " ".join(command[:2] if command[0] == "runs" else command[:1])
    why = f"{value} is not in the range 1<=x<=256"
    if value == "abc":
        why = "'abc' is not a valid integer range"  # click's words for an IntRange
    line = f"error: {path}: Invalid value for '--processes': {why} (see {path} --help)"
    assert result.stderr.strip() == line


def test_a_bad_run_processes_variable_is_one_line_naming_it(env: dict[str, str]) -> None:
    done = graphq("run", "pids", env=env | {"GRAPHQ_RUN_PROCESSES": "0"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: GRAPHQ_RUN_PROCESSES: must be 1 ≤ value ≤ 256 (got '0')"]


def test_run_help_says_what_processes_does(env: dict[str, str]) -> None:
    done = graphq("run", "--help", env=env)
    text = " ".join(done.stdout.split())
    assert "--processes N Worker processes that work the run: this one and N-1 more" in text


def test_with_a_pool_a_step_is_lost_only_when_neither_queued_nor_held(client: Client) -> None:
    """With a pool, the command's own worker finding the queue empty is an error (on the local data,
    nothing else would work the run) only when the run's step job is neither queued nor held under a
    lease by a process of the pool."""
    record = client.get_run(client.enqueue("pids", {}))
    assert not _lost(client, record)  # queued
    client.kv.zrem(keys.steps_index(), keys.step_member(record.thread_id, record.id, record.step))
    assert _lost(client, record)
    client.kv.set(keys.lease(record.thread_id, record.id), "a token")
    assert not _lost(client, record)  # held
