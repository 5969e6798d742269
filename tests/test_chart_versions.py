"""Versioned rollout (safe deploys): ``worker.versions`` runs releases of the image side by side,
one worker Deployment per entry with its own PodDisruptionBudget and autoscaler, so the workers of the old
version keep serving the runs pinned to it while the new ones start; an entry with ``takeNewRuns: false``
(a release being retired) starts no run. Rendered by Helm and validated against the Kubernetes API schemas
as in test_chart; without versions the chart renders what it always did."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from graphcore.settings import Settings
from tests.test_chart import (
    CHART,
    FULL,
    KEDA,
    KUBE_VERSIONS,
    NAMESPACE,
    RELEASE,
    URL,
    Objects,
    chart,
    cli_parses,
    render,
    render_error,
    schema_error,
)
from tests.test_chart_console import ON as CONSOLE_ON

__all__ = ["chart"]  # the module-scoped fixture, shared with test_chart

LABEL = "graphq.io/worker-version"
SELECTOR = {
    "app.kubernetes.io/name": "graphq",
    "app.kubernetes.io/instance": RELEASE,
    "app.kubernetes.io/component": "worker",
}
HASH = "0123456789abcdef" * 4
"""A catalog version: 64 hex digits."""
OLD = {"name": "v1", "image": {"tag": "1.0"}}
NEW = {
    "name": "v2",
    "image": {"repository": "registry.example/myflows", "tag": "1.1"},
    "replicas": 4,
    "concurrency": 3,
    "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
    "extraEnv": [{"name": "MYFLOWS_MODE", "value": "new"}],
}
TWO = {"worker": {"versions": [OLD, NEW]}}
RETIRING = {**OLD, "takeNewRuns": False, "workflowVersions": {"approval": HASH}}
"""The old release being retired: it starts no run and finishes those pinned to it."""
REDIS_ENV = {
    "name": "GRAPHQ_REDIS_URL",
    "valueFrom": {"secretKeyRef": {"name": "graphq-redis", "key": "redis-url"}},
}


def worker(objects: Objects, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The worker Deployment ``<fullname>-worker-<name>`` and its only container."""
    deployment = objects[("Deployment", f"{FULL}-worker-{name}")]
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    assert only["name"] == "worker"
    return deployment, only


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def test_without_versions_one_worker_deployment_named_labelled_and_selected_as_before(
    chart: helm.Chart,
) -> None:
    objects = render(chart, {"metrics": {"serviceMonitor": {"enabled": True}}})
    deployments = sorted(name for kind, name in objects if kind == "Deployment")
    assert deployments == [f"{FULL}-scheduler", f"{FULL}-worker"]
    deployment = objects[("Deployment", f"{FULL}-worker")]
    assert deployment["spec"]["selector"]["matchLabels"] == SELECTOR
    assert deployment["spec"]["template"]["metadata"]["labels"] == SELECTOR
    for obj in objects.values():
        assert LABEL not in obj["metadata"].get("labels", {}), obj["metadata"]["name"]
    assert objects[("PodDisruptionBudget", f"{FULL}-worker")]["spec"]["selector"]["matchLabels"] == SELECTOR
    assert "podTargetLabels" not in objects[("ServiceMonitor", FULL)]["spec"]
    scheduler = objects[("Deployment", f"{FULL}-scheduler")]["spec"]["template"]["spec"]["containers"][0]
    assert scheduler["image"] == "graphq:0.1.0"


def test_two_versions_two_deployments_with_their_images_replicas_and_settings(chart: helm.Chart) -> None:
    objects = render(chart, TWO)
    assert sorted(k for k in objects if k[0] in ("Deployment", "PodDisruptionBudget")) == [
        ("Deployment", f"{FULL}-scheduler"),
        ("Deployment", f"{FULL}-worker-v1"),
        ("Deployment", f"{FULL}-worker-v2"),
        ("PodDisruptionBudget", f"{FULL}-scheduler"),
        ("PodDisruptionBudget", f"{FULL}-worker-v1"),
        ("PodDisruptionBudget", f"{FULL}-worker-v2"),
    ]
    old, old_container = worker(objects, "v1")
    new, new_container = worker(objects, "v2")
    # v1 takes image.repository and every worker.* default; v2 its own values.
    assert (old_container["image"], new_container["image"]) == ("graphq:1.0", "registry.example/myflows:1.1")
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (2, 4)
    assert old_container["args"][:3] == ["worker", "--concurrency", "2"]
    assert new_container["args"][:3] == ["worker", "--concurrency", "3"]
    cli_parses(new_container["args"])
    assert old_container["resources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"memory": "1Gi"},
    }
    assert new_container["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"}}
    assert old_container["env"] == [REDIS_ENV]
    assert new_container["env"] == [REDIS_ENV, {"name": "MYFLOWS_MODE", "value": "new"}]
    for c in (old_container, new_container):
        assert c["envFrom"] == [{"configMapRef": {"name": f"{FULL}-config"}}]
    # The scheduler runs the newest (last) entry's image.
    scheduler = objects[("Deployment", f"{FULL}-scheduler")]["spec"]["template"]["spec"]["containers"][0]
    assert scheduler["image"] == "registry.example/myflows:1.1"


