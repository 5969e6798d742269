"""The workflow catalog (R9): node settings refused above GRAPHQ_MAX_NODE_SETTINGS_LENGTH at
publish, the catalog published by workers and read by ``graphq workflows`` without the workflow's code,
version hashes, two versions of one workflow at once, dead workers dropping out of "served by"."""

from __future__ import annotations

import json
import operator
import os
import signal
import subprocess
import sys
import time
from typing import Annotated, Any, TypedDict

import pytest
import redis

from graphcore import END, START, RetryPolicy, StateGraph
from graphcore.backend import catalog
from graphcore.backend.catalog import publish, read_catalog
from graphcore.backend.workers import heartbeat
from graphcore.engine.channels import DeltaChannel, UntrackedValue
from graphcore.engine.describe import describe, version_of
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from tests.cli_helpers import error_line, invoke, ok
from tests.envs import clean_env
from tests.workers import ROOT, Procs, graphq
from tests.workflows.catalog import (
    SETTINGS,
    SIZE,
    Fetched,
    catalog_env,
    configured_graph,
    fetch,
    fetch_graph,
    route,
)

# --- refused at publish -------------------------------------------------------------------------------


def test_settings_over_the_limit_are_refused_at_publish(redis_client: redis.Redis) -> None:
    with pytest.raises(ConfigError) as err:
        publish(redis_client, "w1", [configured_graph], limit=SIZE - 1)
    assert str(err.value) == (
        f"workflow 'configured': node 'configured': settings are {SIZE} bytes of JSON, above "
        f"GRAPHQ_MAX_NODE_SETTINGS_LENGTH={SIZE - 1}"
    )
    assert redis_client.keys("graphq:catalog*") == []  # nothing written


def test_worker_with_a_lower_limit_refuses_to_publish(redis_client: redis.Redis, redis_url: str) -> None:
    registry = Registry({"configured": configured_graph})
    settings = Settings(redis_url=redis_url, max_node_settings_length=SIZE - 1)
    with pytest.raises(ConfigError, match=rf"settings are {SIZE} bytes of JSON, above .*={SIZE - 1}$"):
        run_worker(settings, burst=True, registry=registry, kv=redis_client)
    assert redis_client.keys("graphq:catalog*") == []
    assert redis_client.zcard("graphq:workers") == 0  # its heartbeat record went with it


# --- description and version --------------------------------------------------------------------------


def test_description_lists_each_retry_policy_of_a_list() -> None:
    """``retry_policy=[p1, p2]`` (LangGraph's list) is described as the list of the policies' settings."""
    g = StateGraph(Fetched)
    policies = [
        RetryPolicy(max_attempts=2, retry_on=ValueError),
        RetryPolicy(initial_interval=0.1, jitter=False),
    ]
    g.add_node("a", fetch, retry_policy=policies)
    g.add_edge(START, "a")
    (node,) = describe(g.compile(name="retried"))["nodes"]
    assert node["retry"] == [
        {
            "initial_interval_s": 0.5,
            "backoff_factor": 2.0,
            "max_interval_s": 128.0,
            "max_attempts": 2,
            "jitter": True,
        },
        {
            "initial_interval_s": 0.1,
            "backoff_factor": 2.0,
            "max_interval_s": 128.0,
            "max_attempts": 3,
            "jitter": False,
        },
    ]


def test_description_names_each_channels_kind_and_reducer() -> None:
    """Format 2: a channel's entry names its kind and its reducer's ``module.qualname`` (None: plain), so a
    changed reducer is a changed version (format 1 said only ``reducer: true``)."""

    class State(TypedDict, total=False):
        plain: int
        added: Annotated[list[int], operator.add]
        batched: Annotated[list[int], DeltaChannel(_merge)]
        scratch: Annotated[int, UntrackedValue]

    g = StateGraph(State)
    g.add_node("a", lambda s: {})
    g.add_edge(START, "a")
    d = describe(g.compile(name="kinds"))
    assert d["format"] == 2
    assert d["channels"] == [
        {"name": "plain", "kind": "LastValue", "reducer": None},
        {"name": "added", "kind": "ReducerChannel", "reducer": "_operator.add"},
        {"name": "batched", "kind": "DeltaChannel", "reducer": f"{__name__}._merge"},
        {"name": "scratch", "kind": "UntrackedValue", "reducer": None},
    ]


