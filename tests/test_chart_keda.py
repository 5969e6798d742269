"""KEDA must not scale the workers to zero under running steps (new-user trial, issue 10): the queue lists
hold only queued steps, so the chart keeps one pod by default, can add a trigger on the runs running, and
warns when minReplicaCount 0 is set without it."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import yaml

from tests.test_chart import FULL, KEDA, NAMESPACE, RELEASE, URL, chart

__all__ = ["chart"]  # the module-scoped fixture, shared with test_chart

WARNING = "WARNING: autoscaling.keda.minReplicaCount is 0 without autoscaling.keda.prometheus.serverAddress"


def rendered(chart: helm.Chart, keda: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The ScaledObject's spec and NOTES.txt for these ``autoscaling.keda`` values."""
    manifests = chart.render(
        {**URL, "autoscaling": {"keda": {**KEDA, **keda}}}, name=RELEASE, namespace=NAMESPACE
    )
    notes = next(text for path, text in manifests.items() if path.endswith("NOTES.txt"))
    docs = [
        d for path, text in manifests.items() if path.endswith("keda.yaml") for d in yaml.safe_load_all(text)
    ]
    [scaled] = [
        d for d in docs if d and d["kind"] == "ScaledObject" and d["metadata"]["name"] == f"{FULL}-worker"
    ]
    spec: dict[str, Any] = scaled["spec"]
    return spec, notes


def test_by_default_one_worker_pod_stays_and_no_warning(chart: helm.Chart) -> None:
    spec, notes = rendered(chart, {})
    assert spec["minReplicaCount"] == 1
    assert [t["type"] for t in spec["triggers"]] == ["redis", "redis"]
    assert WARNING not in notes


def test_scale_to_zero_without_a_running_count_is_warned_about(chart: helm.Chart) -> None:
    spec, notes = rendered(chart, {"minReplicaCount": 0})
    assert spec["minReplicaCount"] == 0
    assert WARNING in notes
    assert "cooldownPeriod (300 s)" in notes


def test_a_prometheus_trigger_counts_the_runs_running(chart: helm.Chart) -> None:
    address = "http://prometheus.monitoring:9090"
    spec, notes = rendered(chart, {"minReplicaCount": 0, "prometheus": {"serverAddress": address}})
    assert [t["type"] for t in spec["triggers"]] == ["redis", "redis", "prometheus"]
    assert spec["triggers"][2] == {
        "type": "prometheus",
        "metadata": {
            "serverAddress": address,
            "query": f'sum(max by (tenant) (graphq_runs_running{{namespace="{NAMESPACE}"}}))',
            "threshold": "5",
            "activationThreshold": "0",
        },
    }
    assert WARNING not in notes
    own = {"serverAddress": address, "query": "sum(graphq_runs_running)"}
    spec, _ = rendered(chart, {"prometheus": own})
    assert spec["triggers"][2]["metadata"]["query"] == "sum(graphq_runs_running)"