@pytest.mark.parametrize(
    "autoscaling",
    [{}, {"hpa": {"enabled": True}}, {"keda": KEDA}],
    ids=["replicas", "hpa", "keda"],
)
def test_adding_a_version_leaves_the_old_ones_objects_as_they_were_and_removing_it_drops_them(
    chart: helm.Chart, autoscaling: dict[str, Any]
) -> None:
    """Adding v2 alone changes nothing of v1 (no restart of its pods); the upgrade that removes v1 drops
    its Deployment and companions."""

    def of(objects: Objects, name: str) -> dict[tuple[str, str], dict[str, Any]]:
        return {key: obj for key, obj in objects.items() if key[1] == f"{FULL}-worker-{name}"}

    values = {"autoscaling": autoscaling, "scheduler": {"version": "v1"}}
    before = render(chart, {**values, "worker": {"versions": [OLD]}})
    during = render(chart, {**values, "worker": {"versions": [OLD, NEW]}})
    assert len(of(before, "v1")) == (3 if autoscaling else 2)  # Deployment, PDB, HPA or ScaledObject
    assert of(during, "v1") == of(before, "v1")
    assert during[("Deployment", f"{FULL}-scheduler")] == before[("Deployment", f"{FULL}-scheduler")]
    after = render(chart, {"autoscaling": autoscaling, "worker": {"versions": [NEW]}})
    assert of(after, "v1") == {}
    assert sorted(kind for kind, _ in of(after, "v2")) == sorted(kind for kind, _ in of(during, "v2"))


def test_each_version_has_its_label_and_a_selector_no_other_version_matches(chart: helm.Chart) -> None:
    objects = render(chart, {"worker": {"versions": [OLD, NEW, {"name": "v3", "image": {"tag": "1.2"}}]}})
    pods: dict[str, dict[str, str]] = {}
    selectors: dict[str, dict[str, str]] = {}
    for name in ("v1", "v2", "v3"):
        deployment, _ = worker(objects, name)
        selectors[name] = deployment["spec"]["selector"]["matchLabels"]
        assert selectors[name] == {**SELECTOR, LABEL: name}
        assert deployment["metadata"]["labels"][LABEL] == name
        pods[name] = deployment["spec"]["template"]["metadata"]["labels"]
        pdb = objects[("PodDisruptionBudget", f"{FULL}-worker-{name}")]
        assert pdb["spec"]["selector"]["matchLabels"] == selectors[name]
        assert pdb["metadata"]["labels"][LABEL] == name
    for name, selector in selectors.items():
        assert [other for other, labels in pods.items() if selects(selector, labels)] == [name]
    scheduler = objects[("Deployment", f"{FULL}-scheduler")]["spec"]["template"]["metadata"]["labels"]
    assert not [name for name, selector in selectors.items() if selects(selector, scheduler)]
    # One metrics Service scrapes the workers of every version.
    service = objects[("Service", f"{FULL}-worker-metrics")]["spec"]["selector"]
    assert [n for n, labels in pods.items() if selects(service, labels)] == ["v1", "v2", "v3"]


def test_an_hpa_per_version_each_on_its_own_deployment(chart: helm.Chart) -> None:
    objects = render(chart, {**TWO, "autoscaling": {"hpa": {"enabled": True, "maxReplicas": 6}}})
    hpas = {name: obj for (kind, name), obj in objects.items() if kind == "HorizontalPodAutoscaler"}
    assert sorted(hpas) == [f"{FULL}-worker-v1", f"{FULL}-worker-v2"]
    for name, hpa in hpas.items():
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert hpa["spec"]["scaleTargetRef"] == target
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 6)
        assert hpa["metadata"]["labels"][LABEL] == name.rsplit("-", 1)[1]
        assert "replicas" not in objects[("Deployment", name)]["spec"]


