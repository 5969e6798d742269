"""Shared fixtures: one real redis-server per test session (no fakes), a clean database per test, and an
empty working directory per test (with ``GRAPHQ_DATA_DIR`` inside it)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from graphcore.backend.connection import connect
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.errors import ConfigError
from graphcore.settings import get_settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # ``tests.workflows`` imports from any working directory (see _private_cwd)
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _private_cwd(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run each test in an empty directory of its own, with ``GRAPHQ_DATA_DIR`` pointing inside it.

    What the developer's working directory holds (the ``.graphq/`` local data that ``make demo`` or ``graphq
    run`` leaves there) never reaches a test: in-process commands resolve the default ``.graphq`` here, and
    subprocesses get this ``GRAPHQ_DATA_DIR`` through :func:`tests.envs.clean_env` (or ``os.environ``).
    """
    work = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(work)
    monkeypatch.setenv("GRAPHQ_DATA_DIR", str(work / ".graphq"))
    return work


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """Clear the cached settings around each test: ``GRAPHQ_*`` a test sets take effect and do not leak."""
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[EmbeddedRedis]:
    """A private redis-server (no append-only file) for the whole session; fails, never skips, without one."""
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
    """The session server's URL (db 0), flushed before the test (tests run serially)."""
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
def graphq_env(redis_url: str, monkeypatch: pytest.MonkeyPatch, _private_cwd: Path) -> dict[str, str]:
    """Point ``GRAPHQ_REDIS_URL`` at the test database; return an environment for ``subprocess`` calls."""
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    return {**os.environ, "GRAPHQ_REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1"}
