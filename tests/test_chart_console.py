"""The operator console in the Helm chart (``console.*``): off by default, and when on a Deployment running
``graphq ui --host 0.0.0.0`` behind its token (GRAPHQ_UI_TOKEN from a Secret, never a literal) or
read-only, probed at ``/healthz``, and a Service in front of it. Rendered by Helm and validated against the
Kubernetes API schemas as in test_chart; the rendered command is run here on the test Redis."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from tests.envs import clean_env
from tests.test_chart import (
    CHART,
    FULL,
    KEDA,
    KUBE_VERSIONS,
    NAMESPACE,
    RELEASE,
    URL,
    Objects,
    _free_port,
    chart,
    cli_parses,
    render,
    render_error,
    schema_error,
)
from tests.workers import Procs, wait_for

__all__ = ["chart"]  # the module-scoped fixture, shared with test_chart

TOKEN = {"existingSecret": "graphq-ui"}
ON = {"console": {"enabled": True, "token": TOKEN}}
READ_ONLY = {"console": {"enabled": True, "readOnly": True}}
TWO = {
    "worker": {"versions": [{"name": "v1", "image": {"tag": "1.0"}}, {"name": "v2", "image": {"tag": "1.1"}}]}
}
REDIS_ENV = {
    "name": "GRAPHQ_REDIS_URL",
    "valueFrom": {"secretKeyRef": {"name": "graphq-redis", "key": "redis-url"}},
}
TOKEN_ENV = {
    "name": "GRAPHQ_UI_TOKEN",
    "valueFrom": {"secretKeyRef": {"name": "graphq-ui", "key": "ui-token"}},
}
NO_TOKEN = (
    "graphq: console.token.existingSecret is empty: name the Secret holding the console's token "
    "(GRAPHQ_UI_TOKEN), or set console.readOnly=true to serve it read-only without one"
)


def console(objects: Objects) -> tuple[dict[str, Any], dict[str, Any]]:
    """The console Deployment and its only container."""
    deployment = objects[("Deployment", f"{FULL}-console")]
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    assert only["name"] == "console"
    return deployment, only


def notes(chart: helm.Chart, values: dict[str, Any]) -> str:
    rendered = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    return rendered["graphq/templates/NOTES.txt"]


def test_by_default_no_console_object_and_notes_say_nothing_of_it(chart: helm.Chart) -> None:
    objects = render(chart)
    assert [key for key in objects if "console" in key[1]] == []
    assert "onsole" not in notes(chart, {})


@pytest.mark.parametrize(
    "values", [{}, URL, TWO, {"autoscaling": {"keda": KEDA}}], ids=["defaults", "url", "versions", "keda"]
)
def test_turning_the_console_on_leaves_every_other_file_byte_identical(
    chart: helm.Chart, values: dict[str, Any]
) -> None:
    """Only the console's two templates and NOTES.txt change: no worker or scheduler pod restarts."""
    off = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    on = chart.render({**values, **ON}, name=RELEASE, namespace=NAMESPACE)
    changed = sorted(path for path in on if on[path] != off.get(path))
    assert changed == [
        "graphq/templates/NOTES.txt",
        "graphq/templates/console-deployment.yaml",
        "graphq/templates/console-service.yaml",
    ]
    assert (
        off["graphq/templates/console-deployment.yaml"],
        off["graphq/templates/console-service.yaml"],
    ) == (
        "\n",
        "\n",
    )


