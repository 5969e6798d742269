"""Node settings (R9): readable in the node (in-process, on the queue, in a ``graphq worker``
subprocess), refused at compile when they are not JSON or above GRAPHQ_MAX_NODE_SETTINGS_LENGTH."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

import pytest
import redis

from graphcore import get_node_settings
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, OutsideRunError
from graphcore.settings import Settings, get_settings
from graphq.worker.process.rq_worker import run_worker
from tests.envs import clean_env
from tests.workers import Procs, graphq
from tests.workflows.catalog import SETTINGS, SIZE, catalog_env, configured_graph, fetch_graph

EXPECTED_RESULT = {"seen": SETTINGS, "via_config": SETTINGS, "plain_seen": {}}


# --- node settings in the node ------------------------------------------------------------------------


def test_node_reads_its_settings_in_process() -> None:
    assert configured_graph.invoke({}) == EXPECTED_RESULT


def test_node_reads_its_settings_on_the_queue(redis_client: redis.Redis, redis_url: str) -> None:
    from graphcore.backend.client import Client
    from graphq.worker.queue import RQStepQueue

    registry = Registry({"configured": configured_graph})
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, registry, RQStepQueue(redis_client, settings))
    run_id = client.enqueue("configured", {})
    run_worker(settings, burst=True, registry=registry, kv=redis_client)
    [run] = client.wait([run_id], timeout_s=10)
    assert run.status.value == "completed"
    assert run.result == EXPECTED_RESULT


def test_get_node_settings_outside_a_node_is_an_error() -> None:
    with pytest.raises(OutsideRunError, match=r"^get_node_settings\(\) can only be called inside a node"):
        get_node_settings()


def test_settings_are_copied_when_the_node_is_added() -> None:
    given: dict[str, Any] = {"a": [1]}
    g = fetch_graph(given)
    given["a"].append(2)
    assert g.compile().nodes["fetch"].settings == {"a": [1]}


# --- refused at compile -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"when": datetime(2024, 1, 2)}, "settings.when: a datetime is not a JSON value"),
        ({"a": {"b": [1, (2, 3)]}}, "settings.a.b[1]: a tuple is not a JSON value"),
        ({"t": math.nan}, "settings.t: nan is not a JSON number"),
        ({"m": {1: "x"}}, "settings.m: key 1 is an int, not a string"),
        ({"s": {1, 2}}, "settings.s: a set is not a JSON value"),
    ],
)
def test_settings_that_are_not_json_are_refused_at_compile(settings: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        fetch_graph(settings).compile()
    assert str(err.value).startswith(f"node 'fetch': {message}")


def test_settings_that_are_not_a_mapping_are_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"^node 'fetch': settings must be a dict of JSON values \(got a list\)$"
    ):
        fetch_graph([1, 2])


def test_settings_over_the_limit_are_refused_at_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_MAX_NODE_SETTINGS_LENGTH", str(SIZE - 1))
    get_settings.cache_clear()
    with pytest.raises(ConfigError) as err:
        fetch_graph(SETTINGS).compile()
    assert str(err.value) == (
        f"node 'fetch': settings are {SIZE} bytes of JSON, above GRAPHQ_MAX_NODE_SETTINGS_LENGTH={SIZE - 1}"
    )
    monkeypatch.setenv("GRAPHQ_MAX_NODE_SETTINGS_LENGTH", str(SIZE))
    get_settings.cache_clear()
    assert fetch_graph(SETTINGS).compile().nodes["fetch"].settings == SETTINGS  # exactly at the limit: fine


def test_default_limit_is_16_kib() -> None:
    at_limit = {"v": "x" * (16_384 - len('{"v":""}'))}
    assert fetch_graph(at_limit).compile().nodes["fetch"].settings == at_limit
    with pytest.raises(ConfigError, match=r"settings are 16385 bytes of JSON, above .*=16384$"):
        fetch_graph({"v": at_limit["v"] + "x"}).compile()


def test_worker_refuses_to_start_when_a_module_compiles_over_the_limit(redis_url: str) -> None:
    env = clean_env(
        GRAPHQ_REDIS_URL=redis_url,
        GRAPHQ_WORKFLOWS="tests.workflows.catalog",
        GRAPHQ_MAX_NODE_SETTINGS_LENGTH=str(SIZE - 1),
    )
    done = graphq("worker", "--burst", env=env)
    assert done.returncode == 2, done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error: ")]
    assert "Traceback" not in done.stderr
    assert line == (
        "error: cannot import workflow module 'tests.workflows.catalog': ConfigError: node 'configured': "
        f"settings are {SIZE} bytes of JSON, above GRAPHQ_MAX_NODE_SETTINGS_LENGTH={SIZE - 1}"
    )


# --- through a graphq worker subprocess ---------------------------------------------------------------


def test_node_settings_through_a_worker_subprocess(
    redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    env = catalog_env(redis_url)
    proc = procs.start("worker", env=env)
    done = graphq("enqueue", "configured", "--input", "{}", "--wait", env=env)
    assert done.returncode == 0, done.stderr + procs.logged(proc)
    shown = graphq("runs", "show", done.stdout.strip(), "-o", "json", env=env)
    assert json.loads(shown.stdout)["result"] == EXPECTED_RESULT
