"""The Helm chart ``charts/graphq``: rendered by Helm itself (helm-python-sdk: Helm's Go SDK in a wheel, no
helm binary), every object validated against the Kubernetes API schemas (kubernetes-validate, offline, strict:
no unknown fields) for the oldest Kubernetes the chart supports and the newest the package ships, the chart
linted, and for the defaults and each variant (existing secret, chart-made secret, bundled Redis, HPA, KEDA,
ServiceMonitor) the fields that matter asserted: the commands the pods run parse with the real CLI, probes
run ``graphq health``, the grace period is above the drain timeout, KEDA excludes the HPA and ``replicas``,
the schema rejects bad values with its message, checksums follow the settings, pods run as non-root; and
each pod's container, run here as rendered on the test Redis, passes its probes and stops within its grace
period."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml
from rq import Queue

from graphcore.backend.embedded import EmbeddedRedis
from graphcore.settings import Settings
from graphq.cli.main import main as graphq_cli
from graphq.worker.queue import queue_name
from tests.envs import clean_env
from tests.workers import SCRIPT, Procs, wait_for

CHART = Path(__file__).resolve().parent.parent / "charts" / "graphq"
RELEASE, NAMESPACE = "demo", "jobs"
FULL = "demo-graphq"
# The chart's kubeVersion floor and the newest API schemas kubernetes-validate ships.
KUBE_VERSIONS = ("1.25.0", kubernetes_validate.latest_version())
URL = {"redis": {"url": "redis://redis.example:6379/0"}}
KEDA = {"enabled": True, "workflows": ["code-inventory", "approval"], "address": "redis.example:6379"}

Objects = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(chart: helm.Chart, values: dict[str, Any] | None = None) -> Objects:
    """The chart's objects for ``values`` (over values.yaml), by (kind, name), each validated."""
    manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    objects: Objects = {}
    for path, text in manifests.items():
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                key = (doc["kind"], doc["metadata"]["name"])
                assert key not in objects, f"{key} rendered twice"
                objects[key] = doc
    for obj in objects.values():
        validate(obj)
    return objects


def validate(obj: dict[str, Any]) -> None:
    """Check ``obj`` against its Kubernetes API schema (core kinds), or the CRD fields the chart uses."""
    crd = CRD_SCHEMAS.get(obj["kind"])
    if crd is not None:
        assert obj["apiVersion"] == crd["apiVersion"]
        jsonschema.validate(obj, crd["schema"])
        return
    for version in KUBE_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def _strings(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "additionalProperties": False}


