"""``graphq runs watch`` (C6: a run's events, replayed then followed live, across dropped connections),
``--multitask`` on ``graphq enqueue``/``graphq run``, and branches in ``graphq state --history`` after a fork
(``graphq enqueue --checkpoint``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
import redis
from click.testing import Result

from graphcore import END, START, RetryPolicy, StateGraph, get_stream_writer, keys
from graphcore.backend.client import Client
from graphcore.backend.connection import connect
from graphcore.backend.events import EVENTS_MAXLEN, encode_event, read_events
from graphcore.engine.registry import Registry
from graphcore.settings import Settings, get_settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from tests.cli_helpers import error_line, invoke, ok, process_state_restored
from tests.envs import clean_env

WORKFLOWS = "tests.workflows.basic,tests.workflows.hitl"
REGISTRY = Registry.load(WORKFLOWS.split(","))
ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^(\d+-\d+)  step (-?\d+) +(\w+) +(.*)$")
COUNTER_MODES = [
    ("status", 1),
    ("checkpoints", -1),
    ("checkpoints", 0),
    ("values", 0),
    ("tasks", 1),
    ("updates", 1),
    ("checkpoints", 1),
    ("values", 1),
    ("tasks", 2),
    ("updates", 2),
    ("checkpoints", 2),
    ("values", 2),
    ("tasks", 3),
    ("updates", 3),
    ("checkpoints", 3),
    ("values", 3),
    ("status", 3),
]
"""A 3-step counter run's events: its input applied (step 0, its ``checkpoints`` line after that of its input
checkpoint, step -1), then one checkpoint per super-step."""


@pytest.fixture(autouse=True)
def _isolate_process_state() -> Iterator[None]:
    with process_state_restored():
        yield


def graphq(*args: str, url: str) -> Result:
    """``graphq`` with this file's test workflows."""
    return invoke(WORKFLOWS, url, *args)


def work(url: str, registry: Registry = REGISTRY) -> None:
    """An in-process burst worker."""
    run_worker(Settings(redis_url=url), burst=True, registry=registry)


def enqueue(url: str, workflow: str, payload: dict[str, Any], *extra: str) -> str:
    return ok(graphq("enqueue", workflow, "--input", json.dumps(payload), *extra, url=url)).stdout.strip()


def events(stdout: str) -> list[dict[str, Any]]:
    """The JSON Lines of ``watch --output json``."""
    return [json.loads(line) for line in stdout.splitlines()]


def watch_json(url: str, run_id: str, *extra: str, code: int = 0) -> list[dict[str, Any]]:
    return events(ok(graphq("runs", "watch", run_id, "-o", "json", *extra, url=url), code).stdout)


def stream_ids(client: redis.Redis, run_id: str) -> list[str]:
    """The ids of every event the run's stream holds."""
    record = Client(client, Registry({})).get_run(run_id)
    return [e.id for e in read_events(client, record.thread_id, run_id)]


