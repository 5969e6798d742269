"""Helpers of the tests that run workers: ``graphq`` subprocesses on the test Redis (their environment, each
started in a process group of its own and all killed at the end), a burst worker in this process, and
waiting for what they do. The fixtures built on them (``client``, ``procs``, ``worker``, ``start``) are in
``tests/conftest.py``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import redis

from graphcore.backend.client import Client
from graphcore.backend.runs import RunRecord
from graphcore.settings import Settings
from graphq.worker.process.liveness import Heartbeat
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from tests.envs import clean_env

__all__ = [
    "GRAPHQ",
    "ROOT",
    "SCRIPT",
    "Procs",
    "Start",
    "burst",
    "ended",
    "graphq",
    "group_runs",
    "job_as_rq_reads_it",
    "line_count",
    "refusing_writes",
    "rq_states",
    "wait_for",
    "work",
    "worker_children",
    "worker_env",
]

ROOT = Path(__file__).resolve().parent.parent
GRAPHQ = [sys.executable, "-m", "graphq.cli"]
SCRIPT = Path(sys.executable).with_name("graphq")
"""The console script: it imports ``tests.workflows`` because the CLI puts the cwd on sys.path."""

T = TypeVar("T")
Start = Callable[..., subprocess.Popen[bytes]]
Beats = Callable[..., Heartbeat]
"""The ``heartbeats`` fixture: ``heartbeats(worker_id, queues, ttl_s=30, interval_s=30)`` starts one."""
"""The ``start`` fixture: ``start(*args, processes=1, state="idle", **settings)``."""


def worker_env(
    redis_url: str, workflows: str, test_dir: Path | None = None, **settings: str
) -> dict[str, str]:
    """The environment of a ``graphq`` subprocess: :func:`tests.envs.clean_env` with ``GRAPHQ_REDIS_URL``,
    ``GRAPHQ_WORKFLOWS`` (comma-separated modules), unbuffered output, ``GRAPHQ_TEST_DIR`` (where the test
    workflows write their logs) when ``test_dir`` is given, and ``settings`` (``GRAPHQ_LEASE_TTL_S="1"``)."""
    extra = {"GRAPHQ_TEST_DIR": str(test_dir)} if test_dir is not None else {}
    return clean_env(
        GRAPHQ_REDIS_URL=redis_url, GRAPHQ_WORKFLOWS=workflows, PYTHONUNBUFFERED="1", **extra, **settings
    )


def wait_for(predicate: Callable[[], T], timeout_s: float = 20, what: str = "condition") -> T:
    """Poll ``predicate`` every 20 ms until it returns a truthy value, and return that value.

    Raises:
        AssertionError: ``timed out waiting for <what>`` after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value


def ended(client: Client, run_id: str, timeout_s: float = 20) -> RunRecord:
    """The record of ``run_id`` once it has ended (waits up to ``timeout_s`` seconds)."""
    wait_for(lambda: client.get_run(run_id).terminal, timeout_s, f"run {run_id} to end")
    return client.get_run(run_id)


def run_queue(client: Client, run_id: str) -> str:
    """The RQ queue (key) that ``run_id``'s next step job goes to: its workflow's before its first step,
    then, when it is pinned, its version's."""
    return str(RQStepQueue(client.kv).of(client.get_run(run_id)).key)


def line_count(path: Path) -> int:
    """Lines in ``path`` (0 when it does not exist yet): how often a test node that logs there ran."""
    return len(path.read_text().splitlines()) if path.exists() else 0


@contextmanager
def refusing_writes(kv: redis.Redis) -> Iterator[None]:
    """Redis full inside the block: ``maxmemory`` 1 byte under the ``noeviction`` policy, so that every
    write is refused with OOM while reads and deletes are served (as in production once memory runs out);
    ``maxmemory 0`` (no limit) again on the way out, whatever happens. A test may free it earlier with
    ``kv.config_set("maxmemory", 0)``."""
    assert kv.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    kv.config_set("maxmemory", 1)
    try:
        yield
    finally:
        kv.config_set("maxmemory", 0)


def rq_states(kv: redis.Redis) -> list[str]:
    """The state (``idle``, ``busy``, ``suspended``, ...) of every worker in RQ's registry."""
    return [(kv.hget(w, "state") or b"").decode() for w in kv.smembers("rq:workers")]


def worker_children(pid: int) -> list[int]:
    """The worker processes of `graphq worker` ``pid``, or of the pool of `graphq run` ``pid`` (a thread of
    its own starts them), not multiprocessing's resource tracker."""
    pids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            pids += [int(p) for p in (task / "children").read_text().split()]
    found = []
    for child in pids:
        with contextlib.suppress(FileNotFoundError):  # a child that ended meanwhile
            if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text():
                found.append(child)
    return found


