"""Shared fixtures: one real redis-server per test session (no fakes), a clean database per test, an
empty working directory per test (with ``GRAPHQ_DATA_DIR`` inside it), and workers: a client of the test
module's ``REGISTRY``, ``graphq`` subprocesses killed at the end (helpers in ``tests/workers.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from graphcore.backend.client import Client
from graphcore.backend.connection import connect
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.errors import ConfigError
from graphcore.settings import Settings, get_settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # ``tests.workflows`` imports from any working directory (see _private_cwd)
    sys.path.insert(0, str(ROOT))

from graphq.worker.process.liveness import Heartbeat  # noqa: E402
from graphq.worker.queue import RQStepQueue  # noqa: E402
from tests.workers import Beats, Procs, Start, rq_states, wait_for, worker_env  # noqa: E402  (needs ROOT on sys.path)


@pytest.fixture(autouse=True)
def _private_cwd(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run each test in an empty directory of its own, with ``GRAPHQ_DATA_DIR`` pointing inside it.

    What the developer's working directory holds (the ``.graphq/`` local data that ``make demo`` or ``graphq
    run`` leaves there) never reaches a test: in-process commands resolve the default ``.graphq`` here, and
    subprocesses get this ``GRAPHQ_DATA_DIR`` through :func:`tests.envs.clean_env` (or ``os.environ``).
    ``GRAPHQ_RUN_PROCESSES=1`` too: `graphq run` works a run in its own process only, as the tests written
    for that expect, unless a test asks for a pool of worker processes (tests/test_run_pool.py).
    """
    work = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(work)
    monkeypatch.setenv("GRAPHQ_DATA_DIR", str(work / ".graphq"))
    monkeypatch.setenv("GRAPHQ_RUN_PROCESSES", "1")
    return work


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """Clear the cached settings around each test: ``GRAPHQ_*`` a test sets take effect and do not leak."""
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


_PROCESS_WIDE = ("graphq-task-", "graphq-lease-keeper")
"""Threads started once per process and kept: the steps' task pool, the lease keeper (idle without leases)."""


def _is_graphq_loop(thread: threading.Thread) -> bool:
    """One of graphq's own background threads that a test started and should have stopped."""
    return thread.name.startswith("graphq-") and not thread.name.startswith(_PROCESS_WIDE)


@pytest.fixture(autouse=True)
def _no_stray_threads() -> Iterator[None]:
    """Fail a test that leaves one of graphq's background threads (``graphq-*``: heartbeats, lease keepers,
    housekeeping loops, ...) running: it would go on writing into the next tests' flushed database."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 3.0
    while stray := [t for t in threading.enumerate() if t not in before and _is_graphq_loop(t)]:
        if time.monotonic() > deadline:
            pytest.fail(f"the test left threads running: {sorted(t.name for t in stray)}", pytrace=False)
        time.sleep(0.05)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[EmbeddedRedis]:
    """A private redis-server (no append-only file) for the whole session; fails, never skips, without one.
    Under pytest-xdist (``make test``: ``-n 2``) each worker process has a session, and a server, its own."""
    server = EmbeddedRedis(appendonly=False)
    try:
        server.start()
    except ConfigError as exc:
        pytest.fail(f"the tests need a real redis-server: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> str:
    """The session server's URL (db 0), flushed before the test (the tests of a session run serially)."""
    url = redis_server.url
    client = connect(url, attempts=3, max_wait_s=0.5)
    try:
        client.flushdb()
    finally:
        client.close()
    return url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A connected client (bytes replies) on the flushed test database."""
    client = connect(redis_url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def heartbeats(redis_client: redis.Redis) -> Iterator[Beats]:
    """Start worker heartbeats on the test database: ``heartbeats(worker_id, queues, ttl_s, interval_s)``.
    Every one started is stopped at the test's end, so no beat reaches a later test's flushed database."""
    started: list[Heartbeat] = []

    def beat(worker_id: str, queues: list[str], ttl_s: float = 30, interval_s: float = 30) -> Heartbeat:
        started.append(Heartbeat(redis_client, worker_id, queues, ttl_s, interval_s).start())
        return started[-1]

    yield beat
    for one in started:
        one.stop()


@pytest.fixture
def graphq_env(redis_url: str, monkeypatch: pytest.MonkeyPatch, _private_cwd: Path) -> dict[str, str]:
    """Point ``GRAPHQ_REDIS_URL`` at the test database; return an environment for ``subprocess`` calls."""
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    return {**os.environ, "GRAPHQ_REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def client(request: pytest.FixtureRequest, redis_client: redis.Redis, redis_url: str) -> Client:
    """A client of the test database for the workflows of the test module's ``REGISTRY``, its step jobs
    going on the RQ queues (settings: the environment, with the test database's URL)."""
    queue = RQStepQueue(redis_client, Settings(redis_url=redis_url))
    return Client(redis_client, request.module.REGISTRY, queue)


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    """``graphq`` subprocesses of the test (:class:`tests.workers.Procs`, output in ``tmp_path``), each in
    its own process group; every one is killed at the end."""
    with Procs(tmp_path) as started:
        yield started


@pytest.fixture(scope="module")
def module_worker(
    request: pytest.FixtureRequest, redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen[bytes]]:
    """One ``graphq worker`` for all the tests of a module (one start-up, not one a test), on the session's
    Redis with the module's ``WORKFLOWS`` (modules, comma-separated); killed after the module's last test.

    The flush before each test leaves it working: it takes each test's step jobs. It is not for a test that
    reads a worker's output, RQ's or graphq's worker registries, or files the workflows write in the test's
    directory (``GRAPHQ_TEST_DIR``): there earlier tests' traces, or none, would show.
    """
    with Procs(tmp_path_factory.mktemp("module-worker")) as procs:
        yield procs.start("worker", env=worker_env(redis_server.url, request.module.WORKFLOWS))


@pytest.fixture
def worker(procs: Procs, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A ``graphq worker`` with the test module's ``env`` fixture, started (not waited for)."""
    return procs.start("worker", env=env)


@pytest.fixture
def start(procs: Procs, env: dict[str, str], redis_client: redis.Redis) -> Start:
    """``start(*args, processes=1, state="idle", **settings)``: start ``graphq worker --concurrency
    PROCESSES ARGS`` with the test module's ``env`` fixture and ``settings`` (``GRAPHQ_X="1"``) over it, and
    wait until ``processes`` more of RQ's workers are in ``state`` (None: do not wait)."""

    def spawn(
        *args: str, processes: int = 1, state: str | None = "idle", **settings: str
    ) -> subprocess.Popen[bytes]:
        before = rq_states(redis_client).count(state) if state is not None else 0
        proc = procs.start("worker", "--concurrency", str(processes), *args, env=env, **settings)
        if state is not None:
            want = before + processes
            wait_for(lambda: rq_states(redis_client).count(state) >= want, what=f"{processes} more {state}")
        return proc

    return spawn
