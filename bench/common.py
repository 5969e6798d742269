"""Shared helpers of the benchmarks: a private Redis, worker wiring (in this process, or ``graphq worker``
subprocesses), waiting, timing, the result table.

Benchmarks only print; nothing here asserts a timing.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table
from rq import Queue, SimpleWorker
from rq.job import Job
from rq.serializers import JSONSerializer

from graphcore.backend.connection import connect
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.step.context import WorkerContext, set_context

__all__ = [
    "Row",
    "TimedWorker",
    "cpu_seconds",
    "fmt_bytes",
    "fmt_ms",
    "idle_cpu_seconds",
    "install_context",
    "kill",
    "median",
    "peak_rss",
    "print_table",
    "private_redis",
    "run_burst",
    "start_worker",
    "summary",
    "timed",
    "wait_for",
    "worker_children",
    "worker_env",
    "worker_pool",
]

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


@dataclass
class Row:
    """One line of the result table.

    Attributes:
        name: the benchmark (e.g. ``P1``).
        what: what was measured.
        ours: our number, formatted.
        baseline: the baseline's number, formatted.
        ratio: ours / baseline (lower is better); None when not measured.
        target: the highest ratio that passes.
        gate: False for informational rows that do not decide pass/fail.
    """

    name: str
    what: str
    ours: str
    baseline: str
    ratio: float | None
    target: float
    gate: bool = True

    @property
    def passed(self) -> bool | None:
        """True/False against the target; None when there is no ratio."""
        return None if self.ratio is None else self.ratio <= self.target


def summary(name: str, ratio: float | None, target: float) -> None:
    """Print the one-line, greppable summary of a benchmark, e.g. ``P1 ratio=1.12 target=1.25``."""
    shown = "n/a" if ratio is None else f"{ratio:.2f}"
    print(f"{name} ratio={shown} target={target:g}", flush=True)


def median(values: Sequence[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def timed(fn: Callable[[], Any]) -> float:
    """Seconds (``time.perf_counter``) that ``fn()`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fmt_ms(seconds: float) -> str:
    """``seconds`` as milliseconds, e.g. ``3.31 ms``."""
    return f"{seconds * 1000:.3f} ms"


def fmt_bytes(n: float) -> str:
    """A byte count in KiB/MiB/GiB."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


@contextmanager
def private_redis() -> Iterator[tuple[Any, str]]:
    """A private redis-server (no append-only file) and a connected client: ``(kv, url)``."""
    with EmbeddedRedis(appendonly=False) as server:
        kv = connect(server.url)
        try:
            yield kv, server.url
        finally:
            kv.close()


class TimedWorker(SimpleWorker):
    """RQ's ``SimpleWorker`` that also records how long each job's execution took (seconds)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.durations: list[float] = []

    def execute_job(self, job: Any, queue: Any) -> None:
        start = time.perf_counter()
        super().execute_job(job, queue)
        self.durations.append(time.perf_counter() - start)


def install_context(kv: Any, settings: Settings, graphs: Sequence[CompiledGraph]) -> None:
    """Make this process a graphq worker for ``graphs`` (what ``graphq.worker.process.rq_worker.run_worker``
    does first)."""
    set_context(WorkerContext.build(kv, settings, Registry({g.name: g for g in graphs})))


def run_burst(kv: Any, queue_name: str, job_class: type[Job] = Job) -> tuple[float, TimedWorker]:
    """Run a burst ``TimedWorker`` (JSON serializer, no scheduler) on ``queue_name`` until it is empty;
    ``job_class``: RQ's ``Job``, or graphq's ``StepJob`` for step jobs (as ``graphq worker`` runs them).

    Returns:
        Wall seconds of ``work()`` from start to finish, and the worker (its ``durations``).
    """
    queue = Queue(queue_name, connection=kv, serializer=JSONSerializer)
    worker = TimedWorker([queue], connection=kv, serializer=JSONSerializer, job_class=job_class)
    start = time.perf_counter()
    worker.work(burst=True, logging_level="WARNING", with_scheduler=False)
    return time.perf_counter() - start, worker


def print_table(rows: Sequence[Row], console: Console | None = None) -> None:
    """Print the results as a rich table."""
    table = Table(title="graphq benchmarks (ratio = ours / baseline, lower is better)")
    for column in ("benchmark", "measures", "ours", "baseline", "ratio", "target", "result"):
        table.add_column(column, justify="right" if column in ("ratio", "target") else "left")
    for row in rows:
        verdict = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: "[yellow]n/a[/]"}[row.passed]
        if not row.gate and row.passed is not None:
            verdict = "(info) " + ("pass" if row.passed else "over")
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}"
        table.add_row(row.name, row.what, row.ours, row.baseline, ratio, f"≤ {row.target:g}", verdict)
    (console or Console(width=160)).print(table)


def worker_env(url: str, workflows: str, **settings: str) -> dict[str, str]:
    """The environment of a ``graphq worker`` subprocess: this one without its ``GRAPHQ_*`` variables, then
    ``GRAPHQ_REDIS_URL`` ``url``, ``GRAPHQ_WORKFLOWS`` ``workflows`` (a module) and ``settings``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHQ_")}
    return base | {"GRAPHQ_REDIS_URL": url, "GRAPHQ_WORKFLOWS": workflows} | settings


def start_worker(env: dict[str, str], *args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``graphq worker ARGS`` with ``env`` in a process group of its own (a signal to the group
    reaches its worker processes, as when a pod dies); its output goes to the file ``log`` (appended), or
    is discarded."""
    with log.open("ab") if log is not None else open(os.devnull, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "graphq.cli", "worker", *args],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s process group (when it still runs) and reap it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def wait_for(predicate: Callable[[], T], timeout_s: float, what: str) -> T:
    """Poll ``predicate`` every 20 ms until it returns a truthy value, and return that value.

    Raises:
        TimeoutError: ``timed out waiting for <what>`` after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value


@contextmanager
def worker_pool(
    url: str, workflows: str, processes: int, **settings: str
) -> Iterator[subprocess.Popen[bytes]]:
    """``graphq worker --concurrency PROCESSES --log-level error`` on ``workflows`` (``settings`` in its
    environment), all its processes registered with RQ when entered (within 60 s), yielded (the supervisor);
    on exit it gets SIGTERM (30 s to drain), then SIGKILL."""
    proc = start_worker(
        worker_env(url, workflows, **settings), "--concurrency", str(processes), "--log-level", "error"
    )
    kv = connect(url)
    try:
        wait_for(lambda: kv.scard("rq:workers") >= processes, 60, f"{processes} worker processes to start")
        yield proc
    finally:
        kv.close()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            kill(proc)


def worker_children(pool: subprocess.Popen[bytes]) -> list[int]:
    """The pids of the worker processes of the ``graphq worker`` ``pool`` (its spawned children, not
    multiprocessing's resource tracker)."""
    pids = [int(p) for p in Path(f"/proc/{pool.pid}/task/{pool.pid}/children").read_text().split()]
    return [p for p in pids if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) that process ``pid`` has used so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu_seconds() -> float:
    """CPU seconds the machine's cores have been idle (idle + iowait) since boot (``/proc/stat``): the
    difference over a stretch says how much CPU nobody wanted."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int) -> int:
    """Peak resident set size of process ``pid`` so far, bytes (``VmHWM`` of ``/proc/<pid>/status``).

    Raises:
        RuntimeError: the kernel shows no ``VmHWM`` for it.
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")
