"""Progress inside a wide super-step: the step job's throttled ``progress`` events (done/total) and the live
bars ``graphq run``, ``graphq runs watch`` and ``graphq enqueue --wait`` draw from them on a terminal only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from click.testing import CliRunner, Result

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.cli.main import main
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.step.progress import StepProgress
from tests.cli_helpers import ok, process_state_restored
from tests.workers import Procs, worker_env

WORKFLOWS = "tests.workflows.wide,tests.workflows.basic"
REGISTRY = Registry.load(WORKFLOWS.split(","))
TERMINAL = {"TTY_COMPATIBLE": "1", "FORCE_COLOR": None, "COLUMNS": "100"}
"""rich takes stderr for a terminal (the bars are drawn)."""
PIPE = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None}
"""Nothing forces a terminal: stderr is the test runner's capture, not a terminal."""


@pytest.fixture(autouse=True)
def _isolate_process_state() -> Iterator[None]:
    with process_state_restored():
        yield


def graphq(url: str, *args: str, env: dict[str, str | None]) -> Result:
    """``graphq --redis-url URL --workflows WORKFLOWS ARGS`` in-process, GRAPHQ_* cleared, ``env`` set."""
    clean: dict[str, str | None] = dict.fromkeys(("GRAPHQ_REDIS_URL", "GRAPHQ_WORKFLOWS", "GRAPHQ_DATA_DIR"))
    argv = ["--redis-url", url, "--workflows", WORKFLOWS, *args]
    return CliRunner().invoke(main, argv, env={**clean, **env}, catch_exceptions=False)


def progress_events(kv: redis.Redis, client: Client, run_id: str) -> list[tuple[int, Any]]:
    run = client.get_run(run_id)
    return [(e.step, e.data) for e in read_events(kv, run.thread_id, run_id) if e.mode == "progress"]


# -- the events ----------------------------------------------------------------------------------------------


def test_step_progress_is_throttled_and_never_holds_back_the_last_task() -> None:
    now = [0.0]
    emitted: list[tuple[int, int]] = []
    progress = StepProgress(lambda d, t: emitted.append((d, t)), 5, interval_s=0.2, clock=lambda: now[0])
    progress.start()
    for t in (0.05, 0.1, 0.25, 0.3, 0.31):
        now[0] = t
        progress.task_done()
    assert emitted == [(0, 5), (3, 5), (5, 5)]


def test_step_progress_counts_an_earlier_attempt_and_survives_a_failing_emit() -> None:
    emitted: list[tuple[int, int]] = []
    StepProgress(lambda d, t: emitted.append((d, t)), total=4, done=3).start()
    assert emitted == [(3, 4)]

    def broken(done: int, total: int) -> None:
        raise ConnectionError("gone")

    failing = StepProgress(broken, total=2)
    failing.start()
    failing.task_done()
    failing.task_done()
    assert failing.done == 2  # counting goes on; the step is not failed by its display events


def test_a_five_task_step_writes_progress_reaching_five_of_five(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = client.enqueue("wide", {"n": 5})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    assert client.get_run(run_id).result == {"n": 5, "pieces": [0, 1, 2, 3, 4], "total": 5}
    progress = progress_events(redis_client, client, run_id)
    assert progress[0] == (1, {"done": 0, "total": 5})
    assert progress[-1] == (1, {"done": 5, "total": 5})
    dones = [data["done"] for _, data in progress]
    assert dones == sorted(dones) and {step for step, _ in progress} == {1}  # the 1-task join writes none
    assert all(data["total"] == 5 for _, data in progress)
    run = client.get_run(run_id)
    modes = [(e.mode, e.step) for e in read_events(redis_client, run.thread_id, run_id)]
    assert modes.index(("updates", 1)) > max(i for i, m in enumerate(modes) if m[0] == "progress")


def test_one_task_steps_write_no_progress(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    run_id = client.enqueue("counter", {"limit": 3})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    assert progress_events(redis_client, client, run_id) == []


# -- the CLI -------------------------------------------------------------------------------------------------


def test_graphq_run_draws_the_step_bar_on_a_terminal_only(redis_url: str) -> None:
    shown = ok(graphq(redis_url, "run", "wide", "--input", '{"n": 5}', env=TERMINAL))
    assert json.loads(shown.stdout) == {"n": 5, "pieces": [0, 1, 2, 3, 4], "total": 5}
    assert "0/5" in shown.stderr and "5/5" in shown.stderr
    plain = ok(graphq(redis_url, "run", "wide", "--input", '{"n": 5}', env=PIPE))
    assert json.loads(plain.stdout) == {"n": 5, "pieces": [0, 1, 2, 3, 4], "total": 5}
    assert "/5" not in plain.stderr  # no bar: the step lines only
    steps = [line for line in plain.stderr.splitlines() if line.startswith("step")]
    assert [line[:8] for line in steps] == ["step   1", "step   2"]
    assert steps[0].startswith("step   1  piece x5  (5 tasks)  ")


def test_watch_prints_progress_lines_only_when_asked(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = client.enqueue("wide", {"n": 5})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    default = ok(graphq(redis_url, "runs", "watch", run_id, "-o", "json", env=PIPE))
    assert "progress" not in {json.loads(line)["mode"] for line in default.stdout.splitlines()}
    asked = ok(graphq(redis_url, "runs", "watch", run_id, "-o", "json", "--mode", "progress", env=PIPE))
    lines = [json.loads(line) for line in asked.stdout.splitlines()]
    assert [(x["step"], x["data"]) for x in lines] == progress_events(redis_client, client, run_id)
    assert (lines[0]["data"], lines[-1]["data"]) == ({"done": 0, "total": 5}, {"done": 5, "total": 5})
    assert "/5" not in asked.stderr
    drawn = ok(graphq(redis_url, "runs", "watch", run_id, "-o", "json", env=TERMINAL))
    assert drawn.stdout == default.stdout  # the event lines are the same; the bar goes to stderr
    assert "0/5" in drawn.stderr and "5/5" in drawn.stderr


def test_enqueue_wait_draws_step_bars_beside_the_runs_bar(redis_url: str, procs: Procs) -> None:
    procs.start("worker", env=worker_env(redis_url, "tests.workflows.wide"))
    args = ("enqueue", "wide", "--input", '{"n": 5, "pause": 0.2}', "--wait")
    drawn = ok(graphq(redis_url, *args, env=TERMINAL))
    plain = ok(graphq(redis_url, *args, env=PIPE))
    assert "step   1" in drawn.stderr and "0/5" in drawn.stderr and "5/5" in drawn.stderr
    assert "runs" in drawn.stderr and "1/1" in drawn.stderr
    assert "/5" not in plain.stderr and "step" not in plain.stderr
    assert plain.stderr == ""  # no runs bar either: the trial's `--wait 2>file` held `runs ━━━━ 1/1 0:00:00`
    assert [r["status"] for r in json.loads(ok(graphq(redis_url, *args, "-o", "json", env=PIPE)).stdout)] == [
        "completed"
    ]
