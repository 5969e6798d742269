"""Settings: every range error names the variable, the allowed range and the value; cross-field rules;
GRAPHQ_* variables that are no setting are warned about; names that go into Redis keys are checked."""

from __future__ import annotations

import json
import logging
import re
import signal

import pytest

from graphcore import settings as settings_module
from graphcore.errors import ConfigError
from graphcore.settings import (
    QUEUE_NAME,
    Settings,
    allowed_range,
    load_settings,
    tenant_weights,
    unknown_variables,
)
from tests.workers import ROOT, Procs, graphq, wait_for, worker_env

QUEUE_RULE = (
    "use letters, digits, '_', '.', ':' and '-' only (it names Redis keys and RQ queues: "
    "rq:queue:<queue>:<workflow>)"
)
TENANT_RULE = (
    "is invalid: use 1-200 characters without braces, brackets, ':', '*', '?', spaces or control characters"
)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GRAPHQ_LEASE_TTL_S": "0"}, "GRAPHQ_LEASE_TTL_S: must be 0 < value ≤ 3600 (got '0')"),
        ({"GRAPHQ_DRAIN_TIMEOUT_S": "-1"}, "GRAPHQ_DRAIN_TIMEOUT_S: must be 0 ≤ value ≤ 3600 (got '-1')"),
        (
            {"GRAPHQ_DRAIN_TIMEOUT_S": "3601"},
            "GRAPHQ_DRAIN_TIMEOUT_S: must be 0 ≤ value ≤ 3600 (got '3601')",
        ),
        ({"GRAPHQ_KILL_GRACE_S": "0"}, "GRAPHQ_KILL_GRACE_S: must be 0 < value ≤ 3600 (got '0')"),
        ({"GRAPHQ_KILL_GRACE_S": "3601"}, "GRAPHQ_KILL_GRACE_S: must be 0 < value ≤ 3600 (got '3601')"),
        (
            {"GRAPHQ_MAX_RESUME_ATTEMPTS": "101"},
            "GRAPHQ_MAX_RESUME_ATTEMPTS: must be 0 ≤ value ≤ 100 (got '101')",
        ),
        (
            {"GRAPHQ_MAX_RESUME_ATTEMPTS": "-1"},
            "GRAPHQ_MAX_RESUME_ATTEMPTS: must be 0 ≤ value ≤ 100 (got '-1')",
        ),
        ({"GRAPHQ_REAPER_INTERVAL_S": "0"}, "GRAPHQ_REAPER_INTERVAL_S: must be 0 < value ≤ 600 (got '0')"),
        (
            {"GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S": "0"},
            "GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S: must be 0 < value ≤ 86400 (got '0')",
        ),
        (
            {"GRAPHQ_MAX_REQUEST_EXPIRATIONS_PER_SCAN": "0"},
            "GRAPHQ_MAX_REQUEST_EXPIRATIONS_PER_SCAN: must be 1 ≤ value ≤ 100000 (got '0')",
        ),
        (
            {"GRAPHQ_MAX_CONCURRENT_RUNS": "0"},
            "GRAPHQ_MAX_CONCURRENT_RUNS: must be 1 ≤ value ≤ 1000000 (got '0')",
        ),
        (
            {"GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT": "-3"},
            "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT: must be 1 ≤ value ≤ 1000000 (got '-3')",
        ),
        (
            {"GRAPHQ_MAX_NODE_SETTINGS_LENGTH": "0"},
            "GRAPHQ_MAX_NODE_SETTINGS_LENGTH: must be 1 ≤ value ≤ 16777216 (got '0')",
        ),
        (
            {"GRAPHQ_MAX_CONCURRENT_RUNS": "2", "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT": "3"},
            "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT: must be 1 ≤ value ≤ GRAPHQ_MAX_CONCURRENT_RUNS=2 (got 3)",
        ),
        (
            {"GRAPHQ_TENANT_WEIGHTS": "acme=0"},
            "GRAPHQ_TENANT_WEIGHTS: entry 'acme=0' is not tenant=weight with a weight in "
            "1..1000 (e.g. acme=3) (got 'acme=0')",
        ),
        (
            {"GRAPHQ_ENABLE_CHECKPOINTING": "false"},
            "GRAPHQ_ENABLE_CHECKPOINTING=false cannot be combined with GRAPHQ_RESUME_INTERRUPTED_RUNS=true: "
            "resuming an interrupted run needs its checkpoint history (set one of them the other way)",
        ),
        (
            {"GRAPHQ_ENABLED": "maybe"},
            "GRAPHQ_ENABLED: Input should be a valid boolean, unable to interpret input (got 'maybe')",
        ),
        # names that go into Redis keys and RQ queue names: were accepted
        ({"GRAPHQ_QUEUE": "my queue"}, f"GRAPHQ_QUEUE: {QUEUE_RULE} (got 'my queue')"),
        ({"GRAPHQ_QUEUE": "a,b"}, f"GRAPHQ_QUEUE: {QUEUE_RULE} (got 'a,b')"),  # RQ splits a worker's at ','
        ({"GRAPHQ_QUEUE": "q{1}"}, f"GRAPHQ_QUEUE: {QUEUE_RULE} (got 'q{{1}}')"),
        ({"GRAPHQ_QUEUE": "q\x01"}, f"GRAPHQ_QUEUE: {QUEUE_RULE} (got 'q\\x01')"),
        ({"GRAPHQ_QUEUE": ""}, f"GRAPHQ_QUEUE: {QUEUE_RULE} (got '')"),
        (
            {"GRAPHQ_TENANT_WEIGHTS": "a b=3"},
            f"GRAPHQ_TENANT_WEIGHTS: tenant 'a b' {TENANT_RULE} (got 'a b=3')",
        ),
    ],
)
def test_bad_settings_fail_at_startup_naming_variable_and_range(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == message


def test_checkpointing_off_with_resume_off_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_ENABLE_CHECKPOINTING", "false")
    monkeypatch.setenv("GRAPHQ_RESUME_INTERRUPTED_RUNS", "false")
    s = load_settings()
    assert (s.enable_checkpointing, s.resume_interrupted_runs) == (False, False)


def test_admission_defaults_are_unlimited() -> None:
    s = Settings()
    assert (s.max_concurrent_runs, s.max_concurrent_runs_per_tenant) == (None, None)
    assert (s.enabled, s.enable_checkpointing, s.keep_checkpoints_after_completion) == (True, True, True)
    assert s.max_node_settings_length == 16_384
    assert s.weights() == {}


def test_tenant_weights_parse() -> None:
    assert tenant_weights(" acme=3, ,beta=1 ") == {"acme": 3, "beta": 1}
    with pytest.raises(ValueError, match="'acme' is not tenant=weight"):
        tenant_weights("acme")


def test_allowed_range_reads_the_field_constraints() -> None:
    assert allowed_range("heartbeat_interval_s") == "0 < value ≤ 600"
    assert allowed_range("result_ttl_s") == "0 ≤ value"
    assert allowed_range("queue") == ""


def test_an_empty_limit_means_no_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_MAX_CONCURRENT_RUNS", "")
    monkeypatch.setenv("GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT", " ")
    s = load_settings()
    assert (s.max_concurrent_runs, s.max_concurrent_runs_per_tenant) == (None, None)


def test_a_tenant_given_two_weights_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_TENANT_WEIGHTS", "a=2,a=3")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == "GRAPHQ_TENANT_WEIGHTS: tenant 'a' is given two weights (got 'a=2,a=3')"


def test_queue_names_that_keys_can_carry_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("graphq", "prod:graphq", "team-a.v2_x"):
        monkeypatch.setenv("GRAPHQ_QUEUE", name)
        assert load_settings().queue == name


def test_the_chart_allows_the_queue_names_graphq_does() -> None:
    schema = json.loads((ROOT / "charts/graphq/values.schema.json").read_text())
    assert schema["properties"]["config"]["properties"]["queue"]["pattern"] == f"^{QUEUE_NAME.pattern}$"


def test_unknown_variables_are_named_with_the_closest_setting() -> None:
    env = {
        "GRAPHQ_LEASE_TTL": "0",  # GRAPHQ_LEASE_TTL_S
        "graphq_queuee": "q",  # pydantic reads names in any case
        "GRAPHQ_FOO": "1",
        "GRAPHQ_LEASE_TTL_S": "5",
        "graphq_lease_ttl_s": "5",
        "GRAPHQ_TEST_DIR": "/tmp/x",  # read by the test suite's workflows
        "GRAPHQ_REDIS_SERVER": "redis-server",  # the embedded server's binary
        "GRAPHQ_SCHEDULER_TEST_CLOCK": "0,0,60",
        "PATH": "/bin",
    }
    assert unknown_variables(env) == [
        "GRAPHQ_FOO",
        "GRAPHQ_LEASE_TTL (did you mean GRAPHQ_LEASE_TTL_S?)",
        "graphq_queuee (did you mean GRAPHQ_QUEUE?)",
    ]


_NAMED = re.compile(
    r"[\"'](GRAPHQ_[A-Z0-9_]*[A-Z0-9])[\"']|^\s*-?\s*(GRAPHQ_[A-Z0-9_]+)\s*[:=]", re.MULTILINE
)
"""A GRAPHQ_* name quoted, or set at the start of a line (a YAML key, a shell or Dockerfile assignment)."""


def test_no_variable_graphq_reads_is_warned_about() -> None:
    """Every GRAPHQ_* name the code, the test helpers and workflows, the chart and the CI quote or set is a
    setting or a variable graphq reads (settings.OTHER_VARIABLES, GRAPHQ_TEST_*): none is warned about."""
    sources = [
        *[
            p
            for d in ("graphcore", "worker", "scheduler", "cli", "examples", "bench")
            for p in (ROOT / d).rglob("*.py")
        ],
        *(ROOT / "tests/workflows").rglob("*.py"),
        *(ROOT / "tests" / n for n in ("workers.py", "conftest.py", "envs.py", "cli_helpers.py")),
        *(ROOT / "charts").rglob("*.yaml"),
        ROOT / "Dockerfile",
        ROOT / ".ci/run",
    ]
    names = {name for path in sources for pair in _NAMED.findall(path.read_text()) for name in pair if name}
    assert {"GRAPHQ_REDIS_SERVER", "GRAPHQ_TEST_DIR", "GRAPHQ_SCHEDULER_TEST_CLOCK", "GRAPHQ_QUEUE"} <= names
    assert unknown_variables(dict.fromkeys(names, "")) == []


def test_an_unknown_variable_is_warned_about_once_per_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A misspelt GRAPHQ_LEASE_TTL=0 was ignored without a word."""
    monkeypatch.setattr(settings_module, "_warned", set())
    monkeypatch.delenv("GRAPHQ_LEASE_TTL_S", raising=False)
    monkeypatch.setenv("GRAPHQ_LEASE_TTL", "0")
    caplog.set_level(logging.WARNING, logger="graphq.settings")
    assert load_settings().lease_ttl_s == 20.0  # ignored: the setting keeps its default
    load_settings()
    monkeypatch.setenv("GRAPHQ_QUEUEE", "q")
    load_settings()
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            "graphq.settings",
            logging.WARNING,
            "not graphq settings, ignored: GRAPHQ_LEASE_TTL (did you mean GRAPHQ_LEASE_TTL_S?)",
        ),
        (
            "graphq.settings",
            logging.WARNING,
            "not graphq settings, ignored: GRAPHQ_QUEUEE (did you mean GRAPHQ_QUEUE?)",
        ),
    ]


WARNING = (
    "WARNING graphq.settings: not graphq settings, ignored: GRAPHQ_LEASE_TTL "
    "(did you mean GRAPHQ_LEASE_TTL_S?)"
)


def _warnings(stderr: str) -> list[str]:
    """The lines of ``stderr`` that warn about the variables, without their time."""
    found = [line for line in stderr.splitlines() if "not graphq settings" in line]
    return [line.split(" ", 2)[2] if line[:1].isdigit() else line for line in found]


def test_a_command_warns_on_stderr_and_its_output_stays_the_same(redis_url: str) -> None:
    env = worker_env(redis_url, "tests.workflows.basic")
    assert graphq("enqueue", "counter", "--input", '{"n": 1}', env=env).returncode == 0
    plain = graphq("runs", "list", "-o", "json", env=env)
    warned = graphq("runs", "list", "-o", "json", env={**env, "GRAPHQ_LEASE_TTL": "0"})
    assert (warned.returncode, plain.returncode) == (0, 0)
    assert warned.stdout == plain.stdout and json.loads(warned.stdout)
    assert _warnings(plain.stderr) == []
    assert _warnings(warned.stderr) == [WARNING]
    as_json = graphq("runs", "list", env={**env, "GRAPHQ_LEASE_TTL": "0", "GRAPHQ_LOG_FORMAT": "json"})
    [line] = [json.loads(x) for x in as_json.stderr.splitlines() if "graphq.settings" in x]
    assert (line["level"], line["message"]) == ("WARNING", WARNING.split(": ", 1)[1])


def test_a_worker_warns_once_not_in_each_worker_process(redis_url: str) -> None:
    env = worker_env(redis_url, "tests.workflows.basic", GRAPHQ_LEASE_TTL="0")
    done = graphq("worker", "--burst", "--concurrency", "3", env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _warnings(done.stderr) == [WARNING]


def test_the_scheduler_warns_once(redis_url: str, procs: Procs) -> None:
    env = worker_env(redis_url, "tests.workflows.basic", GRAPHQ_LEASE_TTL="0")
    proc = procs.start("scheduler", env=env)
    wait_for(lambda: "graphq scheduler" in procs.logged(proc), what="the scheduler's start line")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert _warnings(procs.logged(proc)) == [WARNING]
