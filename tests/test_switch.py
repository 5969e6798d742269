"""The kill switch (R6): `graphq disable` refuses new runs and parks every worker; `graphq enable` goes on.

Real `graphq worker` processes on the test Redis, workflow ``two-steps`` of ``tests.workflows.shutdown``
(its nodes log ``<pid> first start`` / ``first end`` lines to ``$GRAPHQ_TEST_DIR/runs.log``).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import rq.suspension

from graphcore import keys
from graphcore.backend import switch
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.workers import live_workers
from graphcore.engine.registry import Registry
from graphcore.errors import DisabledError
from graphcore.settings import Settings, get_settings
from graphq.worker.queue import RQStepQueue, step_job_id
from tests.cli_helpers import invoke, ok
from tests.envs import clean_env
from tests.workers import SCRIPT, Start, graphq, rq_states, run_queue, wait_for, worker_env
from tests.workflows.shutdown import log_lines

FLOWS = "tests.workflows.shutdown"
REGISTRY = Registry.load([FLOWS])
QUEUE = "rq:queue:graphq:two-steps"


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, FLOWS, tmp_path, GRAPHQ_LEASE_TTL_S="1", GRAPHQ_HEARTBEAT_INTERVAL_S="0.2")


def node_log(tmp_path: Path) -> list[str]:
    """The node lines (without pids) in the order written."""
    return [what for _, what in log_lines(tmp_path)]


def snapshot(kv: redis.Redis) -> dict[bytes, bytes]:
    """Every key of the database with its dumped value (to show that nothing was written)."""
    return {k: kv.dump(k) or b"" for k in kv.scan_iter(match="*")}


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_rq_suspension_key_is_rqs() -> None:
    assert keys.rq_suspended() == rq.suspension.WORKERS_SUSPENDED


def test_disable_refuses_new_runs_writes_nothing_and_lists_workflows(
    redis_url: str, redis_client: redis.Redis
) -> None:
    assert ok(invoke(FLOWS, redis_url, "enabled")).stdout == "on\n"
    done = ok(invoke(FLOWS, redis_url, "disable", "--reason", "db migration"))
    assert done.stdout.startswith("graphq disabled since 20")
    assert done.stdout.rstrip().endswith(
        "(reason: db migration): new runs are refused, workers take no step; `graphq enable` turns it on "
        "again"
    )
    assert redis_client.exists(keys.switch(), keys.rq_suspended()) == 2
    status = ok(invoke(FLOWS, redis_url, "enabled")).stdout
    assert status.startswith("off since 20") and status.endswith(" (reason: db migration)\n")
    before = snapshot(redis_client)
    for args in (
        ("enqueue", "two-steps", "--input", "{}"),
        ("run", "two-steps"),
        ("enqueue", "two-steps", "--thread", "t1", "--wait"),
    ):
        refused = invoke(FLOWS, redis_url, *args)
        assert refused.exit_code == 2, refused.stderr
        line = one_line(refused.stderr)
        assert line.startswith(
            "error: new runs are refused: graphq is disabled cluster-wide (the kill switch, `graphq "
            "disable`) since 20"
        ), line
        assert line.endswith("(reason: db migration); `graphq enable` turns it on again"), line
    assert snapshot(redis_client) == before
    listed = ok(invoke(FLOWS, redis_url, "workflows", "list", "--output", "json"))
    assert '"two-steps"' in listed.stdout and '"timed"' in listed.stdout
    assert ok(invoke(FLOWS, redis_url, "enable")).stdout == "graphq enabled\n"
    assert redis_client.exists(keys.switch(), keys.rq_suspended()) == 0
    assert ok(invoke(FLOWS, redis_url, "enabled")).stdout == "on\n"
    assert ok(invoke(FLOWS, redis_url, "enable")).stdout == "graphq was enabled already; nothing changed\n"
    ok(invoke(FLOWS, redis_url, "enqueue", "two-steps", "--input", "{}"))
    assert redis_client.llen(QUEUE) == 1


def test_a_second_disable_keeps_the_first_time_and_the_reason_unless_given_one(
    redis_client: redis.Redis,
) -> None:
    first = switch.disable(redis_client, "db migration")
    again = switch.disable(redis_client)
    assert (again.on, again.reason, again.since) == (False, "db migration", first.since)
    assert switch.read(redis_client) == again
    renamed = switch.disable(redis_client, "longer migration")
    assert (renamed.reason, renamed.since) == ("longer migration", first.since)
    switch.enable(redis_client)
    assert switch.disable(redis_client).reason == ""  # a new stop: no reason carried over


def test_process_setting_off_refuses_new_runs(
    client: Client, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """GRAPHQ_ENABLED=false turns this process's clients off, whatever the cluster's switch says."""
    monkeypatch.setenv("GRAPHQ_ENABLED", "false")
    get_settings.cache_clear()
    with pytest.raises(DisabledError, match=r"^new runs are refused: GRAPHQ_ENABLED=false in this process"):
        client.enqueue("two-steps", {})
    assert redis_client.dbsize() == 0
    result = graphq("enqueue", "two-steps", env=worker_env(redis_url, FLOWS, GRAPHQ_ENABLED="false"))
    assert result.returncode == 2
    assert one_line(result.stderr) == (
        "error: new runs are refused: GRAPHQ_ENABLED=false in this process (the kill switch); unset it or "
        "set it to true"
    )
    assert redis_client.dbsize() == 0


class _DisablingQueue:
    """A step queue that turns the switch off (on another connection) while the client builds its MULTI."""

    def __init__(self, inner: RQStepQueue, kv: redis.Redis) -> None:
        self.inner, self.kv, self.tries = inner, kv, 0
        self.settings = inner.settings
        self.timestamp = inner.timestamp

    def prepare(self, run: Any, step: int | None = None) -> Any:  # the first step's job, in a MULTI
        self.tries += 1
        if self.tries == 1:
            switch.disable(self.kv, "race")
        return self.inner.prepare(run, step)


def test_disable_during_enqueue_aborts_it(redis_client: redis.Redis, redis_url: str) -> None:
    """The switch is watched: a disable between the client's read and its EXEC aborts the transaction, and
    the retry refuses (no run is created once `disable` has returned)."""
    queue = _DisablingQueue(RQStepQueue(redis_client, Settings(redis_url=redis_url)), redis_client)
    racing = Client(redis_client, REGISTRY, queue)  # type: ignore[arg-type]
    with pytest.raises(DisabledError, match="graphq is disabled cluster-wide"):
        racing.enqueue("two-steps", {})
    assert queue.tries == 1
    assert sorted(k.decode() for k in redis_client.keys("*")) == [keys.switch(), keys.rq_suspended()]


def test_queued_steps_wait_while_off_and_run_after_enable(
    client: Client, redis_client: redis.Redis, start: Start, tmp_path: Path
) -> None:
    """Runs queued before `disable` do not start while it is off; the suspended workers keep their
    heartbeats; `graphq enable` lets them complete."""
    ids = [client.enqueue("two-steps", {}) for _ in range(2)]
    switch.disable(redis_client, "test")
    start(processes=2, state="suspended")
    time.sleep(2.0)  # ten heartbeat intervals, two lease TTLs
    assert [client.get_run(r).status for r in ids] == [RunStatus.QUEUED, RunStatus.QUEUED]
    assert [j.decode() for j in redis_client.lrange(QUEUE, 0, -1)] == [step_job_id(r, 0) for r in ids]
    assert node_log(tmp_path) == []
    assert len(live_workers(redis_client, int(time.time() * 1000))) == 2  # heartbeats go on (TTL 1 s)
    assert rq_states(redis_client) == ["suspended", "suspended"]
    switch.enable(redis_client)
    final = client.wait(ids, timeout_s=15)
    assert [(r.status, r.result) for r in final] == [(RunStatus.COMPLETED, {"done": ["first", "second"]})] * 2
    assert sorted(node_log(tmp_path)) == sorted(
        ["first start", "first end", "second start", "second end"] * 2
    )


def test_running_step_finishes_and_its_next_step_waits(
    client: Client, redis_client: redis.Redis, start: Start, tmp_path: Path, redis_url: str
) -> None:
    """A step running when the switch goes off commits; its next step's job waits at the head of the queue,
    also when an idle worker, blocked in RQ's dequeue, took it (it puts it back); on again, the run ends."""
    start(processes=2)
    run_id = client.enqueue("two-steps", {"first": {"sleep": 1.5}})
    wait_for(lambda: "first start" in node_log(tmp_path), what="the first step to start")
    assert ok(invoke(FLOWS, redis_url, "disable")).stdout.startswith("graphq disabled since 20")
    wait_for(lambda: client.get_run(run_id).step == 1, what="the first step to commit")
    time.sleep(2.0)  # the next step would have started by now
    wait_for(lambda: rq_states(redis_client) == ["suspended", "suspended"], what="both workers to suspend")
    record = client.get_run(run_id)
    assert (record.status, record.step) == (RunStatus.RUNNING, 1)
    assert node_log(tmp_path) == ["first start", "first end"]
    pinned = run_queue(client, run_id)  # its steps after the first: its version's queue
    assert [j.decode() for j in redis_client.lrange(pinned, 0, -1)] == [step_job_id(run_id, 1)]
    assert redis_client.llen(f"{pinned}:intermediate") == 0
    assert rq_states(redis_client) == ["suspended", "suspended"]
    refused = invoke(FLOWS, redis_url, "enqueue", "two-steps")
    assert refused.exit_code == 2 and "graphq is disabled cluster-wide" in one_line(refused.stderr)
    ok(invoke(FLOWS, redis_url, "enable"))
    final = client.wait([run_id], timeout_s=15)[0]
    assert (final.status, final.step, final.result["done"]) == (RunStatus.COMPLETED, 2, ["first", "second"])
    assert node_log(tmp_path) == ["first start", "first end", "second start", "second end"]
    log = (tmp_path / "worker-0.log").read_text()
    name = pinned.removeprefix("rq:queue:")
    assert f"graphq is disabled; job {step_job_id(run_id, 1)} put back on {name}" in log