def test_with_a_token_secret_a_deployment_serving_on_all_addresses_and_its_service(chart: helm.Chart) -> None:
    objects = render(chart, ON)  # each object validated against the Kubernetes API schemas
    assert sorted(key for key in objects if "console" in key[1]) == [
        ("Deployment", f"{FULL}-console"),
        ("Service", f"{FULL}-console"),
    ]
    deployment, c = console(objects)
    assert deployment["spec"]["replicas"] == 1
    assert c["image"] == "graphq:0.1.0"
    assert c["args"] == ["ui", "--host", "0.0.0.0", "--port", "8000"]
    cli_parses(c["args"])
    assert c["envFrom"] == [{"configMapRef": {"name": f"{FULL}-config"}}]
    assert c["env"] == [REDIS_ENV, TOKEN_ENV]
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert c["livenessProbe"] == {
        "tcpSocket": {"port": "http"},  # a Redis outage makes it unready, never restarts it
        "initialDelaySeconds": 20,
        "periodSeconds": 20,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }
    assert c["readinessProbe"] == {
        "httpGet": {"path": "/healthz", "port": "http"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
        "timeoutSeconds": 10,
        "failureThreshold": 2,
    }
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    spec = deployment["spec"]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False and spec["securityContext"]["runAsNonRoot"] is True
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert labels["app.kubernetes.io/component"] == "console"
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    worker = objects[("Deployment", f"{FULL}-worker")]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "checksum/config": worker["checksum/config"]
    }  # no scrape: the console has no /metrics
    service = objects[("Service", f"{FULL}-console")]["spec"]
    assert service["type"] == "ClusterIP"
    assert service["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    assert service["selector"] == labels
    # Only the console's pods: no metrics Service selects them, and the console's Service no other pod.
    for component in ("worker", "scheduler"):
        pod = objects[("Deployment", f"{FULL}-{component}")]["spec"]["template"]["metadata"]["labels"]
        assert not service["selector"].items() <= pod.items()
        metrics = objects[("Service", f"{FULL}-{component}-metrics")]["spec"]["selector"]
        assert not metrics.items() <= labels.items()


def test_ports_replicas_key_and_service_type_come_from_the_values(chart: helm.Chart) -> None:
    values = {
        "console": {
            "enabled": True,
            "replicas": 2,
            "port": 8080,
            "token": {"existingSecret": "ops-ui", "existingSecretKey": "token"},
            "service": {"type": "LoadBalancer", "port": 443},
            "extraEnv": [{"name": "TZ", "value": "UTC"}],
        }
    }
    objects = render(chart, values)
    deployment, c = console(objects)
    assert deployment["spec"]["replicas"] == 2
    assert c["args"] == ["ui", "--host", "0.0.0.0", "--port", "8080"]
    assert c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert c["env"] == [
        REDIS_ENV,
        {"name": "GRAPHQ_UI_TOKEN", "valueFrom": {"secretKeyRef": {"name": "ops-ui", "key": "token"}}},
        {"name": "TZ", "value": "UTC"},
    ]
    service = objects[("Service", f"{FULL}-console")]["spec"]
    assert service["type"] == "LoadBalancer"
    assert service["ports"] == [{"name": "http", "port": 443, "targetPort": "http", "protocol": "TCP"}]


def test_without_a_token_and_not_read_only_the_render_fails_naming_the_value(chart: helm.Chart) -> None:
    assert NO_TOKEN in render_error(chart, {"console": {"enabled": True}})
    assert NO_TOKEN in render_error(chart, {"console": {"enabled": True, "token": {"existingSecret": ""}}})


def test_read_only_without_a_token_renders_read_only_with_no_token_and_notes_warn(chart: helm.Chart) -> None:
    _, c = console(render(chart, READ_ONLY))
    assert c["args"] == ["ui", "--host", "0.0.0.0", "--port", "8000", "--read-only"]
    cli_parses(c["args"])
    assert c["env"] == [REDIS_ENV]
    said = notes(chart, READ_ONLY)
    assert (
        "Console: demo-graphq-console (1 pod, read-only). Reach it from here:\n"
        "  kubectl -n jobs port-forward svc/demo-graphq-console 8000:80\n"
        "then open http://127.0.0.1:8000/.\n"
        "WARNING: console.readOnly without console.token.existingSecret: anyone who reaches the Service "
        "demo-graphq-console\nreads the run data through its pages and API, with no sign-in. Set "
        "console.token.existingSecret to require a token."
    ) in said
    # Read-only with a token: both.
    _, c = console(render(chart, {"console": {"enabled": True, "readOnly": True, "token": TOKEN}}))
    assert c["args"][-1] == "--read-only" and c["env"] == [REDIS_ENV, TOKEN_ENV]


def test_notes_say_how_to_reach_the_console_and_sign_in(chart: helm.Chart) -> None:
    said = notes(chart, {**TWO, "console": {"enabled": True, "token": TOKEN, "replicas": 2}})
    assert (
        "Console: demo-graphq-console (version v2, 2 pods). Reach it from here:\n"
        "  kubectl -n jobs port-forward svc/demo-graphq-console 8000:80\n"
        "then open http://127.0.0.1:8000/ and sign in with the token in Secret graphq-ui, key ui-token\n"
        "(the API takes it as Authorization: Bearer <token>)."
    ) in said
    assert "WARNING" not in said


def test_version_picks_the_entry_whose_image_the_console_runs(chart: helm.Chart) -> None:
    assert console(render(chart, {**TWO, **ON}))[1]["image"] == "graphq:1.1"  # empty: the last entry
    on_v1 = {"console": {**ON["console"], "version": "v1"}}
    assert console(render(chart, {**TWO, **on_v1}))[1]["image"] == "graphq:1.0"
    scheduler = render(chart, {**TWO, **on_v1})[("Deployment", f"{FULL}-scheduler")]
    assert scheduler["spec"]["template"]["spec"]["containers"][0]["image"] == "graphq:1.1"
    message = render_error(chart, {**TWO, "console": {**ON["console"], "version": "v9"}})
    assert (
        'graphq: console.version="v9" names no entry of worker.versions (v1, v2): name one, or leave it '
        "empty for the last"
    ) in message
    message = render_error(chart, on_v1)
    assert 'graphq: console.version="v1" names no entry of worker.versions (it is empty)' in message


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"port": 80}, "at '/console/port': minimum: got 80, want 1,024"),
        ({"replicas": -1}, "at '/console/replicas': minimum: got -1, want 0"),
        ({"readOnly": "yes"}, "at '/console/readOnly': got string, want boolean"),
        ({"service": {"type": "Ingress"}}, "at '/console/service/type': value must be one of"),
        ({"service": {"port": 0}}, "at '/console/service/port': minimum: got 0, want 1"),
        ({"token": {"secret": "x"}}, "at '/console/token': additional properties 'secret' not allowed"),
        (
            {"token": {"existingSecretKey": ""}},
            "at '/console/token/existingSecretKey': minLength: got 0, want 1",
        ),
        ({"version": "V1"}, "at '/console/version': 'V1' does not match pattern"),
        ({"host": "0.0.0.0"}, "at '/console': additional properties 'host' not allowed"),
    ],
    ids=[
        "port",
        "replicas",
        "read-only",
        "service-type",
        "service-port",
        "token-key",
        "empty-key",
        "version",
        "host",
    ],
)
def test_schema_rejects_bad_console_values_naming_the_key(
    chart: helm.Chart, values: dict[str, Any], expected: str
) -> None:
    assert expected in schema_error(chart, {"console": values})


