"""Ctrl-C in ``graphq run``: a real subprocess on its embedded Redis, real SIGINTs
sent to its process group (as a terminal does).

The first Ctrl-C says at once what happens, cancels the run after its step in flight (a node that checks its
cancel token stops early) and exits 130 once the run is canceled with its checkpoints kept, so that
``graphq runs resume`` completes it. A second one exits 130 at once and leaves the run running for crash
recovery. Workflow: tests/workflows/ctrl_c.py (``slow`` runs while the test's ``hold`` file exists).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.envs import clean_env
from tests.workers import Procs, graphq, wait_for

RUN_LINE = re.compile(r"^run ([0-9a-f]{32}): held on thread (\S+)$", re.M)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No GRAPHQ_REDIS_URL (the embedded Redis, data in tmp_path/data); the nodes' files in tmp_path."""
    (tmp_path / "hold").touch()
    return clean_env(
        GRAPHQ_DATA_DIR=str(tmp_path / "data"),
        GRAPHQ_WORKFLOWS="tests.workflows.ctrl_c",
        GRAPHQ_TEST_DIR=str(tmp_path),
        PYTHONUNBUFFERED="1",
    )


def started_run(procs: Procs, tmp_path: Path, env: dict[str, str], heed: bool) -> tuple[Any, str, str]:
    """``graphq run held`` started and inside its node ``slow``: (process, run id, thread id)."""
    proc = procs.start("run", "held", "--input", json.dumps({"heed": heed}), env=env)
    wait_for(lambda: (tmp_path / "slow-started").exists(), 20, "the slow step to start")
    match = RUN_LINE.search(procs.logged(proc))
    assert match is not None, procs.logged(proc)
    return proc, match[1], match[2]


def ctrl_c(proc: subprocess.Popen[bytes]) -> float:
    """SIGINT to the process group (a terminal's Ctrl-C); returns when it was sent (monotonic)."""
    os.killpg(proc.pid, signal.SIGINT)
    return time.monotonic()


def said_stopping(procs: Procs, proc: subprocess.Popen[bytes], run_id: str) -> bool:
    line = f"stopping: canceling run {run_id} after its step in flight (its nodes are asked to stop); "
    return line + "Ctrl-C again to stop now" in procs.logged(proc).splitlines()


