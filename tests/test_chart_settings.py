"""The chart refuses what would make its pods fail at start or block node drains: ``config.settings``
values outside graphq's own bounds (``values.schema.json``, checked when Helm renders) and a
PodDisruptionBudget that no eviction could ever satisfy (new-user trial)."""

from __future__ import annotations

import json
from typing import Any

import annotated_types as at
import helm_python as helm
import pytest
import yaml

from graphcore.errors import ConfigError
from graphcore.settings import Settings
from graphq.scheduler.loop import check_settings
from tests.test_chart import CHART, FULL, URL, chart, render, render_error, schema_error

__all__ = ["chart"]  # the module-scoped fixture, shared with test_chart

_INTEGER = {0: "^[0-9]+$", 1: "^0*[1-9][0-9]*$"}
"""Patterns of an integer string at least the key (``ge``)."""
_NUMBER = {
    ("ge", 0): r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)$",
    ("ge", 1): r"^0*[1-9][0-9]*(\.[0-9]*)?$",
    ("gt", 0): r"^([0-9]*[1-9][0-9]*(\.[0-9]*)?|0*\.[0-9]*[1-9][0-9]*)$",
}
"""Patterns of a decimal string (no sign, no exponent) at least (``ge``) or above (``gt``) a bound."""


def bounded(name: str) -> dict[str, Any] | None:
    """The schema of ``GRAPHQ_<NAME>`` in ``config.settings`` stating graphq's bounds of it: a number
    within them, or a decimal string at or above its lower bound (Helm's JSON schema cannot compare a
    string with a number: the upper bound is for numbers only); None for a setting without bounds."""
    field = Settings.model_fields[name]
    integer = int in (field.annotation, *getattr(field.annotation, "__args__", ()))
    low = {k: getattr(m, k) for m in field.metadata for k in ("gt", "ge", "le") if hasattr(m, k)}
    schema: dict[str, Any] = {"type": ["string", "integer" if integer else "number"]}
    if "ge" in low:
        schema["minimum"] = low["ge"]
        schema["pattern"] = _INTEGER[low["ge"]] if integer else _NUMBER[("ge", low["ge"])]
    elif "gt" in low:
        schema["exclusiveMinimum"] = low["gt"]
        schema["pattern"] = _NUMBER[("gt", low["gt"])]
    else:
        return None
    if "le" in low:
        schema["maximum"] = low["le"]
    return schema


def stated() -> dict[str, dict[str, Any]]:
    """What ``config.settings`` in values.schema.json should say of every bounded setting."""
    found = {}
    for name, field in Settings.model_fields.items():
        if any(isinstance(m, at.Gt | at.Ge) for m in field.metadata):
            schema = bounded(name)
            if schema is not None:
                found[f"GRAPHQ_{name.upper()}"] = schema
    return found


def settings_schema() -> dict[str, Any]:
    schema = json.loads((CHART / "values.schema.json").read_text())
    properties: dict[str, Any] = schema["properties"]["config"]["properties"]["settings"]["properties"]
    return properties


def test_the_schema_states_the_bounds_of_every_numeric_setting() -> None:
    properties = settings_schema()
    mine = {k: v for k, v in properties.items() if v is not False}
    chart_sets = {k for k, v in properties.items() if v is False}  # GRAPHQ_DRAIN_TIMEOUT_S, ...
    expected = {k: v for k, v in stated().items() if k not in chart_sets}
    assert mine == expected, "regenerate with: tests.test_chart_settings.stated()"
    assert len(mine) == 35 and "GRAPHQ_LEASE_TTL_S" in mine


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GRAPHQ_LEASE_TTL_S", "0"),
        ("GRAPHQ_LEASE_TTL_S", "0.0"),
        ("GRAPHQ_LEASE_TTL_S", "-5"),
        ("GRAPHQ_LEASE_TTL_S", "20s"),
        ("GRAPHQ_LEASE_TTL_S", 4000),
        ("GRAPHQ_MAX_SUPER_STEPS", "0"),
        ("GRAPHQ_MAX_SUPER_STEPS", "1.5"),
        ("GRAPHQ_RESULT_TTL_S", -1),
    ],
)
def test_settings_out_of_their_bounds_do_not_render(chart: helm.Chart, name: str, value: Any) -> None:
    said = schema_error(chart, {**URL, "config": {"settings": {name: value}}})
    assert f"/config/settings/{name}" in said, said


@pytest.mark.parametrize(
    "settings",
    [
        {"GRAPHQ_LEASE_TTL_S": "0.5", "GRAPHQ_HEARTBEAT_INTERVAL_S": ".1"},
        {"GRAPHQ_LEASE_TTL_S": 30, "GRAPHQ_MAX_RESUME_ATTEMPTS": "0", "GRAPHQ_RESULT_TTL_S": "0"},
        {"GRAPHQ_THREAD_TTL_S": "86400", "GRAPHQ_MAX_SUPER_STEPS": "007"},
    ],
)
def test_settings_within_their_bounds_render_and_load(chart: helm.Chart, settings: dict[str, Any]) -> None:
    data = render(chart, {**URL, "config": {"settings": settings}})[("ConfigMap", f"{FULL}-config")]["data"]
    loaded = Settings.model_validate({k.removeprefix("GRAPHQ_").lower(): v for k, v in data.items()})
    assert all(
        float(getattr(loaded, k.removeprefix("GRAPHQ_").lower())) == float(v) for k, v in settings.items()
    )