def test_worker_with_process_setting_off_takes_no_job(
    client: Client, redis_client: redis.Redis, start: Start, tmp_path: Path
) -> None:
    """GRAPHQ_ENABLED=false in a worker's environment: it behaves as if suspended (cluster switch on)."""
    run_id = client.enqueue("two-steps", {})
    start(state="suspended", GRAPHQ_ENABLED="false")
    time.sleep(1.5)
    assert client.get_run(run_id).status == RunStatus.QUEUED
    assert redis_client.llen(QUEUE) == 1
    start(state=None)
    assert client.wait([run_id], timeout_s=15)[0].status == RunStatus.COMPLETED


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the installed graphq console script")
def test_local_data_refuses_an_answer_while_off(tmp_path: Path) -> None:
    """Without a Redis URL (local data), nothing else would work an answered step: the answer is refused,
    nothing written, and goes through once the switch is on again."""
    env = {**clean_env(), "GRAPHQ_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}

    def local(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    paused = local("run", "approval", "--input", '{"amount": 120, "requester": "ana"}')
    assert paused.returncode == 3, paused.stderr
    run_id = paused.stdout.split()[1]
    assert local("disable", "--reason", "local").returncode == 0
    refused = local("runs", "answer", run_id, "--value", '"yes"')
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-1].startswith(
        f"error: run {run_id} is not answered: graphq is disabled cluster-wide (the kill switch, `graphq "
        "disable`) since 20"
    )
    assert local("runs", "show", run_id, "--output", "json").stdout.count('"awaiting_input"') == 1
    assert local("enable").stdout == "graphq enabled\n"
    done = local("runs", "answer", run_id, "--value", '"yes"')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("120 for ana: approved")
