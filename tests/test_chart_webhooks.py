"""The chart gives the webhook signing key (GRAPHQ_WEBHOOK_SECRET) to the pods that deliver webhooks, from a
Secret only: never in the settings ConfigMap, never to the console."""

from __future__ import annotations

from typing import Any

import helm_python as helm

from tests.test_chart import FULL, render, schema_error
from tests.test_chart_console import chart

__all__ = ["chart"]  # the module-scoped fixture, shared with test_chart

SIGNING = {"webhooks": {"secret": {"existingSecret": "hooks", "existingSecretKey": "key"}}}
CONSOLE = {"console": {"enabled": True, "token": {"existingSecret": "ui"}}}


def env_of(objects: dict[tuple[str, str], dict[str, Any]], name: str) -> list[dict[str, Any]]:
    [container] = objects[("Deployment", name)]["spec"]["template"]["spec"]["containers"]
    env: list[dict[str, Any]] = container["env"]
    return env


def test_the_signing_key_comes_from_its_secret_to_workers_and_the_scheduler(chart: helm.Chart) -> None:
    objects = render(chart, {**SIGNING, **CONSOLE})
    wanted = {"name": "GRAPHQ_WEBHOOK_SECRET", "valueFrom": {"secretKeyRef": {"name": "hooks", "key": "key"}}}
    assert wanted in env_of(objects, f"{FULL}-worker")
    assert wanted in env_of(objects, f"{FULL}-scheduler")
    assert all(e["name"] != "GRAPHQ_WEBHOOK_SECRET" for e in env_of(objects, f"{FULL}-console"))
    assert "GRAPHQ_WEBHOOK_SECRET" not in objects[("ConfigMap", f"{FULL}-config")]["data"]


def test_without_a_secret_no_pod_gets_the_variable(chart: helm.Chart) -> None:
    objects = render(chart)
    for name in (f"{FULL}-worker", f"{FULL}-scheduler"):
        assert all(e["name"] != "GRAPHQ_WEBHOOK_SECRET" for e in env_of(objects, name))


def test_the_schema_refuses_the_key_as_a_plain_setting(chart: helm.Chart) -> None:
    message = schema_error(chart, {"config": {"settings": {"GRAPHQ_WEBHOOK_SECRET": "s3cret"}}})
    assert "at '/config/settings/GRAPHQ_WEBHOOK_SECRET': false schema" in message