def _merge(value: list[int], writes: list[list[int]]) -> list[int]:
    return value + [x for w in writes for x in w]


def test_description_names_nodes_settings_and_every_edge() -> None:
    inner = fetch_graph({"k": 1}).compile(name="inner")
    g = StateGraph(Fetched)
    g.add_node("a", fetch, destinations=["c"], retry=None)
    g.add_node("b", inner)
    g.add_node("c", fetch, timeout=2.5)
    g.add_edge(START, "a")
    g.add_conditional_edges("a", route, {"plain": "b", "end": END})
    g.add_edge(["a", "b"], "c")
    d = describe(g.compile(name="outer"))
    assert [n["name"] for n in d["nodes"]] == ["a", "b", "c"]
    assert d["nodes"][1]["subgraph"] == {"name": "inner", "version": version_of(describe(inner))}
    assert d["nodes"][1]["fn"] is None and d["nodes"][2]["timeout_s"] == 2.5
    assert d["edges"] == [
        {"kind": "edge", "sources": ["__start__"], "targets": ["a"], "router": None},
        {
            "kind": "conditional",
            "sources": ["a"],
            "targets": ["b", "__end__"],
            "router": "tests.workflows.catalog.route",
        },
        {"kind": "join", "sources": ["a", "b"], "targets": ["c"], "router": None},
        {"kind": "command", "sources": ["a"], "targets": ["c"], "router": None},
    ]


def _version_in_subprocess(temperature: str) -> str:
    code = (
        "from graphcore.engine.describe import describe, version_of\n"
        "from tests.workflows.catalog import configured_graph\n"
        "print(version_of(describe(configured_graph)))\n"
    )
    env = clean_env(CATALOG_TEST_TEMPERATURE=temperature, PYTHONHASHSEED="random")
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


def test_version_is_stable_across_processes_and_changes_with_settings() -> None:
    here = version_of(describe(configured_graph))
    assert len(here) == 64 and int(here, 16) >= 0
    assert _version_in_subprocess("0.5") == here
    assert _version_in_subprocess("0.5") == here
    other = _version_in_subprocess("0.7")
    assert other != here


# --- the catalog in Redis -----------------------------------------------------------------------------


def _beat(kv: redis.Redis, worker_id: str, ttl_s: float = 30.0) -> None:
    heartbeat(kv, worker_id, ttl_s, {})


def test_publish_and_read_back(redis_client: redis.Redis) -> None:
    _beat(redis_client, "w1")
    assert publish(redis_client, "w1", [configured_graph]) == {
        "configured": version_of(describe(configured_graph))
    }
    [entry] = read_catalog(redis_client)
    assert entry.name == "configured"
    [version] = entry.versions
    assert version.version == version_of(describe(configured_graph))
    assert version.description == json.loads(json.dumps(describe(configured_graph)))
    assert version.description["nodes"][0]["settings"] == SETTINGS
    assert version.served_by == ["w1"]
    assert read_catalog(redis_client, "nope") == []


def test_a_dead_worker_drops_out_and_is_tidied_at_the_next_publish(redis_client: redis.Redis) -> None:
    _beat(redis_client, "w-short", ttl_s=0.2)
    _beat(redis_client, "w-long")
    publish(redis_client, "w-short", [configured_graph])
    publish(redis_client, "w-long", [configured_graph])
    assert read_catalog(redis_client)[0].versions[0].served_by == ["w-long", "w-short"]
    time.sleep(0.3)  # w-short's heartbeat expires; nobody cleans up
    assert read_catalog(redis_client)[0].versions[0].served_by == ["w-long"]
    publish(redis_client, "w-long", [configured_graph])
    version = version_of(describe(configured_graph))
    assert redis_client.zrange("graphq:catalog:configured:workers", 0, -1) == [f"{version}:w-long".encode()]