def test_a_keda_scaled_object_per_version_measuring_its_pinned_queues(chart: helm.Chart) -> None:
    """Each version's ScaledObject measures the queue of each workflow (new runs' first steps and the steps
    of runs not pinned, which every version taking new runs serves), and the queue of the runs pinned to it,
    ``<queue>:<workflow>@<version>``, for each workflow of its ``workflowVersions``; one
    TriggerAuthentication serves them all."""
    versions = [OLD, {**NEW, "workflowVersions": {"approval": HASH}}]
    keda = {**KEDA, "passwordSecret": {"name": "prod-redis-pass"}}
    objects = render(chart, {"worker": {"versions": versions}, "autoscaling": {"keda": keda}})
    scaled = {name: obj for (kind, name), obj in objects.items() if kind == "ScaledObject"}
    assert sorted(scaled) == [f"{FULL}-worker-v1", f"{FULL}-worker-v2"]
    for name, obj in scaled.items():
        assert obj["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert "replicas" not in objects[("Deployment", name)]["spec"]
    lists = {
        name: [t["metadata"]["listName"] for t in obj["spec"]["triggers"]] for name, obj in scaled.items()
    }
    assert lists == {
        f"{FULL}-worker-v1": ["rq:queue:graphq:code-inventory", "rq:queue:graphq:approval"],
        f"{FULL}-worker-v2": [
            "rq:queue:graphq:code-inventory",
            "rq:queue:graphq:approval",
            f"rq:queue:graphq:approval@{HASH}",
        ],
    }
    pinned = scaled[f"{FULL}-worker-v2"]["spec"]["triggers"][2]
    assert pinned == {
        "type": "redis",
        "metadata": {
            "address": "redis.example:6379",
            "listName": f"rq:queue:graphq:approval@{HASH}",
            "listLength": "5",
            "activationListLength": "0",
            "databaseIndex": "0",
            "enableTLS": "false",
        },
        "authenticationRef": {"name": f"{FULL}-redis"},
    }
    assert [name for kind, name in objects if kind == "TriggerAuthentication"] == [f"{FULL}-redis"]
    for obj in scaled.values():
        assert (obj["spec"]["minReplicaCount"], obj["spec"]["maxReplicaCount"]) == (1, 20)
    # The prometheus trigger counts every run running, the same in each version's ScaledObject.
    keda = {**KEDA, "prometheus": {"serverAddress": "http://prometheus.monitoring:9090"}}
    manifests = chart.render(
        {"worker": {"versions": versions}, "autoscaling": {"keda": keda}}, name=RELEASE, namespace=NAMESPACE
    )
    docs = yaml.safe_load_all(manifests["graphq/templates/keda.yaml"])  # test_chart's CRD fields: redis only
    prometheus = [
        [t for t in d["spec"]["triggers"] if t["type"] == "prometheus"]
        for d in docs
        if d["kind"] == "ScaledObject"
    ]
    query = f'sum(max by (tenant) (graphq_runs_running{{namespace="{NAMESPACE}"}}))'
    assert [[t["metadata"]["query"] for t in each] for each in prometheus] == [[query], [query]]


def test_an_entry_taking_no_new_runs_sets_graphq_take_new_runs_false_in_its_pods_only(
    chart: helm.Chart, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``takeNewRuns: false`` retires a release: its worker containers get ``GRAPHQ_TAKE_NEW_RUNS=false``
    (ahead of the entry's extraEnv), which graphq's settings read as off; the other entries get nothing."""
    extra = {"name": "MYFLOWS_MODE", "value": "old"}
    objects = render(chart, {"worker": {"versions": [{**RETIRING, "extraEnv": [extra]}, NEW]}})
    _, old_container = worker(objects, "v1")
    _, new_container = worker(objects, "v2")
    assert old_container["env"] == [REDIS_ENV, {"name": "GRAPHQ_TAKE_NEW_RUNS", "value": "false"}, extra]
    assert new_container["env"] == [REDIS_ENV, {"name": "MYFLOWS_MODE", "value": "new"}]
    assert "GRAPHQ_TAKE_NEW_RUNS" not in objects[("ConfigMap", f"{FULL}-config")]["data"]
    monkeypatch.setenv("GRAPHQ_TAKE_NEW_RUNS", old_container["env"][1]["value"])
    assert Settings().take_new_runs is False
    # Nothing else of v1 changes: same image, args, probes; the pods restart for the env alone.
    before, _ = worker(render(chart, {"worker": {"versions": [{**OLD, "extraEnv": [extra]}, NEW]}}), "v1")
    retired, _ = worker(objects, "v1")
    (before_container,) = before["spec"]["template"]["spec"]["containers"]
    before_container["env"].insert(1, {"name": "GRAPHQ_TAKE_NEW_RUNS", "value": "false"})
    assert retired == before


@pytest.mark.parametrize("console", [{}, CONSOLE_ON["console"]], ids=["no-console", "console"])
@pytest.mark.parametrize("autoscaling", [{}, {"keda": KEDA}], ids=["replicas", "keda"])
def test_by_default_every_release_takes_new_runs_and_the_render_says_nothing_of_it(
    chart: helm.Chart, autoscaling: dict[str, Any], console: dict[str, Any]
) -> None:
    """``takeNewRuns: true`` renders exactly what leaving it out does (NOTES.txt too), and no worker
    container, versioned or not, gets GRAPHQ_TAKE_NEW_RUNS."""
    explicit = {"worker": {"versions": [{**OLD, "takeNewRuns": True}, {**NEW, "takeNewRuns": True}]}}
    same = [
        chart.render({**v, "autoscaling": autoscaling, "console": console}, name=RELEASE, namespace=NAMESPACE)
        for v in (explicit, TWO)
    ]
    assert same[0] == same[1]
    for values in ({}, TWO):
        objects = render(chart, {**values, "autoscaling": autoscaling, "console": console})
        workers = [obj for (kind, name), obj in objects.items() if kind == "Deployment" and "-worker" in name]
        assert len(workers) == (2 if values else 1)
        for deployment in workers:
            (container,) = deployment["spec"]["template"]["spec"]["containers"]
            assert [e["name"] for e in container["env"]] == ["GRAPHQ_REDIS_URL"] + (
                ["MYFLOWS_MODE"] if deployment["metadata"]["name"].endswith("-v2") else []
            )


def test_keda_scales_an_entry_taking_no_new_runs_on_its_pinned_queues_only(chart: helm.Chart) -> None:
    """A release being retired takes nothing from the workflows' queues: its ScaledObject measures only the
    queues of the runs pinned to it, and has no prometheus trigger (graphq_runs_running counts the runs of
    every version, which would hold it at the size of the whole load); the new release's is unchanged."""
    values = {"worker": {"versions": [RETIRING, NEW]}, "autoscaling": {"keda": KEDA}}
    objects = render(chart, values)
    scaled = {name: obj for (kind, name), obj in objects.items() if kind == "ScaledObject"}
    lists = {
        name: [t["metadata"]["listName"] for t in obj["spec"]["triggers"]] for name, obj in scaled.items()
    }
    assert lists == {
        f"{FULL}-worker-v1": [f"rq:queue:graphq:approval@{HASH}"],
        f"{FULL}-worker-v2": ["rq:queue:graphq:code-inventory", "rq:queue:graphq:approval"],
    }
    everyone = render(chart, {**values, "worker": {"versions": [{**RETIRING, "takeNewRuns": True}, NEW]}})
    assert objects[("ScaledObject", f"{FULL}-worker-v2")] == everyone[("ScaledObject", f"{FULL}-worker-v2")]
    keda = {**KEDA, "prometheus": {"serverAddress": "http://prometheus.monitoring:9090"}}
    manifests = chart.render({**values, "autoscaling": {"keda": keda}}, name=RELEASE, namespace=NAMESPACE)
    docs = [
        d for d in yaml.safe_load_all(manifests["graphq/templates/keda.yaml"]) if d["kind"] == "ScaledObject"
    ]
    assert {d["metadata"]["name"]: [t["type"] for t in d["spec"]["triggers"]] for d in docs} == {
        f"{FULL}-worker-v1": ["redis"],
        f"{FULL}-worker-v2": ["redis", "redis", "prometheus"],
    }


def test_keda_refuses_an_entry_taking_no_new_runs_without_workflow_versions(chart: helm.Chart) -> None:
    """Its ScaledObject would measure no queue (KEDA refuses one without triggers)."""
    entry = {**OLD, "takeNewRuns": False}
    message = render_error(chart, {"worker": {"versions": [entry, NEW]}, "autoscaling": {"keda": KEDA}})
    assert (
        'graphq: worker.versions: the entry "v1" has takeNewRuns false and no workflowVersions: its KEDA '
        "ScaledObject would measure no queue (it takes no step from the workflows' queues); give "
        "workflowVersions, each workflow's catalog version in its image (graphq workflows list -o json)"
    ) in message
    # Without KEDA (replicas, or an HPA on CPU) it needs none.
    for autoscaling in ({}, {"hpa": {"enabled": True}}):
        objects = render(chart, {"worker": {"versions": [entry, NEW]}, "autoscaling": autoscaling})
        assert worker(objects, "v1")[1]["env"][1] == {"name": "GRAPHQ_TAKE_NEW_RUNS", "value": "false"}


def test_notes_say_which_release_takes_no_new_runs_and_warn_when_none_does(chart: helm.Chart) -> None:
    def notes(versions: list[dict[str, Any]], autoscaling: dict[str, Any] | None = None) -> str:
        values = {**URL, "worker": {"versions": versions}, "autoscaling": autoscaling or {}}
        return chart.render(values, name=RELEASE, namespace=NAMESPACE)["graphq/templates/NOTES.txt"]

    said = notes([RETIRING, NEW])
    assert (
        "Workers: demo-graphq-worker-v1 (version v1, image graphq:1.0, no new runs: only the steps of the "
        "runs pinned to it, 2 processes per pod, 2 pods)\n"
        "Workers: demo-graphq-worker-v2 (version v2, image registry.example/myflows:1.1, 3 processes per "
        "pod, 4 pods)\n"
    ) in said
    assert "WARNING" not in said
    said = notes([RETIRING, {**NEW, "takeNewRuns": False}])
    assert (
        "WARNING: every entry of worker.versions has takeNewRuns false: no worker starts a new run (their "
        "first steps\nwait in the workflows' queues). Leave takeNewRuns true on the newest entry, unless you "
        "mean to stop new runs.\n"
    ) in said
    # At minReplicaCount 0 with a prometheus trigger, only the retiring release can scale to zero mid-step.
    keda = {
        **KEDA,
        "minReplicaCount": 0,
        "prometheus": {"serverAddress": "http://prometheus.monitoring:9090"},
    }
    said = notes([RETIRING, NEW], {"keda": keda})
    assert said.count("WARNING") == 1
    assert (
        "WARNING: autoscaling.keda.minReplicaCount is 0 and demo-graphq-worker-v1 takes no new runs: its "
        "ScaledObject has no\nprometheus trigger"
    ) in said
    assert "WARNING" not in notes([OLD, NEW], {"keda": keda})


def test_scheduler_version_picks_the_entry_whose_image_the_scheduler_runs(chart: helm.Chart) -> None:
    objects = render(chart, {**TWO, "scheduler": {"version": "v1"}})
    scheduler = objects[("Deployment", f"{FULL}-scheduler")]["spec"]["template"]["spec"]["containers"][0]
    assert scheduler["image"] == "graphq:1.0"
    message = render_error(chart, {**TWO, "scheduler": {"version": "v9"}})
    assert (
        'graphq: scheduler.version="v9" names no entry of worker.versions (v1, v2): name one, or leave it '
        "empty for the last"
    ) in message
    message = render_error(chart, {"scheduler": {"version": "v1"}})
    assert 'graphq: scheduler.version="v1" names no entry of worker.versions (it is empty)' in message


def test_service_monitor_keeps_the_version_label_on_the_targets(chart: helm.Chart) -> None:
    objects = render(chart, {**TWO, "metrics": {"serviceMonitor": {"enabled": True}}})
    assert objects[("ServiceMonitor", FULL)]["spec"]["podTargetLabels"] == [LABEL]


def test_notes_list_each_version_and_exec_into_the_newest(chart: helm.Chart) -> None:
    notes = chart.render({**URL, **TWO}, name=RELEASE, namespace=NAMESPACE)["graphq/templates/NOTES.txt"]
    assert (
        "Workers: demo-graphq-worker-v1 (version v1, image graphq:1.0, 2 processes per pod, 2 pods)\n"
        "Workers: demo-graphq-worker-v2 (version v2, image registry.example/myflows:1.1, 3 processes per "
        "pod, 4 pods)\n"
        "Scheduler: demo-graphq-scheduler (version v2, 2 pods; each fire is claimed by one)\n"
    ) in notes
    assert "kubectl -n jobs exec deploy/demo-graphq-worker-v2 -- graphq workers" in notes


def test_versions_lint_strict_without_findings_beyond_the_icon() -> None:
    values = {**TWO, "autoscaling": {"hpa": {"enabled": True}}}
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBE_VERSIONS[0]}")
    assert report["errors"] == []
    assert [m["error"] for m in report["messages"]] == ["icon is recommended"]


def test_a_name_given_twice_fails_rendering_naming_it(chart: helm.Chart) -> None:
    message = render_error(chart, {"worker": {"versions": [OLD, {**NEW, "name": "v1"}]}})
    assert (
        'graphq: worker.versions: the name "v1" is given twice (each entry is its own Deployment, '
        f"{FULL}-worker-v1)"
    ) in message


def test_templates_refuse_an_entry_without_name_or_tag_without_the_schema(tmp_path: Path) -> None:
    """``helm install --skip-schema-validation`` still gets a clear refusal from the templates."""
    copy = tmp_path / "graphq"
    shutil.copytree(CHART, copy)
    (copy / "values.schema.json").unlink()
    with helm.Chart.load(copy) as bare:
        message = render_error(bare, {"worker": {"versions": [OLD, {"image": {"tag": "1.1"}}]}})
        assert (
            'graphq: worker.versions: an entry has no name (each needs name and image.tag): {"image":'
            in message
        )
        message = render_error(
            bare, {"worker": {"versions": [OLD, {"name": "v2", "image": {"repository": "r"}}]}}
        )
        assert 'graphq: worker.versions: the entry "v2" has no image.tag' in message
        message = render_error(bare, {"worker": {"versions": [OLD, {"name": "v2"}]}})
        assert 'graphq: worker.versions: the entry "v2" has no image.tag' in message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"name": "V1", "image": {"tag": "1"}}, "at '/worker/versions/0/name': 'V1' does not match pattern"),
        (
            {"name": "1.1", "image": {"tag": "1"}},
            "at '/worker/versions/0/name': '1.1' does not match pattern",
        ),
        (
            {"name": "v1-", "image": {"tag": "1"}},
            "at '/worker/versions/0/name': 'v1-' does not match pattern",
        ),
        (
            {"name": "v" * 64, "image": {"tag": "1"}},
            "at '/worker/versions/0/name': maxLength: got 64, want 63",
        ),
        ({"image": {"tag": "1"}}, "at '/worker/versions/0': missing property 'name'"),
        ({"name": "v1"}, "at '/worker/versions/0': missing property 'image'"),
        (
            {"name": "v1", "image": {"repository": "r"}},
            "at '/worker/versions/0/image': missing property 'tag'",
        ),
        ({"name": "v1", "image": {"tag": ""}}, "at '/worker/versions/0/image/tag': minLength: got 0, want 1"),
        (
            {"name": "v1", "image": {"tag": "1"}, "replica": 3},
            "at '/worker/versions/0': additional properties 'replica' not allowed",
        ),
        (
            {"name": "v1", "image": {"tag": "1"}, "workflowVersions": {"approval": "abc"}},
            "at '/worker/versions/0/workflowVersions/approval': 'abc' does not match pattern "
            "'^[0-9a-f]{64}$'",
        ),
        (
            {"name": "v1", "image": {"tag": "1"}, "takeNewRuns": "false"},
            "at '/worker/versions/0/takeNewRuns': got string, want boolean",
        ),
    ],
    ids=[
        "upper-case",
        "dot",
        "trailing-dash",
        "too-long",
        "no-name",
        "no-image",
        "no-tag",
        "empty-tag",
        "unknown-key",
        "bad-catalog-version",
        "take-new-runs-string",
    ],
)
def test_schema_refuses_a_bad_entry_naming_where(
    chart: helm.Chart, entry: dict[str, Any], expected: str
) -> None:
    assert expected in schema_error(chart, {"worker": {"versions": [entry]}})


def test_schema_refuses_graphq_take_new_runs_in_config_settings(chart: helm.Chart) -> None:
    """It is per release (``worker.versions[].takeNewRuns``): in the ConfigMap it would stop every release
    starting runs, the newest too."""
    message = schema_error(chart, {"config": {"settings": {"GRAPHQ_TAKE_NEW_RUNS": "false"}}})
    assert "at '/config/settings/GRAPHQ_TAKE_NEW_RUNS': false schema" in message
