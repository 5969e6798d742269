"""Log lines (O4): context fields, JSON lines, no password, with real `graphq worker` processes."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphq.worker import logs
from tests.workers import Procs, ended, graphq, wait_for, worker_env
from tests.workflows.shutdown import started

REGISTRY = Registry.load(["tests.workflows.basic", "tests.workflows.shutdown"])
PASSWORD = "s3cret-Pw_4xyz"  # 14 characters: long enough to be masked outside a URL too


@pytest.fixture
def secret_url(redis_url: str, redis_client: redis.Redis) -> Iterator[str]:
    """The test Redis through an ACL user whose password is :data:`PASSWORD` (removed after)."""
    redis_client.execute_command("ACL", "SETUSER", "tester", "on", f">{PASSWORD}", "~*", "&*", "+@all")
    at = urlsplit(redis_url)
    try:
        yield f"redis://tester:{PASSWORD}@{at.hostname}:{at.port}{at.path}"
    finally:
        redis_client.execute_command("ACL", "DELUSER", "tester")


def test_worker_json_lines_carry_the_step_context_and_no_password(
    client: Client, secret_url: str, tmp_path: Path
) -> None:
    failed = client.enqueue("failing", {"n": 1}, tenant="beta", thread_id="t-logs")
    done = client.enqueue("counter", {"limit": 2}, tenant="acme")
    env = worker_env(secret_url, "tests.workflows.basic", tmp_path, GRAPHQ_LOG_FORMAT="json")
    result = graphq("worker", "--burst", "--log-level", "info", env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (client.get_run(failed).status, client.get_run(done).status) == (
        RunStatus.FAILED,
        RunStatus.COMPLETED,
    )
    output = result.stdout + result.stderr
    assert PASSWORD not in output
    assert "tester:***@" in output  # the banner names the Redis, redacted
    lines = [line for line in output.splitlines() if line.startswith("{")]
    assert len(lines) >= 3
    entries = [json.loads(line) for line in lines]  # every line is one whole JSON object
    ended = [e for e in entries if e["message"].startswith(f"run {failed} failed at step 2")]
    assert len(ended) == 1
    entry = ended[0]
    assert set(entry) == {"time", "level", "logger", "message", "workflow", "run", "thread", "step", "tenant"}
    assert (entry["level"], entry["logger"], entry["workflow"], entry["run"]) == (
        "WARNING",  # a failed run is a warning: graphq worker's default level shows it
        "graphq.runs",
        "failing",
        failed,
    )
    assert (entry["thread"], entry["step"], entry["tenant"]) == ("t-logs", 2, "beta")  # the thread's step
    assert entry["time"].endswith("+00:00")


def test_the_step_of_a_line_is_the_threads_step_in_a_run_that_continues_its_thread(
    client: Client, redis_url: str, tmp_path: Path
) -> None:
    """The step of a step job's lines was the run's own count (``failed at step 2 ... step=0`` for a
    resumed run, ``step=1`` for a new one): it is the thread's, as in ``graphq state --history``."""
    failed = client.enqueue("failing", {"n": 1}, thread_id="t-steps")
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path)
    assert graphq("worker", "--burst", env=env, timeout=60).returncode == 0
    resumed = client.resume(failed)
    result = graphq("worker", "--burst", env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert client.thread_step(client.get_run(resumed)) == 2
    [line] = [line for line in result.stderr.splitlines() if f"run {resumed} failed" in line]
    assert line.endswith(
        f"WARNING graphq.runs: run {resumed} failed at step 2: node 'explode' raised RuntimeError: kaboom at "
        "node explode "
        f"[workflow=failing run={resumed} thread=t-steps step=2 tenant=default]"
    ), line


def test_cli_text_lines_redact_a_password_in_any_url(secret_url: str) -> None:
    record = logging.LogRecord(
        "graphq.test", logging.WARNING, __file__, 1, "connecting to %s failed", (secret_url,), None
    )
    logs.configure(logging.WARNING, "text", secret_url)
    try:
        text = logs.TextFormatter().format(record)
        as_json = json.loads(logs.JsonFormatter().format(record))
        bare = logs.redact(f"password is {PASSWORD} and rediss://u:{PASSWORD}@h:1/0")
    finally:
        logs.configure(logging.WARNING, "text", None)
    assert PASSWORD not in text and PASSWORD not in as_json["message"]
    assert text.endswith(
        "WARNING graphq.test: connecting to " + secret_url.replace(PASSWORD, "***") + " failed"
    )
    assert bare == "password is *** and rediss://u:***@h:1/0"
    assert logs.redact("see https://bob:hunter2@example.com/x@y") == "see https://bob:***@example.com/x@y"


def test_a_short_configured_password_is_masked_in_urls_only() -> None:
    logs.configure(logging.WARNING, "text", "redis://bob:default@h:6379/0")
    try:
        line = logs.redact("tenant default on redis://bob:default@h:6379/0; a default password")
    finally:
        logs.configure(logging.WARNING, "text", None)
    assert line == "tenant default on redis://bob:***@h:6379/0; a default password"
    assert logs.redact("redis://:pw@h:6379/0 then unix://:x@/tmp/s.sock") == (
        "redis://:***@h:6379/0 then unix://:***@/tmp/s.sock"
    )


def test_a_real_password_spelled_password_is_masked_and_placeholders_are_kept() -> None:
    assert logs.redact_urls("redis://:password@redis:6379/0 and redis://bob:Password@h/1") == (
        "redis://:***@redis:6379/0 and redis://bob:***@h/1"
    )
    kept = (
        "give it in the URL, redis://:PASSWORD@HOST:PORT/DB (or redis://USER:PASSWORD@... for an ACL user); "
        "redis://[:password@]host:port/db, redis://[[user]:password@]host[:port][/db], redis://:***@h/0"
    )
    assert logs.redact_urls(kept) == kept


def test_text_lines_list_the_context_that_is_known() -> None:
    record = logging.LogRecord("graphq.step", logging.WARNING, __file__, 1, "slow", (), None)
    fields, token = logs.bind(run="r1", thread="t1", step=3)
    try:
        fields["workflow"] = "wf"
        line = logs.TextFormatter().format(record)
    finally:
        logs.unbind(token)
    assert line.endswith("WARNING graphq.step: slow [workflow=wf run=r1 thread=t1 step=3]")
    assert logs.TextFormatter().format(record).endswith("graphq.step: slow")


def test_cli_with_json_log_format_writes_json_lines(redis_url: str, tmp_path: Path) -> None:
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path, GRAPHQ_LOG_FORMAT="json")
    result = graphq("-v", "workers", env=env)
    assert result.returncode == 0, result.stderr
    for line in result.stderr.splitlines():
        assert json.loads(line)["level"] in ("INFO", "WARNING"), line


