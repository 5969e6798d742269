"""``graphq workflows check``: the upgrade check before a deploy, on threads paused by real runs
(worked in this process), against the ``tests/workflows/upgrade_v2_*`` modules; and the pinned runs that
``graphq workflows list`` counts per version.

Enqueue does not record a run's version yet (the pinning of runs to versions comes in a change of its own),
so a test that needs one writes the run hash's ``version`` field as that code will, and publishes version 1
in the catalog as a worker does.
"""

from __future__ import annotations

import json

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.upgrade_check import active_runs, check_upgrade
from graphcore.engine.algo import task_id
from graphcore.engine.describe import describe, version_of
from graphcore.engine.registry import Registry
from tests.cli_helpers import error_line, invoke, ok
from tests.workers import graphq, work
from tests.workflows import upgrade_v1, upgrade_v2_ok

REGISTRY = Registry.of_module("tests.workflows.upgrade_v1")
V1 = "tests.workflows.upgrade_v1"
V1_VERSION = version_of(describe(upgrade_v1.graph))
V2_REMOVED = Registry.of_module("tests.workflows.upgrade_v2_removed").get("upgrade")


def paused(client: Client, thread: str, workflow: str = "upgrade", *, versioned: bool = True) -> str:
    """A run of ``workflow`` on ``thread`` worked until it pauses (at ``review``'s request, or at the
    breakpoint of ``upgrade_stops``): its first step recorded version 1, which the worker published; without
    ``versioned`` its record names none (as one written before versions were recorded)."""
    run_id = client.enqueue(workflow, {}, thread_id=thread)
    work(client)
    assert client.get_run(run_id).version == version_of(describe(REGISTRY.get(workflow)))
    if not versioned:
        client.kv.hdel(keys.run(thread, run_id), "version")
    return run_id


def check(url: str, *args: str) -> tuple[int, str]:
    """``graphq workflows check ARGS`` with version 1 loaded: (exit code, stdout)."""
    result = invoke(V1, url, "workflows", "check", *args)
    assert "Traceback" not in result.stderr
    return result.exit_code, result.stdout


def request_of(client: Client, run_id: str) -> str:
    (request,) = client.run_requests(run_id)
    return request.id


# --- compatible changes pass --------------------------------------------------------------------------


def test_a_new_node_and_a_new_optional_channel_pass(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_ok")
    assert (code, out) == (
        0,
        f"thread t1 (run {run_id} awaiting_input): ok\n1 threads checked: 1 ok, 0 would break\n",
    )


def test_without_module_the_code_loaded_here_is_checked(client: Client, redis_url: str) -> None:
    """The same code as the run's: nothing breaks, the subgraph's namespace included."""
    run_id = paused(client, "t1", "upgrade_nested")
    code, out = check(redis_url, "upgrade_nested")
    assert (code, out) == (
        0,
        f"thread t1 (run {run_id} awaiting_input): ok\n1 threads checked: 1 ok, 0 would break\n",
    )


# --- each kind of break -------------------------------------------------------------------------------


def test_a_renamed_node_with_a_run_paused_at_it_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_renamed")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: next task 'review' is not a node of the new "
        f"graph; open request {request_of(client, run_id)} was asked by node 'review', not a node of the new "
        "graph\n1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_run_stopped_at_a_breakpoint_before_a_renamed_node_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1", "upgrade_stops")
    code, out = check(redis_url, "upgrade_stops", "--module", "tests.workflows.upgrade_v2_renamed")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} at a breakpoint): would break: next task 'review' is not a node of the "
        "new graph\n1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_removed_channel_holding_a_value_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_removed")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: channel 'notes' holds a value (str) but the "
        "new state schema has no such channel\n1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_changed_type_that_refuses_the_stored_value_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_typed")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: channel 'count' holds a value of type int, "
        "which the new type str refuses: state.count: Input should be a valid string (got 1)\n"
        "1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_changed_reducer_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_reducer")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: channel 'items' changed its reducer from "
        "_operator.add to tests.workflows.upgrade_v2_reducer.newest_first\n"
        "1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_renamed_send_target_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1", "upgrade_fan")
    code, out = check(redis_url, "upgrade_fan", "--module", "tests.workflows.upgrade_v2_renamed")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: a Send's target 'each' is not a node of the "
        f"new graph; open request {request_of(client, run_id)} was asked by node 'each', not a node of the "
        "new graph\n1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_channel_that_gained_a_reducer_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_gained")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: channel 'notes' gained a reducer "
        "(_operator.add), it had none\n1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_subgraph_node_made_a_function_breaks(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1", "upgrade_nested")
    head = client.get_state("t1")
    ns = f"inner:{task_id(head.id, 0, 'inner')}"
    code, out = check(redis_url, "upgrade_nested", "--module", "tests.workflows.upgrade_v2_flat")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: subgraph namespace {ns!r}: node 'inner' no "
        "longer runs a subgraph\n1 threads checked: 0 ok, 1 would break\n",
    )


