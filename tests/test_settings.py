"""Settings: every range error names the variable, the allowed range and the value; cross-field rules."""

from __future__ import annotations

import pytest

from graphcore.errors import ConfigError
from graphcore.settings import Settings, allowed_range, load_settings, tenant_weights


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