def test_bad_log_format_is_refused_naming_the_setting(redis_url: str, tmp_path: Path) -> None:
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path, GRAPHQ_LOG_FORMAT="xml")
    result = graphq("workers", env=env)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "GRAPHQ_LOG_FORMAT" in result.stderr, result.stderr


def test_supervisor_and_reaper_lines_about_a_run_carry_it(
    client: Client, procs: Procs, redis_url: str, tmp_path: Path
) -> None:
    env = worker_env(
        redis_url,
        "tests.workflows.basic,tests.workflows.shutdown",
        tmp_path,
        GRAPHQ_LOG_FORMAT="json",
        GRAPHQ_LEASE_TTL_S="1",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.2",
        GRAPHQ_REAPER_INTERVAL_S="0.3",
    )
    proc = procs.start("worker", env=env)
    run_id = client.enqueue("two-steps", {"first": {"sleep": 30}}, thread_id="t-killed", tenant="acme")
    [pid] = wait_for(lambda: started(tmp_path, "first"), what="the slow step to start")
    os.kill(pid, signal.SIGKILL)
    ended(client, run_id)

    def entries() -> list[dict[str, Any]]:
        lines = procs.logged(proc).splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def about_run() -> list[dict[str, Any]]:
        return [e for e in entries() if e["message"].startswith(f"run {run_id}: lease lapsed")]

    [reaped] = wait_for(about_run, what="the reaper's line")
    died = [e for e in entries() if e["message"].startswith(f"worker process {pid} died")]
    assert [(e["logger"], e["run"], e["thread"]) for e in died] == [("graphq.supervisor", run_id, "t-killed")]
    assert (reaped["logger"], reaped["run"], reaped["thread"]) == ("graphq.reaper", run_id, "t-killed")


