"""KEDA must not scale the workers to zero under running steps (new-user trial): the queue lists
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


def redis_triggers(chart: helm.Chart, redis_values: dict[str, Any], **keda: Any) -> list[dict[str, str]]:
    """The address, databaseIndex and enableTLS of each redis trigger for these ``redis`` values."""
    values = {"redis": redis_values, "autoscaling": {"keda": {**KEDA, **keda}}}
    manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    docs = [yaml.safe_load_all(text) for path, text in manifests.items() if path.endswith("keda.yaml")]
    [scaled] = [d for all_ in docs for d in all_ if d and d["kind"] == "ScaledObject"]
    fields = ("address", "databaseIndex", "enableTLS")
    return [{f: t["metadata"][f] for f in fields} for t in scaled["spec"]["triggers"] if t["type"] == "redis"]


def test_the_redis_triggers_watch_the_db_of_redis_url(chart: helm.Chart) -> None:
    """From the trial: redis.url=redis://:pw@r.prod:6379/3 rendered databaseIndex '0' (empty queues)."""
    db3 = redis_triggers(chart, {"url": "redis://:pw@r.prod:6379/3"}, address="", databaseIndex=0)
    assert db3 == [{"address": "r.prod:6379", "databaseIndex": "3", "enableTLS": "false"}] * 2
    tls = redis_triggers(chart, {"url": "rediss://r.prod/2"})
    assert tls == [{"address": "r.prod:6379", "databaseIndex": "2", "enableTLS": "true"}] * 2
    bare = redis_triggers(chart, {"url": "redis://r.prod:6380"})
    assert bare == [{"address": "r.prod:6380", "databaseIndex": "0", "enableTLS": "false"}] * 2
    query = redis_triggers(chart, {"url": "redis://r.prod:6379/2?socket_timeout=5&db=4"})  # db= wins
    assert query == [{"address": "r.prod:6379", "databaseIndex": "4", "enableTLS": "false"}] * 2
    explicit = redis_triggers(chart, {}, address="r.other:7000", databaseIndex=5, enableTLS=True)
    assert explicit == [{"address": "r.other:7000", "databaseIndex": "5", "enableTLS": "true"}] * 2