def watch_process(url: str, run_id: str) -> subprocess.Popen[str]:
    """``graphq runs watch RUN -o json`` in a subprocess (GRAPHQ_* env cleared)."""
    env = clean_env(PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "graphq.cli", "--redis-url", url, "runs", "watch", run_id, "-o", "json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def blocked_watchers(client: redis.Redis) -> list[int]:
    """Ids of the Redis connections blocked in XREAD: a watch waiting for the next event."""
    clients = client.client_list()
    return [int(c["id"]) for c in clients if c.get("cmd") == "xread" and "b" in c.get("flags", "")]


def wait_for_watcher(client: redis.Redis, timeout_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while not (found := blocked_watchers(client)):
        assert time.monotonic() < deadline, "the watch never blocked waiting for events"
        time.sleep(0.02)
    return found


# -- replay --------------------------------------------------------------------------------------------------


def test_watch_replays_a_completed_run_with_the_real_state(redis_url: str) -> None:
    run_id = enqueue(redis_url, "counter", {"limit": 3})
    work(redis_url)
    lines = watch_json(redis_url, run_id)
    assert [(e["mode"], e["step"]) for e in lines] == COUNTER_MODES
    values = [e["data"] for e in lines if e["mode"] == "values"]
    assert [v.get("n") for v in values] == [None, 1, 2, 3]
    assert values[-1] == {"n": 3, "limit": 3, "log": ["bump1", "bump2", "bump3"]}
    statuses = [e["data"] for e in lines if e["mode"] == "status"]
    assert statuses == [{"status": "running"}, {"status": "completed"}]
    tasks = [e["data"] for e in lines if e["mode"] == "tasks"]
    assert tasks[0] == {"node": "bump", "writes": {"n": 1, "log": ["bump1"]}}
    checkpoints = [e["data"] for e in lines if e["mode"] == "checkpoints"]
    # the input checkpoint, the input applied, then the steps'
    assert [(c["metadata"]["source"], c["metadata"]["step"]) for c in checkpoints] == [
        ("input", -1),
        ("loop", 0),
        ("loop", 1),
        ("loop", 2),
        ("loop", 3),
    ]
    ids = [c["config"]["configurable"]["checkpoint_id"] for c in checkpoints]
    assert [c["parent_config"]["configurable"]["checkpoint_id"] for c in checkpoints[1:]] == ids[:-1]
    assert checkpoints[0]["parent_config"] is None
    assert [c["next"] for c in checkpoints] == [["__start__"], ["bump"], ["bump"], ["bump"], []]
    assert [c["values"].get("n") for c in checkpoints] == [None, None, 1, 2, 3]


def test_watch_table_has_one_line_per_event(redis_url: str, redis_client: redis.Redis) -> None:
    run_id = enqueue(redis_url, "counter", {"limit": 2})
    work(redis_url)
    result = ok(graphq("runs", "watch", run_id, url=redis_url))
    parsed = [LINE.match(line) for line in result.stdout.splitlines()]
    assert all(parsed), result.stdout
    rows = [(m.group(1), int(m.group(2)), m.group(3), json.loads(m.group(4))) for m in parsed if m]
    assert rows[-1][2:] == ("status", {"status": "completed"})
    assert rows[-2][1:] == (2, "values", {"n": 2, "limit": 2, "log": ["bump1", "bump2"]})
    assert list(dict.fromkeys(r[0] for r in rows)) == stream_ids(redis_client, run_id)


def test_watch_mode_filters(redis_url: str) -> None:
    run_id = enqueue(redis_url, "counter", {"limit": 3})
    work(redis_url)
    updates = watch_json(redis_url, run_id, "--mode", "updates")
    assert [(e["mode"], e["step"], e["data"]) for e in updates] == [
        ("updates", k + 1, {"bump": {"n": k + 1, "log": [f"bump{k + 1}"]}}) for k in range(3)
    ]
    chosen = watch_json(redis_url, run_id, "-m", "values", "-m", "status")
    assert [e["mode"] for e in chosen] == ["status", "values", "values", "values", "values", "status"]


def test_watch_after_replays_only_later_events(redis_url: str, redis_client: redis.Redis) -> None:
    run_id = enqueue(redis_url, "counter", {"limit": 3})
    work(redis_url)
    everything = watch_json(redis_url, run_id)
    ids = stream_ids(redis_client, run_id)
    cut = ids[3]
    later = watch_json(redis_url, run_id, "--after", cut)
    assert later == [e for e in everything if e["id"] in ids[4:]]
    assert later and all(e["id"] > cut for e in later)
    # after the last event of an ended run: nothing to print, the exit code still says how it ended
    assert watch_json(redis_url, run_id, "--after", ids[-1]) == []


def test_watch_of_a_failed_run_exits_1(redis_url: str) -> None:
    run_id = enqueue(redis_url, "failing", {})
    work(redis_url)
    result = ok(graphq("runs", "watch", run_id, "-o", "json", url=redis_url), 1)
    last = events(result.stdout)[-1]
    assert (last["mode"], last["data"]["status"]) == ("status", "failed")
    assert "kaboom at node explode" in last["data"]["error"]
    assert f"run {run_id} failed at step 2" in error_line(result)


def test_watch_of_a_paused_run_exits_3_and_continues_after_the_answer(redis_url: str) -> None:
    run_id = enqueue(redis_url, "asking", {"topic": "tea"})
    work(redis_url)
    result = ok(graphq("runs", "watch", run_id, "-o", "json", url=redis_url), 3)
    lines = events(result.stdout)
    assert [e["mode"] for e in lines[-2:]] == ["interrupt", "status"]
    [request] = lines[-2]["data"]["requests"]
    assert (request["node"], request["value"]) == ("ask_twice", {"question": "first about tea?"})
    assert lines[-1]["data"] == {"status": "awaiting_input"}
    assert f"--after {lines[-1]['id']}" in result.stderr
    assert "error:" not in result.stderr
    assert watch_json(redis_url, run_id, "--after", lines[-1]["id"], code=3) == []

    ok(graphq("runs", "answer", run_id, "--value", '"yes"', url=redis_url))
    work(redis_url)
    more = watch_json(redis_url, run_id, "--after", lines[-1]["id"], code=3)
    assert [e["mode"] for e in more] == ["status", "interrupt", "status"]
    assert more[0]["data"] == {"status": "running"}
    assert more[1]["data"]["requests"][0]["value"] == {"question": "second?"}
    # a replay from the start goes past the first (answered) pause to the current one
    assert watch_json(redis_url, run_id, code=3) == lines + more


def test_watch_of_an_unknown_run_or_a_bad_event_id(redis_url: str) -> None:
    assert "no run with id" in error_line(ok(graphq("runs", "watch", "0" * 32, url=redis_url), 2))
    run_id = enqueue(redis_url, "counter", {"limit": 1})
    bad = ok(graphq("runs", "watch", run_id, "--after", "yesterday", url=redis_url), 2)
    assert "is not an event id" in bad.stderr


# -- live ----------------------------------------------------------------------------------------------------


def test_watch_follows_a_live_run_to_its_end(redis_url: str, redis_client: redis.Redis) -> None:
    run_id = enqueue(redis_url, "counter", {"limit": 3})
    proc = watch_process(redis_url, run_id)
    try:
        wait_for_watcher(redis_client)  # started before any worker: nothing to replay yet
        assert proc.poll() is None
        work(redis_url)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert events(stdout) == watch_json(redis_url, run_id)
    assert [(e["mode"], e["step"]) for e in events(stdout)] == COUNTER_MODES


class Hops(TypedDict, total=False):
    n: int


KILLS: dict[str, Any] = {}


def drop_the_watch(state: Hops) -> dict[str, Any]:
    """A node that waits until the watch has printed everything so far and waits for more, then kills its
    connection: the next events are written while it reconnects."""
    client: redis.Redis = KILLS["client"]
    for client_id in wait_for_watcher(client):
        client.client_kill_filter(_id=str(client_id))
        KILLS["count"] += 1
    return {"n": state.get("n", 0) + 1}


def _hops_graph() -> Any:
    g = StateGraph(Hops)
    g.add_node("hop", drop_the_watch)
    g.add_edge(START, "hop")
    g.add_conditional_edges("hop", lambda s: "hop" if s["n"] < 3 else END, ["hop", END])
    return g.compile(name="hops")


def test_watch_survives_dropped_connections(redis_url: str, redis_client: redis.Redis) -> None:
    registry = Registry({"hops": _hops_graph()})
    kv = connect(redis_url)
    try:
        run_id = Client(kv, registry, RQStepQueue(kv, Settings(redis_url=redis_url))).enqueue("hops", {})
    finally:
        kv.close()
    KILLS.update(client=redis_client, count=0)
    proc = watch_process(redis_url, run_id)
    try:
        for client_id in wait_for_watcher(redis_client):  # once before any event
            redis_client.client_kill_filter(_id=str(client_id))
            KILLS["count"] += 1
        work(redis_url, registry)  # and once in each of the three steps
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert KILLS["count"] == 4
    assert stderr.count("lost the connection to Redis") == 4, stderr
    lines = events(stdout)
    assert list(dict.fromkeys(e["id"] for e in lines)) == stream_ids(redis_client, run_id)
    printed = [json.dumps(e, sort_keys=True) for e in lines]  # an event's lines differ (step -1's and 0's)
    assert printed == list(dict.fromkeys(printed))
    assert [e["data"].get("n") for e in lines if e["mode"] == "values"] == [None, 1, 2, 3]
    assert lines[-1]["data"] == {"status": "completed"}


CHATTY: dict[str, int] = {}


def chatty(state: Hops) -> dict[str, Any]:
    """Writes a chunk, fails the first time (retried), then writes another."""
    write = get_stream_writer()
    write({"progress": 1})
    CHATTY["calls"] += 1
    if CHATTY["calls"] == 1:
        raise ConnectionError("upstream unavailable")
    write({"progress": 2})
    return {"n": 1}


def test_watch_shows_custom_chunks_and_retries(redis_url: str) -> None:
    g = StateGraph(Hops)
    g.add_node("chatty", chatty, retry=RetryPolicy(initial_interval_s=0.01, jitter=False))
    g.add_edge(START, "chatty")
    registry = Registry({"chatty": g.compile(name="chatty")})
    CHATTY["calls"] = 0
    kv = connect(redis_url)
    try:
        run_id = Client(kv, registry, RQStepQueue(kv, Settings(redis_url=redis_url))).enqueue("chatty", {})
    finally:
        kv.close()
    work(redis_url, registry)
    lines = watch_json(redis_url, run_id, "-m", "custom", "-m", "retry")
    assert [e["mode"] for e in lines] == ["custom", "retry", "custom", "custom"]
    assert {e["step"] for e in lines} == {1}
    assert [e["data"] for e in lines if e["mode"] == "custom"] == [
        {"node": "chatty", "chunk": {"progress": p}} for p in (1, 1, 2)
    ]
    retry = lines[1]["data"]
    assert (retry["node"], retry["attempt"]) == ("chatty", 1)
    assert retry["error"] == "ConnectionError: upstream unavailable"


# -- multitask -----------------------------------------------------------------------------------------------


def test_multitask_reject_on_a_busy_thread_enqueues_nothing(
    redis_url: str, redis_client: redis.Redis
) -> None:
    enqueue(redis_url, "asking", {"topic": "tea"}, "--thread", "busy-1")
    work(redis_url)  # paused: the thread stays busy
    before = Client(redis_client, REGISTRY).thread_runs("busy-1")
    refused = ok(
        graphq(
            "enqueue",
            "looping",
            "--input",
            '{"until": 2}',
            "--thread",
            "busy-1",
            "--multitask",
            "reject",
            url=redis_url,
        ),
        2,
    )
    assert "'busy-1'" in error_line(refused)
    assert refused.stdout == ""
    ran = ok(
        graphq(
            "run",
            "looping",
            "--input",
            '{"until": 2}',
            "--thread",
            "busy-1",
            "--multitask",
            "reject",
            url=redis_url,
        ),
        2,
    )
    assert "'busy-1'" in error_line(ran)
    assert Client(redis_client, REGISTRY).thread_runs("busy-1") == before
    waiting = enqueue(redis_url, "looping", {"until": 2}, "--thread", "busy-1")  # the default: in line
    assert Client(redis_client, REGISTRY).get_run(waiting).status.value == "queued"


# -- branches ------------------------------------------------------------------------------------------------


def test_state_history_shows_a_fork_and_its_branch(redis_url: str) -> None:
    enqueue(redis_url, "looping", {"until": 3}, "--thread", "tree-1")
    work(redis_url)
    rows = json.loads(ok(graphq("state", "tree-1", "--history", "-o", "json", url=redis_url)).stdout)
    assert [(r["step"], r["branch"]) for r in rows] == [(s, "main") for s in (3, 2, 1, 0, -1)]
    at = rows[2]["checkpoint_id"]  # step 1: count 1
    fork_run = ok(graphq("enqueue", "looping", "--thread", "tree-1", "--checkpoint", at, url=redis_url))
    work(redis_url)
    shown = ok(graphq("runs", "show", fork_run.stdout.strip(), "-o", "json", url=redis_url))
    record = json.loads(shown.stdout)
    assert record["status"] == "completed" and record["result"]["count"] == 3

    rows = json.loads(ok(graphq("state", "tree-1", "--history", "-o", "json", url=redis_url)).stdout)
    assert [(r["step"], r["source"], r["branch"]) for r in rows] == [
        (4, "loop", "b1"),
        (3, "loop", "b1"),
        (2, "fork", "b1"),
        (3, "loop", "main"),
        (2, "loop", "main"),
        (1, "loop", "main"),
        (0, "loop", "main"),
        (-1, "input", "main"),
    ]
    assert rows[2]["parent_id"] == at and rows[2]["metadata"]["forked_from"] == at

    table = ok(graphq("state", "tree-1", "--history", url=redis_url)).stdout
    assert "(2 branches)" in table and "parent" in table.splitlines()[1]
    [fork_row] = [line for line in table.splitlines() if " fork " in line]
    assert "b1 <- main" in fork_row and rows[2]["checkpoint_id"] in fork_row and at[-12:] in fork_row


def test_enqueue_checkpoint_is_checked_up_front(redis_url: str) -> None:
    enqueue(redis_url, "looping", {"until": 2}, "--thread", "tree-2")
    no_thread = ok(graphq("enqueue", "looping", "--checkpoint", "0" * 32, url=redis_url), 2)
    assert "--checkpoint needs --thread" in error_line(no_thread)
    unknown = ok(graphq("enqueue", "looping", "-t", "tree-2", "--checkpoint", "0" * 32, url=redis_url), 2)
    assert "has no checkpoint" in error_line(unknown)


def test_run_on_a_busy_thread_says_it_waits_in_line(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``graphq run``'s worker works the run ahead of its own here: runs not pinned (the latest policy). A
    pinned run's ``graphq run`` on a shared Redis starts no other run (tests/test_version_pinning.py)."""
    monkeypatch.setenv("GRAPHQ_VERSION_POLICY", "latest")
    get_settings.cache_clear()
    first = enqueue(redis_url, "looping", {"until": 2}, "--thread", "busy-2")  # queued: the thread is busy
    result = ok(graphq("run", "looping", "--input", '{"until": 3}', "--thread", "busy-2", url=redis_url))
    assert f"thread busy-2 is busy with run {first}: this run waits until that one ends" in result.stderr
    assert json.loads(result.stdout)["count"] == 3
    assert json.loads(ok(graphq("runs", "show", first, "-o", "json", url=redis_url)).stdout)["status"] == (
        "completed"
    )


def test_watch_says_when_the_cap_dropped_the_first_events(redis_url: str, redis_client: redis.Redis) -> None:
    run_id = enqueue(redis_url, "counter", {"limit": 1})
    record = Client(redis_client, Registry({})).get_run(run_id)
    stream = keys.run_events(record.thread_id, run_id)
    pipe = redis_client.pipeline(transaction=False)
    for i in range(EVENTS_MAXLEN + 300):  # as _events.lua adds them: MAXLEN ~ EVENTS_MAXLEN
        pipe.xadd(stream, encode_event("custom", 0, {"node": "n", "chunk": i}), maxlen=EVENTS_MAXLEN)
    pipe.execute()
    work(redis_url)
    info = redis_client.xinfo_stream(stream)
    first = info["first-entry"][0].decode()
    result = graphq("runs", "watch", run_id, "-o", "json", "--mode", "status", url=redis_url)
    assert [e["data"] for e in events(ok(result).stdout)] == [{"status": "running"}, {"status": "completed"}]
    cap = f"the stream keeps about the newest {EVENTS_MAXLEN} (EVENTS_MAXLEN)"
    if "entries-added" in info:  # Redis 7+: counted
        dropped = int(info["entries-added"]) - int(info["length"])
        said = f"its first {dropped} events were dropped"
    else:
        said = "its earlier events were dropped"
    assert result.stderr.splitlines()[0] == f"run {run_id}: replaying from event {first}: {said}; {cap}"
    assert "replaying" not in graphq("runs", "watch", run_id, "--after", first, url=redis_url).stderr
    short = enqueue(redis_url, "counter", {"limit": 1})
    work(redis_url)
    assert "replaying" not in graphq("runs", "watch", short, url=redis_url).stderr  # nothing dropped