# --- without the old description ----------------------------------------------------------------------


def test_a_run_without_a_version_is_checked_without_reducers(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1", versioned=False)
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_reducer")
    assert (code, out) == (
        0,
        f"thread t1 (run {run_id} awaiting_input): ok (reducers not compared: run {run_id} records no "
        "version)\n1 threads checked: 1 ok, 0 would break\n",
    )


def test_a_version_the_catalog_no_longer_has_is_said(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    client.kv.hset(keys.run("t1", run_id), "version", "ab" * 32)
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_removed")
    assert (code, out) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: channel 'notes' holds a value (str) but the "
        f"new state schema has no such channel (reducers not compared: run {run_id} version abababababab is "
        "not in the catalog)\n1 threads checked: 0 ok, 1 would break\n",
    )


def test_a_format_1_description_says_reducer_not_recorded(client: Client, redis_url: str) -> None:
    """Format 1 says only whether a channel has a reducer: a changed one is not found, and the verdict
    says so rather than guess."""
    run_id = paused(client, "t1")
    old = describe(upgrade_v1.graph)
    old["format"] = 1
    old["channels"] = [{"name": c["name"], "reducer": c["reducer"] is not None} for c in old["channels"]]
    client.kv.hset(keys.catalog_versions("upgrade"), V1_VERSION, json.dumps(old))
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_reducer")
    assert (code, out) == (
        0,
        f"thread t1 (run {run_id} awaiting_input): ok (channel 'items': reducer not recorded)\n"
        "1 threads checked: 1 ok, 0 would break\n",
    )


# --- which threads, the summary, JSON -----------------------------------------------------------------


def test_queued_and_paused_threads_are_checked_ended_ones_not(client: Client, redis_url: str) -> None:
    done = paused(client, "t0")
    client.answer(done, "yes")
    work(client)
    assert client.runs.get(done).status.value == "completed"
    first = paused(client, "t1")
    second = paused(client, "t2")
    queued = client.enqueue("upgrade", {}, thread_id="t3")
    request = request_of(client, first)
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_renamed")
    broken = "next task 'review' is not a node of the new graph; open request {} was asked by node 'review', "
    broken += "not a node of the new graph"
    assert code == 1
    assert out.splitlines() == [
        f"thread t1 (run {first} awaiting_input): would break: {broken.format(request)}",
        f"thread t2 (run {second} awaiting_input): would break: {broken.format(request_of(client, second))}",
        f"thread t3 (run {queued} queued): ok (reducers not compared: run {queued} records no version)",
        "3 threads checked: 1 ok, 2 would break",
    ]


def test_threads_are_read_in_pages(client: Client) -> None:
    """Pages of 2 runs and 2 threads: every thread is checked once, in the order its run was created."""
    runs = [paused(client, f"t{i}") for i in range(5)]
    assert [r.id for r in active_runs(client.kv, "upgrade", page=2)] == runs
    report = check_upgrade(client.kv, upgrade_v2_ok.graph, page=2)
    assert [(t.thread_id, t.ok) for t in report.threads] == [(f"t{i}", True) for i in range(5)]
    assert report.summary() == "5 threads checked: 5 ok, 0 would break"


def test_json_report(client: Client, redis_url: str) -> None:
    run_id = paused(client, "t1")
    code, out = check(redis_url, "upgrade", "--module", "tests.workflows.upgrade_v2_removed", "-o", "json")
    assert code == 1
    assert json.loads(out) == {
        "workflow": "upgrade",
        "version": version_of(describe(V2_REMOVED)),
        "threads": [
            {
                "thread_id": "t1",
                "runs": [
                    {"id": run_id, "status": "awaiting_input", "at_breakpoint": False, "version": V1_VERSION}
                ],
                "ok": False,
                "problems": [
                    "channel 'notes' holds a value (str) but the new state schema has no such channel"
                ],
                "notes": [],
            }
        ],
        "checked": 1,
        "ok": 0,
        "would_break": 1,
    }


# --- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["nope"],
            f"workflow 'nope' is not loaded here (loaded: {', '.join(Registry.load([V1]).names())}): pass "
            "its new code with --module NEW.module, or load it with --workflows",
        ),
        (
            ["upgrade", "--module", "tests.workflows.nope"],
            "cannot import workflow module 'tests.workflows.nope': ModuleNotFoundError: No module named "
            "'tests.workflows.nope'",
        ),
        (
            ["upgrade", "--module", "tests.workflows.upgrade_v2_flat"],
            "module 'tests.workflows.upgrade_v2_flat' has no workflow 'upgrade'; its workflows: "
            "upgrade_nested",
        ),
    ],
    ids=["unknown-workflow", "module-does-not-import", "module-without-it"],
)
def test_bad_input_exits_2_with_one_line(redis_url: str, args: list[str], message: str) -> None:
    result = ok(invoke(V1, redis_url, "workflows", "check", *args), 2)
    assert error_line(result) == f"error: {message}"
    assert result.stdout == ""