def show(run_id: str, env: dict[str, str]) -> Any:
    done = graphq("runs", "show", run_id, "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_first_ctrl_c_cancels_after_the_step_and_runs_resume_completes_it(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    proc, run_id, thread = started_run(procs, tmp_path, env, heed=True)
    ctrl_c(proc)
    wait_for(lambda: said_stopping(procs, proc, run_id), 10, "the stopping line")
    assert proc.wait(20) == 130, procs.logged(proc)  # the keeper sets the cancel token; the node stops at it
    lines = procs.logged(proc).splitlines()
    assert lines[-1] == (
        f"error: interrupted: run {run_id} is canceled after 1 step(s), checkpoints kept; "
        f"`graphq runs resume {run_id}` continues it"
    ), lines
    assert "Traceback" not in procs.logged(proc)
    record = show(run_id, env)
    assert (record["status"], record["error"]["type"]) == ("canceled", "Canceled"), record
    history = graphq("state", thread, "--history", "--output", "json", env=env)
    assert [c["step"] for c in json.loads(history.stdout)] == [1, 0, -1]  # step 1 (first) kept; slow not
    (tmp_path / "hold").unlink()
    resumed = graphq("runs", "resume", run_id, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["done"] == ["first", "slow", "last"]


def test_a_step_that_ends_normally_after_ctrl_c_leaves_the_run_canceled_not_running(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    """``slow`` ignores its cancel token and returns once ``hold`` is gone: its step commits and queues
    ``last``, which the stopped in-process worker no longer takes. The run used to be left running (a
    cancel ends a run at its next claim), and `runs resume` refused it as running."""
    proc, run_id, thread = started_run(procs, tmp_path, env, heed=False)
    ctrl_c(proc)
    wait_for(lambda: said_stopping(procs, proc, run_id), 10, "the stopping line")
    (tmp_path / "hold").unlink()
    assert proc.wait(20) == 130, procs.logged(proc)
    assert procs.logged(proc).splitlines()[-1] == (
        f"error: interrupted: run {run_id} is canceled after 2 step(s), checkpoints kept; "
        f"`graphq runs resume {run_id}` continues it"
    )
    record = show(run_id, env)
    assert (record["status"], record["error"]["type"]) == ("canceled", "Canceled"), record
    history = graphq("state", thread, "--history", "--output", "json", env=env)
    assert [c["step"] for c in json.loads(history.stdout)] == [2, 1, 0, -1]  # slow's step kept
    resumed = graphq("runs", "resume", run_id, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["done"] == ["first", "slow", "last"]


def test_second_ctrl_c_exits_at_once_and_leaves_the_run_to_crash_recovery(
    procs: Procs, tmp_path: Path, env: dict[str, str]
) -> None:
    proc, run_id, _ = started_run(procs, tmp_path, env, heed=False)  # slow ignores its cancel token
    ctrl_c(proc)
    wait_for(lambda: said_stopping(procs, proc, run_id), 10, "the stopping line")
    time.sleep(0.7)  # the cancel token is set now (the keeper looks every 0.5 s); slow goes on
    assert proc.poll() is None
    ctrl_c(proc)
    assert proc.wait(10) == 130, procs.logged(proc)  # at once: the node still runs, and the hold stays
    assert procs.logged(proc).splitlines()[-1] == (
        f"error: interrupted again: stopped at once; run {run_id} is left running, its step in flight cut: "
        "once its lease lapses (GRAPHQ_LEASE_TTL_S), crash recovery ends it canceled (checkpoints kept; "
        "`graphq runs resume` continues it): the reaper of any worker on this Redis (on the local data: "
        "the next `graphq run held`)"
    )
    record = show(run_id, env)
    assert (record["status"], record["step"]) == ("running", 1), record


@pytest.mark.parametrize("second", ["after the stopping line", "at once"])
def test_the_next_graphq_run_on_the_local_data_ends_a_run_cut_by_a_second_ctrl_c(
    procs: Procs, tmp_path: Path, env: dict[str, str], second: str
) -> None:
    """The second Ctrl-C's line promises that the next ``graphq run`` ends the cut run canceled once its
    lease lapsed: that run's reaper only looked after GRAPHQ_REAPER_INTERVAL_S (5 s), so a shorter
    ``graphq run`` left it running, whatever the number of runs. It now makes one reaper pass as it starts
    (the interval is set to its maximum here, so no periodic pass can do it). A second Ctrl-C right after the
    first could stop the process before the first one's cancel request was recorded: crash recovery then
    continued the run (a new-user trial saw it); the second Ctrl-C now waits for that request (at most
    1 s)."""
    env = env | {"GRAPHQ_LEASE_TTL_S": "3", "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5"}
    proc, run_id, _ = started_run(procs, tmp_path, env, heed=False)
    ctrl_c(proc)
    if second == "after the stopping line":
        wait_for(lambda: said_stopping(procs, proc, run_id), 10, "the stopping line")
        ctrl_c(proc)
    else:  # again and again from right after the first (two signals at once may reach Python as one)
        wait_for(lambda: ctrl_c(proc) and (time.sleep(0.05), proc.poll() is not None)[1], 10, "the exit")
    assert proc.wait(10) == 130, procs.logged(proc)
    stuck = lambda: run_id in graphq("runs", "list", "--stuck", "-o", "json", env=env).stdout  # noqa: E731
    wait_for(stuck, 60, "the cut run's lease to lapse")
    assert show(run_id, env)["status"] == "running"
    (tmp_path / "hold").unlink()
    done = graphq("run", "held", "--input", '{"heed": true}', env=env | {"GRAPHQ_REAPER_INTERVAL_S": "600"})
    assert done.returncode == 0, done.stderr
    record = show(run_id, env)
    assert (record["status"], record["error"]["type"]) == ("canceled", "Canceled"), record


def test_run_help_and_the_command_line_reference_say_what_ctrl_c_does(env: dict[str, str]) -> None:
    done = graphq("run", "--help", env=env)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "Ctrl-C (or SIGTERM) cancels the run after its step in flight, and says so at once" in text
    assert "A second Ctrl-C exits 130 at once, cutting the step: the run stays running until crash" in text
    page = " ".join((Path(__file__).parents[1] / "docs" / "reference" / "cli.md").read_text().split())
    assert "the first Ctrl-C says so at once on stderr and cancels the run after its step in flight" in page
    assert "A second Ctrl-C exits 130 at once, cutting the step" in page


def test_second_ctrl_c_after_the_run_ended_says_it_ended(
    procs: Procs, tmp_path: Path, env: dict[str, str], redis_url: str
) -> None:
    """The second Ctrl-C's line said the run was left running with its step cut even when the first one had
    ended it canceled already (the process was still stopping): it now reads how the run is left. Here
    the in-process worker holds another run's ``slow`` step (enqueued first: its jobs come first) while
    the first Ctrl-C cancels ``graphq run``'s own run between its steps (on a configured Redis); the line
    also says the other run's step was cut (it was not said). Both runs unpinned: every step on the one
    workflow queue, in order (a pinned run's next step would go ahead of the other run's)."""
    env = env | {"GRAPHQ_REDIS_URL": redis_url, "GRAPHQ_VERSION_POLICY": "latest"}
    other = graphq("enqueue", "held", "--input", '{"heed": false}', env=env)
    assert other.returncode == 0, other.stderr
    proc, run_id, _ = started_run(procs, tmp_path, env, heed=True)
    assert show(other.stdout.strip(), env)["status"] == "running"  # its slow step holds the worker
    assert show(run_id, env)["step"] == 1  # between its steps
    ctrl_c(proc)
    wait_for(lambda: show(run_id, env)["status"] == "canceled", 20, "the run to end canceled")
    assert proc.poll() is None  # the other run's step still holds the process
    ctrl_c(proc)
    assert proc.wait(10) == 130, procs.logged(proc)
    assert procs.logged(proc).splitlines()[-1] == (
        f"error: interrupted again: stopped at once; run {run_id} is canceled after 1 step(s), checkpoints "
        f"kept; `graphq runs resume {run_id}` continues it; run {other.stdout.strip()}'s step in flight here "
        "was cut: crash recovery continues it once its lease lapses"
    )