def test_with_json_every_line_of_a_worker_is_json_and_rq_lines_name_the_job(
    client: Client, redis_url: str, tmp_path: Path
) -> None:
    """The banner was plain text, and RQ's lines about a step job had no run or step."""
    failed = client.enqueue("failing", {"n": 1}, tenant="beta")
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path, GRAPHQ_LOG_FORMAT="json")
    result = graphq("worker", "--burst", "--log-level", "info", env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    entries = [json.loads(line) for line in result.stderr.splitlines()]  # every line
    banner = entries[0]
    assert (banner["level"], banner["logger"]) == ("INFO", "graphq.worker")
    workflows = ", ".join(Registry.load(["tests.workflows.basic"]).names())
    assert banner["message"] == (
        f"graphq worker: 1 process(es) on {redis_url}, queues 'graphq:<workflow>' and "
        f"'graphq:<workflow>@<version>'; workflows: {workflows}"
    )
    about_jobs = [e for e in entries if e["logger"].startswith("rq") and f"graphq-{failed}-" in e["message"]]
    assert len(about_jobs) >= 2  # the job's start and its end, for each of its 2 steps
    assert {e["run"] for e in about_jobs} == {failed}
    assert [e for e in about_jobs if "step" in e] == []  # a job id counts the run's steps, not the thread's


def test_the_banner_names_the_queues_by_their_configured_prefix(redis_url: str, tmp_path: Path) -> None:
    """GRAPHQ_QUEUE is the queues' prefix (``jobs:<workflow>``); the banner said ``queue 'graphq'``."""
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path, GRAPHQ_QUEUE="jobs")
    result = graphq("worker", "--burst", env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    workflows = ", ".join(Registry.load(["tests.workflows.basic"]).names())
    assert result.stderr.splitlines()[0] == (
        f"graphq worker: 1 process(es) on {redis_url}, queues 'jobs:<workflow>' and "
        f"'jobs:<workflow>@<version>'; workflows: {workflows}"
    )


def test_announce_is_a_json_line_or_the_text_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        logs.configure(logging.WARNING, "json")
        logs.announce("graphq scheduler s-1: stopped", "graphq.scheduler")
        logs.configure(logging.WARNING, "text")
        logs.announce("graphq scheduler s-1: stopped", "graphq.scheduler")
    finally:
        logs.configure(logging.WARNING, "text")
    first, second = capsys.readouterr().err.splitlines()
    entry = json.loads(first)
    assert (entry["level"], entry["logger"], entry["message"]) == (
        "INFO",
        "graphq.scheduler",
        "graphq scheduler s-1: stopped",
    )
    assert second == "graphq scheduler s-1: stopped"


def test_a_crash_with_json_is_one_json_line_with_the_traceback(redis_url: str, tmp_path: Path) -> None:
    code = (
        "import logging, threading\n"
        "from graphq.worker import logs\n"
        "logs.configure(logging.WARNING, 'json')\n"
        "t = threading.Thread(target=lambda: 1 / 0); t.start(); t.join()\n"
        "raise RuntimeError('kaboom redis://:pw1@h:1/0')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    entries = [json.loads(line) for line in result.stderr.splitlines()]  # one line each
    assert [(e["level"], e["logger"], e["message"]) for e in entries] == [
        ("CRITICAL", "graphq", "uncaught ZeroDivisionError: division by zero"),
        ("CRITICAL", "graphq", "uncaught RuntimeError: kaboom redis://:***@h:1/0"),
    ]
    assert entries[1]["exception"].startswith("Traceback (most recent call last):")
    assert entries[1]["exception"].endswith("RuntimeError: kaboom redis://:***@h:1/0")


def test_a_failed_run_is_logged_at_the_worker_default_level_and_not_twice_by_graphq_run(
    client: Client, redis_url: str, tmp_path: Path
) -> None:
    """From the new-user trial: a failed run logged at INFO, so ``graphq worker`` at its default level
    (warning) said nothing of it. It is a WARNING of ``graphq.runs`` now; ``graphq run``, which reports the
    end itself, prints it once (its error line), not also as a log line."""
    failed = client.enqueue("failing", {"n": 1}, thread_id="t-warn")
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path)
    result = graphq("worker", "--burst", env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    ended_lines = [line for line in result.stderr.splitlines() if f"run {failed} failed at step 2" in line]
    assert len(ended_lines) == 1 and " WARNING graphq.runs: " in ended_lines[0], result.stderr
    inline = graphq("run", "failing", "--input", '{"n": 1}', env=env, timeout=60)
    assert inline.returncode == 1
    said = [line for line in inline.stderr.splitlines() if "failed at step 2" in line]
    assert len(said) == 1 and said[0].startswith("error: run "), inline.stderr


def test_with_json_an_error_line_is_a_json_line(redis_url: str, tmp_path: Path) -> None:
    """A pod that refuses to start (exit 2) says why in one JSON line under GRAPHQ_LOG_FORMAT=json; the text
    format keeps ``error: ...``."""
    env = worker_env(redis_url, "tests.workflows.basic", tmp_path, GRAPHQ_LOG_FORMAT="json")
    bad = {**env, "GRAPHQ_LEASE_TTL_S": "abc"}
    usage = "graphq worker: Invalid value for '--concurrency' / '-c': 0 is not in the range 1<=x<=256"
    setting = "GRAPHQ_LEASE_TTL_S: Input should be a valid number, unable to parse string as a number"
    said = {
        f"{usage} (see graphq worker --help)": graphq("worker", "--concurrency", "0", env=env),
        f"{setting} (got 'abc')": graphq("worker", "--burst", env=bad),
    }
    for message, result in said.items():
        assert result.returncode == 2
        [line] = result.stderr.splitlines()
        entry = json.loads(line)
        assert entry["time"].endswith("+00:00")
        del entry["time"]
        assert entry == {"level": "ERROR", "logger": "graphq.cli", "message": message}
    text = graphq("worker", "--concurrency", "0", env={**env, "GRAPHQ_LOG_FORMAT": "text"})
    assert (text.returncode, text.stderr.startswith("error: graphq worker: ")) == (2, True), text.stderr