# The fields of KEDA's and the Prometheus Operator's CRDs this chart sets (kubernetes-validate ships core API
# schemas only): names, types, required keys and no unknown field, as in keda.sh/v1alpha1 and
# monitoring.coreos.com/v1.
_TARGET = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "name": {"type": "string", "minLength": 1},
    },
}
_META = {
    "type": "object",
    "required": ["name", "labels"],
    "properties": {"name": {"type": "string"}, "labels": {"additionalProperties": {"type": "string"}}},
}
CRD_SCHEMAS: dict[str, dict[str, Any]] = {
    "ScaledObject": {
        "apiVersion": "keda.sh/v1alpha1",
        "schema": {
            "type": "object",
            "required": ["apiVersion", "kind", "metadata", "spec"],
            "properties": {
                "metadata": _META,
                "spec": {
                    "type": "object",
                    "required": ["scaleTargetRef", "triggers"],
                    "additionalProperties": False,
                    "properties": {
                        "scaleTargetRef": _TARGET,
                        **{
                            k: {"type": "integer", "minimum": 0}
                            for k in (
                                "minReplicaCount",
                                "maxReplicaCount",
                                "pollingInterval",
                                "cooldownPeriod",
                            )
                        },
                        "triggers": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "required": ["type", "metadata"],
                                "additionalProperties": False,
                                "properties": {
                                    "type": {"const": "redis"},
                                    "metadata": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                        "required": ["address", "listName", "listLength"],
                                    },
                                    "authenticationRef": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {"name": {"type": "string"}},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    "TriggerAuthentication": {
        "apiVersion": "keda.sh/v1alpha1",
        "schema": {
            "type": "object",
            "required": ["apiVersion", "kind", "metadata", "spec"],
            "properties": {
                "metadata": _META,
                "spec": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "secretTargetRef": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["parameter", "name", "key"],
                                "additionalProperties": False,
                                "properties": {
                                    k: {"type": "string", "minLength": 1}
                                    for k in ("parameter", "name", "key")
                                },
                            },
                        }
                    },
                },
            },
        },
    },
    "ServiceMonitor": {
        "apiVersion": "monitoring.coreos.com/v1",
        "schema": {
            "type": "object",
            "required": ["apiVersion", "kind", "metadata", "spec"],
            "properties": {
                "metadata": _META,
                "spec": {
                    "type": "object",
                    "required": ["selector", "endpoints"],
                    "additionalProperties": False,
                    "properties": {
                        "selector": {
                            "type": "object",
                            "properties": {"matchLabels": {"additionalProperties": {"type": "string"}}},
                        },
                        "podTargetLabels": {"type": "array", "items": {"type": "string"}},
                        "namespaceSelector": _strings(
                            matchNames={"type": "array", "items": {"type": "string"}}
                        ),
                        "endpoints": {
                            "type": "array",
                            "minItems": 1,
                            "items": _strings(
                                port={"type": "string"},
                                path={"type": "string"},
                                interval={"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                                scrapeTimeout={"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                            ),
                        },
                    },
                },
            },
        },
    },
}


def pod(objects: Objects, component: str) -> dict[str, Any]:
    spec: dict[str, Any] = objects[("Deployment", f"{FULL}-{component}")]["spec"]["template"]
    return spec


def container(objects: Objects, component: str) -> dict[str, Any]:
    (only,) = pod(objects, component)["spec"]["containers"]
    assert only["name"] == component
    return only  # type: ignore[no-any-return]


def cli_parses(argv: list[str]) -> None:
    """``graphq ARGV`` parses with the real CLI (commands, options and their types); nothing is run."""
    command: click.Command = graphq_cli
    ctx = click.Context(graphq_cli, info_name="graphq")
    name, args = "graphq", list(argv)
    while isinstance(command, click.Group):
        name, *args = args
        found = command.get_command(ctx, name)
        assert found is not None, f"graphq has no command {name!r} ({' '.join(argv)})"
        command, ctx = found, click.Context(found, info_name=name, parent=ctx)
    command.make_context(name, args, parent=ctx.parent)


def schema_error(chart: helm.Chart, values: dict[str, Any]) -> str:
    with pytest.raises(helm.HelmValuesError) as info:
        chart.render(values, name=RELEASE, namespace=NAMESPACE)
    return str(info.value)


def render_error(chart: helm.Chart, values: dict[str, Any]) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        chart.render(values, name=RELEASE, namespace=NAMESPACE)
    return str(info.value)


# --- lint ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        None,
        URL,
        {"redis": {"bundled": {"enabled": True}}},
        {**URL, "autoscaling": {"hpa": {"enabled": True}}},
        {**URL, "autoscaling": {"keda": KEDA}},
        {**URL, "metrics": {"serviceMonitor": {"enabled": True}}},
    ],
    ids=["defaults", "url", "bundled", "hpa", "keda", "servicemonitor"],
)
def test_chart_lints_strict_without_findings_beyond_the_icon(values: dict[str, Any] | None) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBE_VERSIONS[0]}")
    assert report["errors"] == []
    assert [m["error"] for m in report["messages"]] == ["icon is recommended"]
    assert report["total_charts_linted"] == 1