@pytest.mark.parametrize("component", ["worker", "scheduler"])
def test_one_replica_gets_a_budget_that_lets_a_node_drain(chart: helm.Chart, component: str) -> None:
    """minAvailable 1 of 1 scheduler pod refused every eviction: a node drain waited for ever."""
    objects = render(chart, {**URL, component: {"replicas": 1}})
    pdb = objects[("PodDisruptionBudget", f"{FULL}-{component}")]["spec"]
    assert (pdb.get("maxUnavailable"), pdb.get("minAvailable")) == (1, None)
    assert objects[("Deployment", f"{FULL}-{component}")]["spec"]["replicas"] == 1


def test_the_charts_setting_defaults_are_graphqs() -> None:
    text = (CHART / "templates" / "_helpers.tpl").read_text()
    block = text.split('{{- define "graphq.settingDefaults" -}}\n', 1)[1].split("{{- end }}", 1)[0]
    defaults = yaml.safe_load(block)
    assert len(defaults) == 8
    for name, value in defaults.items():
        assert Settings.model_fields[name.removeprefix("GRAPHQ_").lower()].default == value, name


CROSS = [
    ({"GRAPHQ_THREAD_TTL_S": "5"}, "GRAPHQ_THREAD_TTL_S=5 must be at least GRAPHQ_LEASE_TTL_S=20"),
    ({"GRAPHQ_THREAD_TTL_S": 40, "GRAPHQ_LEASE_TTL_S": "60"}, "GRAPHQ_THREAD_TTL_S=40 must be at least"),
    (
        {"GRAPHQ_SCHEDULER_GRACE_S": "0.5"},
        "GRAPHQ_SCHEDULER_GRACE_S=0.5 is below GRAPHQ_SCHEDULER_INTERVAL_S=1",
    ),
    (
        {"GRAPHQ_HEARTBEAT_INTERVAL_S": 20},
        "GRAPHQ_HEARTBEAT_INTERVAL_S=20 must be below GRAPHQ_LEASE_TTL_S=20",
    ),
    ({"GRAPHQ_RUN_TIMEOUT_S": "700000"}, "GRAPHQ_RUN_TIMEOUT_S=700000 must not exceed"),
    (
        {"GRAPHQ_MAX_CONCURRENT_RUNS": 2, "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT": "3"},
        "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT=3 must not exceed GRAPHQ_MAX_CONCURRENT_RUNS=2",
    ),
    ({"GRAPHQ_ENABLE_CHECKPOINTING": False}, "GRAPHQ_ENABLE_CHECKPOINTING=false cannot be combined"),
    ({"GRAPHQ_THREAD_TTL_S": "20", "GRAPHQ_SCHEDULER_GRACE_S": 1}, None),
    ({"GRAPHQ_ENABLE_CHECKPOINTING": "false", "GRAPHQ_RESUME_INTERRUPTED_RUNS": "false"}, None),
    ({"GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT": 50, "GRAPHQ_RUN_TIMEOUT_S": 604800}, None),
    (
        {"GRAPHQ_LEASE_TTL_S": "4", "GRAPHQ_HEARTBEAT_INTERVAL_S": "3.5", "GRAPHQ_SCHEDULER_INTERVAL_S": 2},
        None,
    ),
]


@pytest.mark.parametrize(("settings", "refused"), CROSS)
def test_settings_that_contradict_each_other_do_not_render(
    chart: helm.Chart, settings: dict[str, Any], refused: str | None
) -> None:
    """From the trial: GRAPHQ_THREAD_TTL_S 5 (below the lease TTL) or GRAPHQ_SCHEDULER_GRACE_S 0.5 (below
    the scheduler interval) rendered, then every pod crashed at start. The render fails exactly when graphq's
    own checks (Settings.check, the scheduler's check_settings) would refuse the rendered ConfigMap."""
    values = {**URL, "config": {"settings": settings}}
    if refused is not None:
        assert f"graphq: config.settings: {refused}" in render_error(chart, values)
    else:
        render(chart, values)
    data = settings_of(settings)
    try:
        check_settings(Settings.model_validate(data).check())
    except ConfigError:
        assert refused is not None
    else:
        assert refused is None


def settings_of(settings: dict[str, Any]) -> dict[str, str]:
    """``settings`` as the ConfigMap holds them (strings), as Settings' field names."""
    as_text = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}
    return {k.removeprefix("GRAPHQ_").lower(): v for k, v in as_text.items()}