def graphq(*args: str, env: dict[str, str], timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """Run ``graphq ARGS`` to completion in the repository root (text output captured)."""
    return subprocess.run(
        [*GRAPHQ, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def burst(env: dict[str, str]) -> None:
    """One burst of a `graphq worker` subprocess: works every queued step job, must exit 0."""
    done = graphq("worker", "--burst", env=env, timeout=60)
    assert done.returncode == 0, done.stderr


def work(client: Client) -> bool:
    """Work every queued step job in this process: a burst worker on ``client``'s connection and workflows,
    with the ``GRAPHQ_*`` settings of the environment as they are now. Returns whether it worked a job."""
    at = client.kv.connection_pool.connection_kwargs
    settings = Settings(redis_url=f"redis://{at['host']}:{at['port']}/{at.get('db', 0)}")
    return run_worker(settings, burst=True, registry=client.registry, kv=client.kv)


class Procs:
    """``graphq`` subprocesses of one test, each in its own session (process group: a signal sent to the
    group reaches every process of it); :meth:`close` kills them all.

    Args:
        log_dir: where each process writes its output, ``<command>-<n>.log`` (n counts every process).
        env: the environment of a process started without one.
    """

    def __init__(self, log_dir: Path, env: dict[str, str] | None = None) -> None:
        self.log_dir = log_dir
        self.env = env
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: dict[int, Path] = {}
        self._stop = threading.Event()
        self._loops: list[threading.Thread] = []

    def __enter__(self) -> Procs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(
        self, *args: str, env: dict[str, str] | None = None, script: bool = False, **settings: str
    ) -> subprocess.Popen[bytes]:
        """Start ``graphq ARGS`` in the background with ``env`` (else the default) and ``settings`` over it;
        ``script``: through the installed console script (when there is one) rather than ``python -m
        graphq.cli``."""
        base = env if env is not None else self.env
        assert base is not None, "Procs.start needs an environment"
        path = self.log_dir / f"{args[0] if args else 'graphq'}-{len(self.procs)}.log"
        command = [str(SCRIPT)] if script and SCRIPT.exists() else GRAPHQ
        with path.open("wb") as log:
            proc = subprocess.Popen(
                [*command, *args],
                env={**base, **settings},
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        self.logs[proc.pid] = path
        return proc

    def logged(self, proc: subprocess.Popen[Any]) -> str:
        """What ``proc`` (started here) printed so far."""
        return self.logs[proc.pid].read_text(errors="replace")

    def holding(self, worker_id: str) -> subprocess.Popen[bytes]:
        """The process (group) whose worker has id ``worker_id`` (``host.pid.suffix``)."""
        group = os.getpgid(int(worker_id.split(".")[-2]))
        return next(p for p in self.procs if p.pid == group)

    def keep_one_worker(self) -> None:
        """Start a worker, and a new one each time it dies, until :meth:`close`."""

        def loop() -> None:
            while not self._stop.is_set():
                proc = self.start("worker")
                while proc.poll() is None and not self._stop.is_set():
                    time.sleep(0.05)

        self._loops.append(threading.Thread(target=loop, daemon=True))
        self._loops[-1].start()

    def close(self) -> None:
        """Stop the restart loops first (a worker started after the kills would live on into the next
        test, on the same Redis), then SIGKILL every process group, and wait until none of their processes
        runs. A group whose first process ended may hold others (the worker processes of a supervisor that
        a test killed): they were left blocked in their pops, and took the next test's jobs."""
        self._stop.set()
        for loop in self._loops:
            loop.join(10)
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        for pgid in [proc.pid for proc in self.procs]:
            wait_for(lambda pgid=pgid: not group_runs(pgid), 10, f"the processes of group {pgid} to end")


def group_runs(pgid: int) -> bool:
    """Whether a process of process group ``pgid`` runs (a zombie, ended but not yet reaped, does not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError):
            continue  # ended meanwhile
        if state != "Z" and int(group) == pgid:
            return True
    return False


def job_as_rq_reads_it(fields: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """An RQ job hash as RQ reads it: its ``data`` decompressed (RQ's ``Job.restore``: ``zlib.decompress``;
    graphq compresses with a smaller window than RQ, the same data), its timestamps left out."""
    stamps = {b"created_at", b"enqueued_at"}
    return {k: zlib.decompress(v) if k == b"data" else v for k, v in fields.items() if k not in stamps}