def test_every_value_in_values_yaml_is_documented_and_schema_covers_it(chart: helm.Chart) -> None:
    """Each key of values.yaml has a comment line above it (or heads a commented section), and the schema
    knows every key (additionalProperties false everywhere: an unknown key is refused)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    ancestors: list[tuple[int, bool]] = []  # (indent, documented) of the keys enclosing this line
    for n, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "-")) or ":" not in stripped:
            continue
        indent = len(line) - len(stripped)
        ancestors = [(i, d) for i, d in ancestors if i < indent]
        documented = (n > 0 and lines[n - 1].strip().startswith("#")) or any(d for _, d in ancestors)
        header = stripped.endswith(":")  # a mapping whose keys are documented one by one
        assert documented or header, f"values.yaml line {n + 1} has no comment: {stripped}"
        ancestors.append((indent, documented))
    schema = chart.schema
    assert schema is not None

    def walk(values: dict[str, Any], node: dict[str, Any], where: str) -> None:
        props = node.get("properties")
        if props is None or isinstance(node.get("additionalProperties"), dict):  # a free-form map
            return
        assert node.get("additionalProperties") is False, f"{where} accepts unknown keys"
        for key, value in values.items():
            assert key in props, f"values.schema.json lacks {where}.{key}"
            if isinstance(value, dict):
                walk(value, props[key], f"{where}.{key}")

    walk(chart.values, schema, "")


# --- defaults --------------------------------------------------------------------------------------------


def test_defaults_render_workers_scheduler_and_no_autoscaler(chart: helm.Chart) -> None:
    objects = render(chart)
    assert sorted(objects) == [
        ("ConfigMap", f"{FULL}-config"),
        ("ConfigMap", f"{FULL}-dashboard"),
        ("Deployment", f"{FULL}-scheduler"),
        ("Deployment", f"{FULL}-worker"),
        ("PodDisruptionBudget", f"{FULL}-scheduler"),
        ("PodDisruptionBudget", f"{FULL}-worker"),
        ("Service", f"{FULL}-scheduler-metrics"),
        ("Service", f"{FULL}-worker-metrics"),
        ("ServiceAccount", FULL),
    ]
    worker = objects[("Deployment", f"{FULL}-worker")]
    assert worker["spec"]["replicas"] == 2
    assert objects[("Deployment", f"{FULL}-scheduler")]["spec"]["replicas"] == 2
    assert container(objects, "worker")["args"] == [
        "worker",
        "--concurrency",
        "2",
        "--metrics-port",
        "9100",
        "--log-level",
        "info",
    ]
    assert container(objects, "scheduler")["args"] == ["scheduler", "--metrics-port", "9101"]
    assert container(objects, "worker")["image"] == "graphq:0.1.0"
    pdbs = tuple(objects[("PodDisruptionBudget", f"{FULL}-{c}")] for c in ("worker", "scheduler"))
    assert pdbs[0]["spec"]["maxUnavailable"] == 1 and pdbs[1]["spec"]["maxUnavailable"] == 1
    for pdb, component in zip(pdbs, ("worker", "scheduler"), strict=True):
        assert pdb["spec"]["selector"]["matchLabels"] == pod(objects, component)["metadata"]["labels"]


@pytest.mark.parametrize("component", ["worker", "scheduler"])
def test_the_commands_the_pods_run_parse_with_the_graphq_cli(chart: helm.Chart, component: str) -> None:
    objects = render(chart, {"worker": {"concurrency": 8}})
    c = container(objects, component)
    cli_parses(c["args"])
    cli_parses(c["livenessProbe"]["exec"]["command"][1:])
    cli_parses(c["readinessProbe"]["exec"]["command"][1:])
    assert container(objects, "worker")["args"][:3] == ["worker", "--concurrency", "8"]


def test_probes_run_graphq_health(chart: helm.Chart) -> None:
    objects = render(chart)
    for component in ("worker", "scheduler"):
        c = container(objects, component)
        assert c["livenessProbe"]["exec"]["command"] == ["graphq", "health", f"--{component}"]
        assert c["readinessProbe"]["exec"]["command"] == ["graphq", "health", f"--{component}", "--ready"]
        assert c["livenessProbe"]["timeoutSeconds"] == 10
        assert c["ports"] == [
            {"name": "metrics", "containerPort": 9100 if component == "worker" else 9101, "protocol": "TCP"}
        ]


def test_pods_run_as_non_root_read_only_without_capabilities(chart: helm.Chart) -> None:
    objects = render(chart, {"redis": {"bundled": {"enabled": True}}})
    templates = [
        pod(objects, "worker"),
        pod(objects, "scheduler"),
        objects[("StatefulSet", f"{FULL}-redis")]["spec"]["template"],
    ]
    for template in templates:
        spec = template["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] > 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        for c in spec["containers"]:
            assert c["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }
    for component in ("worker", "scheduler"):
        assert container(objects, component)["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
        volumes = pod(objects, component)["spec"]["volumes"]
        assert volumes == [{"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}]
        assert pod(objects, component)["spec"]["securityContext"]["runAsUser"] == 10001


# --- drain and grace -------------------------------------------------------------------------------------


def test_grace_period_is_the_drain_timeout_plus_the_margin(chart: helm.Chart) -> None:
    objects = render(chart)
    assert pod(objects, "worker")["spec"]["terminationGracePeriodSeconds"] == 30
    assert objects[("ConfigMap", f"{FULL}-config")]["data"]["GRAPHQ_DRAIN_TIMEOUT_S"] == "20"
    objects = render(chart, {"worker": {"drainTimeoutSeconds": 62.5, "terminationGraceMarginSeconds": 8}})
    assert pod(objects, "worker")["spec"]["terminationGracePeriodSeconds"] == 71
    assert objects[("ConfigMap", f"{FULL}-config")]["data"]["GRAPHQ_DRAIN_TIMEOUT_S"] == "62.5"
    objects = render(chart, {"worker": {"drainTimeoutSeconds": 20, "terminationGracePeriodSeconds": 25}})
    assert pod(objects, "worker")["spec"]["terminationGracePeriodSeconds"] == 25


def test_a_grace_period_too_close_to_the_drain_timeout_fails_rendering(chart: helm.Chart) -> None:
    values = {"worker": {"drainTimeoutSeconds": 20, "terminationGracePeriodSeconds": 24}}
    message = render_error(chart, values)
    assert (
        "graphq: worker.terminationGracePeriodSeconds=24 must be at least worker.drainTimeoutSeconds + 5 = 25"
    ) in message
    message = schema_error(chart, {"worker": {"terminationGraceMarginSeconds": 2}})
    assert "at '/worker/terminationGraceMarginSeconds': minimum: got 2, want 5" in message


# --- settings and checksums ------------------------------------------------------------------------------


def test_settings_configmap_holds_real_settings_and_feeds_both_deployments(chart: helm.Chart) -> None:
    settings = {
        "GRAPHQ_LEASE_TTL_S": 15,
        "GRAPHQ_RESUME_INTERRUPTED_RUNS": True,
        "GRAPHQ_MAX_CONCURRENT_RUNS": 1000000,
        "GRAPHQ_REDIS_RETRY_MAX_WAIT_S": 0.25,
    }
    objects = render(
        chart,
        {
            "config": {"workflows": "myflows.graphs", "settings": settings},
            "worker": {"drainTimeoutSeconds": 3600},
        },
    )
    data = objects[("ConfigMap", f"{FULL}-config")]["data"]
    assert data == {
        "GRAPHQ_QUEUE": "graphq",
        "GRAPHQ_WORKFLOWS": "myflows.graphs",
        "GRAPHQ_LOG_FORMAT": "json",
        "GRAPHQ_DRAIN_TIMEOUT_S": "3600",
        "GRAPHQ_LEASE_TTL_S": "15",
        "GRAPHQ_RESUME_INTERRUPTED_RUNS": "true",
        "GRAPHQ_MAX_CONCURRENT_RUNS": "1000000",
        "GRAPHQ_REDIS_RETRY_MAX_WAIT_S": "0.25",
    }
    fields = {f"GRAPHQ_{name.upper()}" for name in Settings.model_fields}
    assert set(data) <= fields, set(data) - fields
    Settings.model_validate({name.removeprefix("GRAPHQ_").lower(): value for name, value in data.items()})
    for component in ("worker", "scheduler"):
        c = container(objects, component)
        assert c["envFrom"] == [{"configMapRef": {"name": f"{FULL}-config"}}]


def test_checksum_annotation_changes_with_a_setting_only(chart: helm.Chart) -> None:
    def checksums(values: dict[str, Any]) -> tuple[str, str]:
        objects = render(chart, values)
        worker, scheduler = (
            pod(objects, c)["metadata"]["annotations"]["checksum/config"] for c in ("worker", "scheduler")
        )
        assert worker == scheduler
        return worker, scheduler

    base = checksums({})
    assert len(base[0]) == 64
    assert checksums({"worker": {"replicas": 5}}) == base
    assert checksums({"config": {"settings": {"GRAPHQ_LEASE_TTL_S": 15}}}) != base
    assert checksums({"worker": {"drainTimeoutSeconds": 30}}) != base


def test_schema_refuses_settings_the_chart_sets_itself_and_non_graphq_names(chart: helm.Chart) -> None:
    message = schema_error(chart, {"config": {"settings": {"GRAPHQ_REDIS_URL": "redis://x"}}})
    assert "at '/config/settings/GRAPHQ_REDIS_URL': false schema" in message
    message = schema_error(chart, {"config": {"settings": {"GRAPHQ_DRAIN_TIMEOUT_S": 5}}})
    assert "at '/config/settings/GRAPHQ_DRAIN_TIMEOUT_S': false schema" in message
    message = schema_error(chart, {"config": {"settings": {"LEASE_TTL_S": 15}}})
    assert "at '/config/settings': additional properties 'LEASE_TTL_S' not allowed" in message


# --- Redis URL -------------------------------------------------------------------------------------------


def test_existing_secret_gives_the_url_and_the_chart_makes_none(chart: helm.Chart) -> None:
    objects = render(chart, {"redis": {"existingSecret": "prod-redis", "existingSecretKey": "url"}})
    assert not [key for key in objects if key[0] == "Secret"]
    for component in ("worker", "scheduler"):
        assert container(objects, component)["env"] == [
            {"name": "GRAPHQ_REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "prod-redis", "key": "url"}}}
        ]
        assert "checksum/redis-url" not in pod(objects, component)["metadata"]["annotations"]


def test_redis_url_value_becomes_a_secret_whose_change_restarts_the_pods(chart: helm.Chart) -> None:
    objects = render(chart, URL)
    secret = objects[("Secret", f"{FULL}-redis-url")]
    assert base64.b64decode(secret["data"]["redis-url"]).decode() == "redis://redis.example:6379/0"
    assert container(objects, "worker")["env"][0]["valueFrom"]["secretKeyRef"] == {
        "name": f"{FULL}-redis-url",
        "key": "redis-url",
    }
    first = pod(objects, "worker")["metadata"]["annotations"]["checksum/redis-url"]
    again = render(chart, {"redis": {"url": "redis://other:6379/1"}})
    assert pod(again, "worker")["metadata"]["annotations"]["checksum/redis-url"] != first
    assert "at '/redis/url': 'http://x' does not match pattern" in schema_error(
        chart, {"redis": {"url": "http://x"}}
    )


def test_no_redis_at_all_fails_rendering_naming_the_three_ways(chart: helm.Chart) -> None:
    message = render_error(chart, {"redis": {"existingSecret": ""}})
    assert (
        "graphq: no Redis: set redis.existingSecret (a Secret holding the URL), redis.url, or "
        "redis.bundled.enabled=true"
    ) in message


def test_bundled_redis_statefulset_with_append_only_persistence(chart: helm.Chart) -> None:
    objects = render(chart, {"redis": {"bundled": {"enabled": True, "persistence": {"size": "5Gi"}}}})
    sts = objects[("StatefulSet", f"{FULL}-redis")]
    assert sts["spec"]["replicas"] == 1
    assert sts["spec"]["serviceName"] == f"{FULL}-redis"
    (redis,) = sts["spec"]["template"]["spec"]["containers"]
    assert redis["command"] == [
        "redis-server",
        "--dir",
        "/data",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--protected-mode",
        "no",
    ]
    assert redis["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    service = objects[("Service", f"{FULL}-redis")]
    assert service["spec"]["ports"][0]["port"] == 6379
    assert service["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"]
    url = base64.b64decode(objects[("Secret", f"{FULL}-redis-url")]["data"]["redis-url"]).decode()
    assert url == f"redis://{FULL}-redis:6379/0"
    no_pvc = render(chart, {"redis": {"bundled": {"enabled": True, "persistence": {"enabled": False}}}})
    spec = no_pvc[("StatefulSet", f"{FULL}-redis")]["spec"]
    assert "volumeClaimTemplates" not in spec
    assert spec["template"]["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
    message = render_error(chart, {"redis": {"url": "redis://x:6379", "bundled": {"enabled": True}}})
    assert "graphq: redis.url and redis.bundled.enabled=true are both set" in message


# --- autoscaling -----------------------------------------------------------------------------------------


def test_hpa_scales_workers_on_cpu_and_replicas_are_left_out(chart: helm.Chart) -> None:
    objects = render(chart, {"autoscaling": {"hpa": {"enabled": True, "maxReplicas": 12}}})
    hpa = objects[("HorizontalPodAutoscaler", f"{FULL}-worker")]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{FULL}-worker"}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 12)
    assert hpa["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
        }
    ]
    assert "replicas" not in objects[("Deployment", f"{FULL}-worker")]["spec"]
    assert objects[("Deployment", f"{FULL}-scheduler")]["spec"]["replicas"] == 2
    assert not [key for key in objects if key[0] == "ScaledObject"]


def test_keda_scales_workers_on_each_step_queue_length_without_hpa_or_replicas(chart: helm.Chart) -> None:
    keda = {**KEDA, "passwordSecret": {"name": "prod-redis-pass"}}
    objects = render(chart, {"autoscaling": {"keda": keda}})
    scaled = objects[("ScaledObject", f"{FULL}-worker")]["spec"]
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{FULL}-worker"}
    assert scaled["scaleTargetRef"] == target
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (1, 20)
    keys = [Queue.redis_queue_namespace_prefix + queue_name("graphq", w) for w in KEDA["workflows"]]
    assert keys == ["rq:queue:graphq:code-inventory", "rq:queue:graphq:approval"]
    assert [t["metadata"]["listName"] for t in scaled["triggers"]] == keys
    assert scaled["triggers"][0] == {
        "type": "redis",
        "metadata": {
            "address": "redis.example:6379",
            "listName": keys[0],
            "listLength": "5",
            "activationListLength": "0",
            "databaseIndex": "0",
            "enableTLS": "false",
        },
        "authenticationRef": {"name": f"{FULL}-redis"},
    }
    auth = objects[("TriggerAuthentication", f"{FULL}-redis")]["spec"]
    assert auth == {
        "secretTargetRef": [{"parameter": "password", "name": "prod-redis-pass", "key": "redis-password"}]
    }
    assert "replicas" not in objects[("Deployment", f"{FULL}-worker")]["spec"]
    assert not [key for key in objects if key[0] == "HorizontalPodAutoscaler"]


def test_keda_uses_the_queue_setting_and_the_bundled_redis_address(chart: helm.Chart) -> None:
    objects = render(
        chart,
        {
            "redis": {"bundled": {"enabled": True}},
            "config": {"queue": "jobs"},
            "autoscaling": {"keda": {"enabled": True, "workflows": ["code-inventory"]}},
        },
    )
    (trigger,) = objects[("ScaledObject", f"{FULL}-worker")]["spec"]["triggers"]
    assert trigger["metadata"]["address"] == f"{FULL}-redis:6379"
    key = Queue.redis_queue_namespace_prefix + queue_name("jobs", "code-inventory")
    assert trigger["metadata"]["listName"] == key == "rq:queue:jobs:code-inventory"
    assert "authenticationRef" not in trigger
    assert not [key for key in objects if key[0] == "TriggerAuthentication"]


def test_keda_needs_workflows_and_an_address_outside_the_bundled_redis(chart: helm.Chart) -> None:
    message = render_error(chart, {"autoscaling": {"keda": {"enabled": True, "address": "r:6379"}}})
    assert "graphq: autoscaling.keda.workflows is empty" in message
    message = render_error(chart, {"autoscaling": {"keda": {"enabled": True, "workflows": ["approval"]}}})
    assert "graphq: autoscaling.keda.address is empty" in message


def test_schema_refuses_hpa_and_keda_together(chart: helm.Chart) -> None:
    message = schema_error(chart, {"autoscaling": {"hpa": {"enabled": True}, "keda": KEDA}})
    assert "at '/autoscaling/keda/enabled': value must be false" in message


def test_templates_refuse_hpa_and_keda_together_without_the_schema(chart: helm.Chart, tmp_path: Path) -> None:
    """``helm install --skip-schema-validation`` still gets a clear refusal from the templates."""
    copy = tmp_path / "graphq"
    shutil.copytree(CHART, copy)
    (copy / "values.schema.json").unlink()
    with helm.Chart.load(copy) as bare:
        message = render_error(bare, {"autoscaling": {"hpa": {"enabled": True}, "keda": KEDA}})
    assert "autoscaling.hpa.enabled and autoscaling.keda.enabled are both true: turn one off" in message


# --- schema ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"worker": {"replicas": -1}}, "at '/worker/replicas': minimum: got -1, want 0"),
        ({"scheduler": {"replicas": -2}}, "at '/scheduler/replicas': minimum: got -2, want 0"),
        ({"worker": {"concurrency": 0}}, "at '/worker/concurrency': minimum: got 0, want 1"),
        ({"worker": {"replica": 3}}, "at '/worker': additional properties 'replica' not allowed"),
        (
            {"autoscaling": {"keda": {"overlap": "skip"}}},
            "at '/autoscaling/keda': additional properties 'overlap' not allowed",
        ),
        ({"config": {"logFormat": "xml"}}, "at '/config/logFormat': value must be one of 'json', 'text'"),
        ({"worker": {"metricsPort": 80}}, "at '/worker/metricsPort': minimum: got 80, want 1,024"),
        (
            {"podSecurityContext": {"runAsNonRoot": False}},
            "at '/podSecurityContext/runAsNonRoot': value must be true",
        ),
        (
            {"dashboard": {"labels": {"grafana_dashboard": "0"}}},
            "at '/dashboard/labels/grafana_dashboard': false schema",
        ),
    ],
)
def test_schema_rejects_bad_values_naming_the_key(
    chart: helm.Chart, values: dict[str, Any], expected: str
) -> None:
    assert expected in schema_error(chart, values)


# --- metrics and dashboard -------------------------------------------------------------------------------


def test_service_monitor_scrapes_both_metrics_services(chart: helm.Chart) -> None:
    objects = render(chart, {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}})
    monitor = objects[("ServiceMonitor", FULL)]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    selector = monitor["spec"]["selector"]["matchLabels"]
    for component, port in (("worker", 9100), ("scheduler", 9101)):
        service = objects[("Service", f"{FULL}-{component}-metrics")]
        assert selector.items() <= service["metadata"]["labels"].items()
        assert service["spec"]["ports"] == [
            {"name": "metrics", "port": port, "targetPort": "metrics", "protocol": "TCP"}
        ]
        assert service["spec"]["selector"].items() <= pod(objects, component)["metadata"]["labels"].items()
    assert ("ServiceMonitor", FULL) not in render(chart)


def test_scrape_annotations_on_the_pods_unless_turned_off(chart: helm.Chart) -> None:
    annotations = pod(render(chart), "worker")["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith("prometheus.io/")} == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9100",
        "prometheus.io/path": "/metrics",
    }
    objects = render(chart, {"metrics": {"podAnnotations": False}})
    annotations = pod(objects, "scheduler")["metadata"]["annotations"]
    assert not [k for k in annotations if k.startswith("prometheus.io/")]


def test_dashboard_configmap_carries_the_sidecar_label_and_the_dashboard_file(chart: helm.Chart) -> None:
    objects = render(chart, {"dashboard": {"annotations": {"grafana_folder": "graphq"}}})
    config = objects[("ConfigMap", f"{FULL}-dashboard")]
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["metadata"]["annotations"] == {"grafana_folder": "graphq"}
    source = (CHART / "dashboards" / "graphq.json").read_text()
    assert config["data"]["graphq.json"] == source.rstrip("\n")
    assert json.loads(config["data"]["graphq.json"])["panels"]
    assert ("ConfigMap", f"{FULL}-dashboard") not in render(chart, {"dashboard": {"enabled": False}})


def test_notes_name_the_objects_and_the_autoscaler(chart: helm.Chart) -> None:
    rendered = chart.render({"autoscaling": {"keda": KEDA}}, name=RELEASE, namespace=NAMESPACE)
    notes = rendered["graphq/templates/NOTES.txt"]
    assert (
        "Workers: demo-graphq-worker (2 processes per pod, scaled by KEDA on the queue lengths, 1 to 20 pods)"
    ) in notes
    assert "kubectl -n jobs exec deploy/demo-graphq-worker -- graphq health --worker" in notes


# --- the pods' containers, run here ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("component", ["worker", "scheduler"])
def test_a_pods_container_run_here_passes_its_probes_and_stops_within_its_grace_period(
    chart: helm.Chart, component: str, procs: Procs, redis_url: str, tmp_path: Path
) -> None:
    """The container as the chart renders it — its args after the image's ``graphq`` entry point, the
    settings ConfigMap and the URL as its environment, its own /tmp — on the test Redis: both probes' commands
    exit 0 once it runs, /healthz answers on its metrics port, and SIGTERM ends it within its pod's
    terminationGracePeriodSeconds, exit 0."""
    port = _free_port()
    values: dict[str, Any] = {
        "worker": {"drainTimeoutSeconds": 3, "terminationGraceMarginSeconds": 5},
        "config": {"settings": {"GRAPHQ_HEARTBEAT_INTERVAL_S": 0.5}},
    }
    values.setdefault(component, {})["metricsPort"] = port
    objects = render(chart, values)
    c, spec = container(objects, component), pod(objects, component)["spec"]
    env = clean_env(
        **objects[("ConfigMap", f"{FULL}-config")]["data"],
        GRAPHQ_REDIS_URL=redis_url,
        TMPDIR=str(tmp_path),
        PYTHONUNBUFFERED="1",
    )
    proc = procs.start(*c["args"], env=env, script=True)

    said: list[str] = []

    def probe(kind: str) -> bool:
        command = c[kind]["exec"]["command"]
        assert command[0] == "graphq"
        done = subprocess.run([str(SCRIPT), *command[1:]], env=env, capture_output=True, text=True, timeout=9)
        assert proc.poll() is None, procs.logged(proc)
        said.append(done.stdout + done.stderr)
        return done.returncode == 0

    try:
        wait_for(lambda: probe("readinessProbe"), timeout_s=20, what=f"{component} readiness")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; its probe said: {said[-1] if said else 'nothing'}") from None
    assert probe("livenessProbe")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
        assert reply.status == 200
    os.killpg(proc.pid, signal.SIGTERM)
    grace = spec["terminationGracePeriodSeconds"]
    assert proc.wait(timeout=grace) == 0, procs.logged(proc)


@pytest.mark.parametrize("component", ["worker", "scheduler"])
def test_a_redis_outage_fails_readiness_not_liveness(
    chart: helm.Chart, component: str, procs: Procs, tmp_path: Path
) -> None:
    """The rendered probes' commands on a container run here, Redis then stopped: liveness still passes (the
    loops go on and retry: no restart kills the steps in flight), readiness fails naming Redis."""
    objects = render(chart, {"config": {"settings": {"GRAPHQ_HEARTBEAT_INTERVAL_S": 0.5}}})
    c = container(objects, component)
    server = EmbeddedRedis(appendonly=False).start()
    env = clean_env(
        **objects[("ConfigMap", f"{FULL}-config")]["data"],
        GRAPHQ_REDIS_URL=server.url,
        TMPDIR=str(tmp_path),
        PYTHONUNBUFFERED="1",
    )

    def probe(kind: str) -> tuple[int, str]:
        done = subprocess.run(
            [str(SCRIPT), *c[kind]["exec"]["command"][1:]], env=env, capture_output=True, text=True, timeout=9
        )
        return done.returncode, done.stdout + done.stderr

    try:
        proc = procs.start(*c["args"], env=env, script=True)
        wait_for(lambda: probe("readinessProbe")[0] == 0, timeout_s=20, what=f"{component} readiness")
    finally:
        server.stop()
    time.sleep(1.5)  # a few loops without Redis
    assert probe("livenessProbe") == (0, f"ok: {component}\n")
    code, said = probe("readinessProbe")
    [line] = said.splitlines()  # the chart's config.logFormat json: the error line is a JSON line (a6cd63d)
    error = json.loads(line)
    assert (code, error["level"], error["logger"]) == (1, "ERROR", "graphq.cli"), said
    assert error["message"].startswith(f"unhealthy: Redis unreachable at {server.url}: "), said
    assert proc.poll() is None


def test_notes_count_the_pods_and_warn_when_no_scheduler_runs(chart: helm.Chart) -> None:
    """From the trial: scheduler.replicas 0 said '(0 pods; each fire is claimed by one)', 1 said '1 pods'."""

    def notes(values: dict[str, Any]) -> str:
        rendered = chart.render({**URL, **values}, name=RELEASE, namespace=NAMESPACE)
        return rendered["graphq/templates/NOTES.txt"]

    warning = "WARNING: scheduler.replicas is 0: no scheduler pod runs, so no schedule fires"
    none = notes({"scheduler": {"replicas": 0}, "worker": {"replicas": 1}})
    assert "Scheduler: demo-graphq-scheduler (0 pods)\n" + warning in none
    assert "Workers: demo-graphq-worker (2 processes per pod, 1 pod)" in none
    one = notes({"scheduler": {"replicas": 1}, "worker": {"replicas": 3}})
    assert "Scheduler: demo-graphq-scheduler (1 pod)\n" in one and warning not in one
    assert "Workers: demo-graphq-worker (2 processes per pod, 3 pods)" in one
    two = notes({"scheduler": {"replicas": 2}})
    assert "Scheduler: demo-graphq-scheduler (2 pods; each fire is claimed by one)\n" in two