def test_stale_versions_nobody_serves_go_at_a_publish(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = fetch_graph({"v": 1}).compile(name="g")
    new = fetch_graph({"v": 2}).compile(name="g")
    _beat(redis_client, "w-old", ttl_s=0.1)
    publish(redis_client, "w-old", [old])
    time.sleep(0.2)
    _beat(redis_client, "w-new")
    publish(redis_client, "w-new", [new])  # the old version is younger than STALE_VERSION_S: kept
    assert [v.version for v in read_catalog(redis_client)[0].versions] == [
        version_of(describe(new)),
        version_of(describe(old)),
    ]
    monkeypatch.setattr(catalog, "STALE_VERSION_S", 0)
    publish(redis_client, "w-new", [new])
    assert [(v.version, v.served_by) for v in read_catalog(redis_client)[0].versions] == [
        (version_of(describe(new)), ["w-new"])
    ]


# --- graphq workflows ----------------------------------------------------------------------------------


def test_cli_lists_local_workflows_not_published(redis_url: str) -> None:
    listed = json.loads(
        ok(invoke("tests.workflows.catalog", redis_url, "workflows", "list", "-o", "json")).stdout
    )
    [mine] = [w for w in listed if w["name"] == "configured"]
    assert mine["source"] == "local"
    [version] = mine["versions"]
    assert version["version"] == version_of(describe(configured_graph))
    assert (version["published_at"], version["served_by"], version["local"]) == (None, [], True)


def test_cli_marks_a_published_workflow_loaded_here_too(redis_client: redis.Redis, redis_url: str) -> None:
    _beat(redis_client, "w1")
    publish(redis_client, "w1", [configured_graph])
    listed = json.loads(
        ok(invoke("tests.workflows.catalog", redis_url, "workflows", "list", "-o", "json")).stdout
    )
    [mine] = [w for w in listed if w["name"] == "configured"]
    assert mine["source"] == "catalog+local"
    assert [(v["served_by"], v["local"]) for v in mine["versions"]] == [(["w1"], True)]
    table = ok(invoke("tests.workflows.catalog", redis_url, "workflows", "list")).stdout
    rows = [line.replace("│", " ").split() for line in table.splitlines()]
    [row] = [cells for cells in rows if cells[:1] == ["configured"]]
    version = version_of(describe(configured_graph))
    assert row == ["configured", version[:12], "configured,", "plain", "1", "0", "catalog+local"]


def test_cli_show_unknown_workflow_exits_2_with_one_line(redis_url: str) -> None:
    result = ok(invoke("", redis_url, "workflows", "show", "nope"), 2)
    assert error_line(result).startswith("error: unknown workflow 'nope'; known workflows: ")


# --- end to end: graphq worker subprocesses, a CLI without the workflow code ---------------------------


def _no_code_env(redis_url: str) -> dict[str, str]:
    """A CLI that has not got the workflow's code: no GRAPHQ_WORKFLOWS."""
    return clean_env(GRAPHQ_REDIS_URL=redis_url, GRAPHQ_WORKFLOWS="")


def _served(
    kv: redis.Redis, count: int, procs: Procs, proc: subprocess.Popen[bytes], timeout_s: float = 15
) -> None:
    """Wait until ``count`` live workers serve some version of ``configured``."""
    deadline = time.monotonic() + timeout_s
    while sum(len(v.served_by) for e in read_catalog(kv, "configured") for v in e.versions) < count:
        assert proc.poll() is None and time.monotonic() < deadline, procs.logged(proc)
        time.sleep(0.05)


def _show(redis_url: str) -> dict[str, Any]:
    done = graphq("workflows", "show", "configured", "-o", "json", env=_no_code_env(redis_url))
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def test_catalog_from_a_process_without_the_workflow_code(
    redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    proc = procs.start("worker", env=catalog_env(redis_url))
    _served(redis_client, 1, procs, proc)
    [worker_id] = [w.decode() for w in redis_client.zrange("graphq:workers", 0, -1)]
    listed = graphq("workflows", "list", "-o", "json", env=_no_code_env(redis_url))
    assert listed.returncode == 0, listed.stderr
    [mine] = [w for w in json.loads(listed.stdout) if w["name"] == "configured"]
    assert mine["source"] == "catalog"
    [version] = mine["versions"]
    assert version["version"] == version_of(describe(configured_graph))  # the same in both processes
    assert (version["served_by"], version["local"]) == ([worker_id], False)
    assert version["nodes"] == ["configured", "plain"]
    shown = _show(redis_url)
    [v] = shown["versions"]
    assert v["nodes"][0]["settings"] == SETTINGS and v["nodes"][0]["timeout_s"] == 30
    assert v["nodes"][1]["settings"] == {}
    assert v["edges"][-1] == {
        "kind": "conditional",
        "sources": ["configured"],
        "targets": ["plain", "__end__"],
        "router": "tests.workflows.catalog.route",
    }
    table = graphq("workflows", "show", "configured", env=_no_code_env(redis_url))
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[:3] == [
        "workflow configured (catalog, 1 version(s))",
        f"version {version['version']}",
        f"  served by: {worker_id}",
    ]
    whole = '    configured: {"extra":{"n":2,"x":null},"model":"small","stops":["\\n","é"],"temperature":0.5}'
    assert table.stdout.splitlines()[-2:] == ["  settings (whole):", whole]
    unknown = graphq("workflows", "show", "nope", env=_no_code_env(redis_url))
    assert unknown.returncode == 2
    [line] = unknown.stderr.splitlines()  # one line
    assert line.startswith("error: unknown workflow 'nope'; known workflows: ")
    assert "configured" in line
    enqueued = graphq("enqueue", "configured", "--input", "{}", env=_no_code_env(redis_url))
    assert enqueued.returncode == 2
    [line] = enqueued.stderr.splitlines()
    assert line.endswith(
        "'configured' is in the workflow catalog (served by 1 live worker(s)), but its code is not loaded in "
        "this process: pass --workflows MODULE (or set GRAPHQ_WORKFLOWS)"
    )
    assert line.startswith("error: unknown workflow 'configured'; known workflows: ")


def test_two_versions_side_by_side_and_a_killed_worker_drops_out(
    redis_client: redis.Redis, redis_url: str, procs: Procs
) -> None:
    first = procs.start("worker", env=catalog_env(redis_url))
    _served(redis_client, 1, procs, first)
    second = procs.start("worker", env=catalog_env(redis_url, CATALOG_TEST_TEMPERATURE="0.7"))
    _served(redis_client, 2, procs, second)
    here = version_of(describe(configured_graph))
    shown = _show(redis_url)
    assert len(shown["versions"]) == 2
    newer, older = shown["versions"]
    assert older["version"] == here and newer["version"] != here
    assert newer["nodes"][0]["settings"]["temperature"] == 0.7
    assert len(newer["served_by"]) == 1 and len(older["served_by"]) == 1
    listed = graphq("workflows", "list", env=_no_code_env(redis_url))
    assert (
        f"note: workflow 'configured' is served in 2 versions ({newer['version'][:12]} by 1, "
        in listed.stderr
    )
    os.killpg(second.pid, signal.SIGKILL)
    second.wait(5)
    deadline = time.monotonic() + 5  # the heartbeat TTL is 2 s
    while _show(redis_url)["versions"][0]["served_by"]:
        assert time.monotonic() < deadline, "the killed worker still serves"
        time.sleep(0.2)
    after = _show(redis_url)["versions"]
    assert [(v["version"], v["served_by"]) for v in after] == [
        (newer["version"], []),
        (older["version"], older["served_by"]),
    ]


def test_a_worker_publishing_while_another_tidies_keeps_its_entry(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pods start together: worker w2 writes its heartbeat and its catalog entry just after w1's tidy-up
    read the live workers. w1's tidy-up must not take w2's entry for a dead worker's (w2 publishes once)."""
    _beat(redis_client, "w1")
    read_live = catalog.live_worker_ids
    raced: list[bool] = []

    def live_then_w2_starts(kv: Any, now_ms: int) -> list[str]:
        live = read_live(kv, now_ms)
        if not raced:
            raced.append(True)
            _beat(redis_client, "w2")
            catalog._write(redis_client, "w2", catalog.describe_all([configured_graph]))
        return live

    monkeypatch.setattr(catalog, "live_worker_ids", live_then_w2_starts)
    publish(redis_client, "w1", [configured_graph])
    assert raced == [True]
    assert read_catalog(redis_client)[0].versions[0].served_by == ["w1", "w2"]