def test_schema_refuses_the_token_as_a_plain_setting(chart: helm.Chart) -> None:
    """In config.settings the token would sit in the ConfigMap in plain text, read by every pod."""
    message = schema_error(chart, {"config": {"settings": {"GRAPHQ_UI_TOKEN": "s3cret"}}})
    assert "at '/config/settings/GRAPHQ_UI_TOKEN': false schema" in message


@pytest.mark.parametrize("values", [ON, READ_ONLY], ids=["token", "read-only"])
def test_console_lints_strict_without_findings_beyond_the_icon(values: dict[str, Any]) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBE_VERSIONS[0]}")
    assert report["errors"] == []
    assert [m["error"] for m in report["messages"]] == ["icon is recommended"]


def _get(url: str, token: str | None = None) -> tuple[int, Any]:
    """GET ``url``: the status and the JSON body."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("values", [ON, READ_ONLY], ids=["token", "read-only"])
def test_the_console_container_run_here_answers_its_probe_and_guards_the_api(
    chart: helm.Chart, values: dict[str, Any], procs: Procs, redis_url: str, tmp_path: Path
) -> None:
    """The console's container as the chart renders it — its args after the image's ``graphq`` entry point,
    the settings ConfigMap, the URL and the token as its environment — on the test Redis: the probes' path
    answers 200 on the probed port without the token; the API refuses a request without the token (401), or
    read-only serves it without one; SIGTERM ends it."""
    port = _free_port()
    objects = render(chart, {"console": {**values["console"], "port": port}})
    _, c = console(objects)
    token = "t0ken-" + os.urandom(8).hex()
    env = clean_env(
        **objects[("ConfigMap", f"{FULL}-config")]["data"],
        GRAPHQ_REDIS_URL=redis_url,
        TMPDIR=str(tmp_path),
        PYTHONUNBUFFERED="1",
    )
    if any(e["name"] == "GRAPHQ_UI_TOKEN" for e in c["env"]):
        env["GRAPHQ_UI_TOKEN"] = token
    proc = procs.start(*c["args"], env=env, script=True)
    probe = c["readinessProbe"]["httpGet"]
    assert probe["port"] == c["livenessProbe"]["tcpSocket"]["port"]
    (probed,) = [p["containerPort"] for p in c["ports"] if p["name"] == probe["port"]]
    base = f"http://127.0.0.1:{probed}"

    def healthy() -> bool:
        assert proc.poll() is None, procs.logged(proc)
        try:
            return _get(base + probe["path"]) == (200, {"redis": "ok"})
        except OSError:  # not listening yet
            return False

    wait_for(healthy, timeout_s=60, what="graphq ui to answer /healthz")
    status, body = _get(f"{base}/api/runs/x")
    if "GRAPHQ_UI_TOKEN" in env:
        assert (status, body["detail"]) == (401, "a token is required: send Authorization: Bearer <token>")
        assert _get(f"{base}/api/runs/x", token)[0] == 404
    else:
        assert status == 404, body
    # Within Kubernetes' default grace period (the Deployment sets none): a clean stop, exit 0 as the
    # workers and the scheduler.
    assert (
        "terminationGracePeriodSeconds"
        not in objects[("Deployment", f"{FULL}-console")]["spec"]["template"]["spec"]
    )
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, procs.logged(proc)
