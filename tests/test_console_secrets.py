"""The Redis password never appears in what the console serves: every page and API answer, on a Redis with
``requirepass``, a real worker and a paused run; and the error page once Redis is gone."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from graphcore.backend.embedded import EmbeddedRedis
from tests.browser import start_console
from tests.envs import clean_env
from tests.workers import Procs, graphq, wait_for

PASSWORD = "hunter2-" + "x" * 12


@pytest.fixture
def guarded() -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(appendonly=False, extra_args=["--requirepass", PASSWORD]).start()
    try:
        yield server
    finally:
        server.stop()


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_no_page_shows_the_redis_password(guarded: EmbeddedRedis, procs: Procs) -> None:
    url = f"redis://:{PASSWORD}@127.0.0.1:{guarded.port}/0"
    env = clean_env(GRAPHQ_REDIS_URL=url, PYTHONUNBUFFERED="1")
    procs.start("worker", env=env)
    enqueued = graphq("enqueue", "approval", "--input", '{"amount": 5, "requester": "ana"}', env=env)
    assert enqueued.returncode == 0, enqueued.stderr
    run_id = enqueued.stdout.split()[-1]
    wait_for(lambda: '"awaiting_input"' in graphq("runs", "show", run_id, "-o", "json", env=env).stdout, 60)
    thread = json.loads(graphq("runs", "show", run_id, "-o", "json", env=env).stdout)["thread_id"]
    console = start_console(procs, env)
    paths = [
        "/runs",
        f"/runs/{run_id}",
        f"/threads/{thread}",
        "/requests",
        "/workers",
        "/tenants",
        "/schedules",
        "/workflows",
        "/workflows/approval",
        f"/api/runs/{run_id}",
        "/api/openapi.json",
        "/healthz",
    ]
    for path in paths:
        status, body = fetch(console.at(path))
        assert status == 200, (path, body[:300])
        assert PASSWORD not in body, path
    guarded.stop()
    status, body = fetch(console.at("/runs"))
    assert status == 503
    assert "lost the connection to Redis" in body
    assert PASSWORD not in body