# --- workflows list: pinned runs ----------------------------------------------------------------------


def test_list_counts_the_runs_pinned_to_each_version(client: Client, redis_url: str) -> None:
    """Runs that have not ended and are pinned to a version; an ended one, one without a version and one of
    the latest policy (its version recorded, not enforced) are not counted."""
    done = paused(client, "t0")
    client.answer(done, "yes")
    work(client)
    paused(client, "t1")
    paused(client, "t2")
    paused(client, "t3", versioned=False)
    client.enqueue("upgrade", {}, thread_id="t4", config={"version_policy": "latest"})
    work(client)
    result = ok(invoke(V1, redis_url, "workflows", "list", "-o", "json"))
    flows = {f["name"]: f for f in json.loads(result.stdout)}
    assert [(v["version"], v["pinned_runs"]) for v in flows["upgrade"]["versions"]] == [(V1_VERSION, 2)]
    table = ok(invoke(V1, redis_url, "workflows", "list")).stdout
    (row,) = [line for line in table.splitlines() if line.split("│")[0].strip() == "upgrade"]
    assert [c.strip() for c in row.split("│")] == [
        "upgrade",
        V1_VERSION[:12],
        "start, review, finish",
        "0",
        "2",
        "catalog+local",
    ]


def test_a_value_of_a_class_the_new_code_dropped_breaks(
    client: Client, redis_url: str, graphq_env: dict[str, str]
) -> None:
    """A ``graphq`` process that loads only the new code cannot load the stored model instance."""
    run_id = paused(client, "t1", "upgrade_noted")
    env = {k: v for k, v in graphq_env.items() if k != "GRAPHQ_WORKFLOWS"}
    done = graphq(
        "workflows", "check", "upgrade_noted", "--module", "tests.workflows.upgrade_v2_model", env=env
    )
    assert (done.returncode, done.stdout) == (
        1,
        f"thread t1 (run {run_id} awaiting_input): would break: channel 'note' holds a value the new code "
        "cannot load: <stored>: class tests.workflows.upgrade_v1:Note (a pydantic BaseModel class) is not "
        "allowed; refusing to load it (nothing was imported); allowed are the classes named by the state "
        "schemas of the workflows this process loaded (entry points, GRAPHQ_WORKFLOWS), graphq's own, those "
        "passed to graphcore.checkpoints.serde.allow_classes() and those listed in "
        "GRAPHQ_SERDE_ALLOWED_CLASSES (comma-separated module:QualName)\n"
        "1 threads checked: 0 ok, 1 would break\n",
    ), done.stderr


def test_list_shows_a_version_the_catalog_dropped_while_runs_are_pinned_to_it(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """From the new-user trial: a version no worker served for a week leaves the catalog, and its pinned
    runs (a human's week-long pause) vanished from the list, which looked drained."""
    paused(client, "t1")
    redis_client.hdel(keys.catalog_versions("upgrade"), V1_VERSION)  # as the catalog's tidy-up drops it
    redis_client.zrem(keys.catalog_seen("upgrade"), V1_VERSION)
    result = ok(invoke("tests.workflows.upgrade_v2_ok", redis_url, "workflows", "list", "-o", "json"))
    [flow] = [f for f in json.loads(result.stdout) if f["name"] == "upgrade"]
    listed = {v["version"]: (v["pinned_runs"], v["served_by"], v["local"]) for v in flow["versions"]}
    assert listed[V1_VERSION] == (1, [], False)
    table = ok(invoke("tests.workflows.upgrade_v2_ok", redis_url, "workflows", "list")).stdout
    [row] = [line for line in table.splitlines() if V1_VERSION[:12] in line]
    assert [c.strip() for c in row.split("│")][3:] == ["0", "1", "runs"]
