"""GRAPHQ_ENABLE_CHECKPOINTING=false (R5): one checkpoint per thread, its working state, overwritten each
step; no history, so forks and second answers are refused; a run started again after its worker died
starts from its input on an empty state. (The conflicting settings are refused at startup: test_settings.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend import published
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints.layout import decode_record
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.engine.algo import apply_input
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.settings import Settings, get_settings, load_settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from tests.cli_helpers import invoke, ok
from tests.workers import Beats, Procs
from tests.workflows import hitl
from tests.workflows.crash import crash_env, executions
from tests.workflows.retention import five_steps

FLOWS = "tests.workflows.retention,tests.workflows.hitl,tests.workflows.subgraphs"
REGISTRY = Registry.load(FLOWS.split(","))
FIVE = {"topic": "t", "log": ["a", "b", "c", "d", "e"], "count": 5}


@pytest.fixture
def no_history(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GRAPHQ_ENABLE_CHECKPOINTING", "false")
    monkeypatch.setenv("GRAPHQ_RESUME_INTERRUPTED_RUNS", "false")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def client(redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Client:
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    return Client(redis_client, REGISTRY, RQStepQueue(redis_client, load_settings()))


def work(client: Client) -> None:
    run_worker(load_settings(), burst=True, registry=REGISTRY, kv=client.kv)


def thread_keys(kv: redis.Redis, thread: str) -> dict[str, int]:
    """Every key of ``thread`` with its size (fields, items or entries)."""
    size = {b"hash": kv.hlen, b"list": kv.llen, b"zset": kv.zcard, b"stream": kv.xlen, b"string": kv.strlen}
    return {k.decode(): int(size[kv.type(k)](k)) for k in kv.scan_iter(match=keys.thread_pattern(thread))}


def test_a_five_step_run_keeps_one_checkpoint(
    client: Client, redis_client: redis.Redis, no_history: None
) -> None:
    run_id = client.enqueue("five-steps", {"topic": "t"})
    work(client)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result) == (RunStatus.COMPLETED, 5, FIVE)
    [head] = client.get_history(run.thread_id)
    assert (head.id, head.step, dict(head.channel_values)) == (run.head, 5, FIVE)
    assert client.get_state(run.thread_id).id == run.head
    refs = decode_record(redis_client.hget(keys.checkpoints(run.thread_id), head.id) or b"").refs
    t = run.thread_id
    topic_by, (_, gen, length) = refs["topic"][1], refs["log"]
    assert (refs["count"], length) == (["v", head.id], 5)
    assert topic_by != head.id  # written by the input checkpoint (gone), kept: the head refers to it
    assert thread_keys(redis_client, t) == {
        keys.checkpoints(t): 1,
        keys.history(t): 1,
        keys.channel_values(t, "", "topic"): 1,
        keys.channel_values(t, "", "count"): 1,
        keys.channel_log(t, "", "log", gen): 5,
        keys.run(t, run_id): len(redis_client.hgetall(keys.run(t, run_id))),
        keys.run_events(t, run_id): redis_client.xlen(keys.run_events(t, run_id)),
        keys.thread_runs(t): 1,
    }
    assert redis_client.hkeys(keys.channel_values(t, "", "count")) == [head.id.encode()]
    assert redis_client.hkeys(keys.channel_values(t, "", "topic")) == [topic_by.encode()]


def test_with_history_the_same_run_keeps_every_checkpoint(client: Client, redis_client: redis.Redis) -> None:
    """The contrast: checkpointing on (the default) keeps the input checkpoint and one per step."""
    run_id = client.enqueue("five-steps", {"topic": "t"})
    work(client)
    run = client.get_run(run_id)
    assert [c.step for c in client.get_history(run.thread_id)] == [5, 4, 3, 2, 1, 0, -1]
    assert redis_client.hlen(keys.channel_values(run.thread_id, "", "count")) == 5


def test_state_history_shows_the_one_checkpoint(client: Client, redis_url: str, no_history: None) -> None:
    run_id = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    shown = ok(invoke(FLOWS, redis_url, "state", "th", "--history", "--output", "json"))
    assert [(c["checkpoint_id"], c["step"]) for c in json.loads(shown.stdout)] == [
        (client.get_run(run_id).head, 5)
    ]


def test_a_second_run_on_the_thread_replaces_the_state_and_keeps_the_first_result(
    client: Client, redis_client: redis.Redis, no_history: None
) -> None:
    first = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    second = client.enqueue("five-steps", {"topic": "u"}, thread_id="th", config={"resume_if_exists": True})
    work(client)
    assert client.get_run(first).result == FIVE  # copied into its record before its checkpoint went
    assert b"result" in redis_client.hkeys(keys.run("th", first))
    done = client.get_run(second)
    assert done.result == {"topic": "u", "log": ["a", "b", "c", "d", "e"] * 2, "count": 10}
    assert b"result" not in redis_client.hkeys(keys.run("th", second))  # its head is still there
    assert [c.id for c in client.get_history("th")] == [done.head]
    assert redis_client.hlen(keys.checkpoints("th")) == 1
    assert redis_client.hlen(keys.channel_values("th", "", "count")) == 1
    assert redis_client.hlen(keys.channel_values("th", "", "topic")) == 1


def test_a_fresh_run_on_a_used_thread_drops_the_old_state(
    client: Client, redis_client: redis.Redis, no_history: None
) -> None:
    client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    second = client.enqueue("five-steps", {"topic": "u"}, thread_id="th", config={"resume_if_exists": False})
    work(client)
    assert client.get_run(second).result == {"topic": "u", "log": ["a", "b", "c", "d", "e"], "count": 5}
    logs = [k for k in thread_keys(redis_client, "th") if ":log:" in k]
    assert len(logs) == 1 and redis_client.llen(logs[0]) == 5
    assert redis_client.hlen(keys.checkpoints("th")) == 1


def test_forks_and_second_answers_are_refused(
    client: Client, redis_client: redis.Redis, redis_url: str, no_history: None
) -> None:
    run_id = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    head = client.get_run(run_id).head
    with pytest.raises(ConfigError, match="GRAPHQ_ENABLE_CHECKPOINTING=false"):
        client.enqueue("five-steps", None, thread_id="th", config={"checkpoint_id": head})
    forked = invoke(FLOWS, redis_url, "enqueue", "five-steps", "--thread", "th", "--checkpoint", str(head))
    assert forked.exit_code == 2
    assert forked.stderr.splitlines() == [
        f"error: --checkpoint: checkpoint_id {head!r}: starting from a given checkpoint (a fork) needs "
        "checkpoint history, and GRAPHQ_ENABLE_CHECKPOINTING=false keeps only each thread's working state"
    ]
    hitl.CALLS.clear()
    asked = client.enqueue("asking", {"topic": "tea"})
    work(client)
    [request] = client.requests(asked)
    client.answer(asked, "yes")
    work(client)
    while client.get_run(asked).status == RunStatus.AWAITING_INPUT:  # answer the later questions too
        client.answer(asked, "yes")
        work(client)
    assert client.get_run(asked).status == RunStatus.COMPLETED
    shown = ok(invoke(FLOWS, redis_url, "runs", "show", asked)).stdout
    assert "answered" in shown and "again" not in shown  # no --again hint: it would be refused
    before = {k: redis_client.dump(k) for k in redis_client.scan_iter(match="*")}
    again = invoke(
        FLOWS, redis_url, "runs", "answer", asked, "--request", request.id, "--value", '"no"', "--again"
    )
    assert again.exit_code == 2
    assert again.stderr.splitlines() == [
        f"error: request {request.id} of run {asked}: a second answer (a branch at the checkpoint that "
        "asked) needs checkpoint history, and GRAPHQ_ENABLE_CHECKPOINTING=false keeps only each thread's "
        "working state"
    ]
    assert {k: redis_client.dump(k) for k in redis_client.scan_iter(match="*")} == before


def test_an_answered_run_keeps_one_checkpoint(
    client: Client, redis_client: redis.Redis, no_history: None
) -> None:
    hitl.CALLS.clear()
    run_id = client.enqueue("asking", {"topic": "tea"})
    work(client)
    client.answer(run_id, "yes")
    work(client)
    client.answer(run_id, "no")
    work(client)
    done = client.get_run(run_id)
    assert (done.status, done.result) == (
        RunStatus.COMPLETED,
        {"topic": "tea", "answers": ["yes", "no"], "done": True},
    )
    assert [c.id for c in client.get_history(done.thread_id)] == [done.head]
    kinds = {k.split("}:")[1].split(":")[0] for k in thread_keys(redis_client, done.thread_id)}
    assert kinds == {"cp", "hist", "ch", "log", "run", "events", "runs", "requests"}  # no writes, answers


def test_subgraph_namespaces_go_with_their_step(
    client: Client, redis_client: redis.Redis, no_history: None
) -> None:
    """Two subgraph tasks that ask, answered one at a time (the step runs three times): once the step
    commits, its subgraphs' checkpoints go with it; only the root's working state is left."""
    run_id = client.enqueue("batch-review", {"items": ["a", "b"]}, thread_id="th")
    work(client)
    first, second = client.requests(run_id)
    subgraph_keys = [k for k in thread_keys(redis_client, "th") if ":reviewer:" in k]
    assert len([k for k in subgraph_keys if k.split("}:", 1)[1].startswith("cp:")]) == 2  # one per task
    client.answer(run_id, {first.id: "yes"})
    work(client)
    client.answer(run_id, {second.id: "no"})
    work(client)
    done = client.get_run(run_id)
    assert done.result == {"items": ["a", "b"], "notes": ["a:yes", "b:no"], "joined": 2}
    assert [k for k in thread_keys(redis_client, "th") if ":reviewer:" in k] == []
    assert [c.id for c in client.get_history("th")] == [done.head]


def test_in_memory_store_without_history_keeps_one_checkpoint() -> None:
    store = InMemoryCheckpointStore(five_steps.schema, history=False)
    cp = apply_input(five_steps, None, {"topic": "t", "log": ["x"]}, {"run_id": "r"})
    store.put("th", cp)
    nxt = apply_input(five_steps, cp, {"log": ["y"], "count": 1}, {"run_id": "r"})
    store.put("th", nxt)
    assert [c.id for c in store.list("th")] == [nxt.id]
    assert store.get("th", cp.id) is None
    assert dict(store.get("th").channel_values) == {"topic": "t", "log": ["x", "y"], "count": 1}  # type: ignore[union-attr]


def test_a_write_without_history_costs_no_extra_round_trip(redis_client: redis.Redis) -> None:
    """The prune rides in the write's MULTI as a plain script call: redis-py's registered scripts on a
    pipeline send SCRIPT EXISTS first, one more round trip for every step's commit (and every subgraph
    checkpoint) when no history is kept."""
    store = RedisCheckpointStore(redis_client, five_steps.schema, history=False)
    cp = apply_input(five_steps, None, {"topic": "t", "log": ["x"]}, {"run_id": "r"})
    store.put("th", cp)
    redis_client.config_resetstat()
    for item in ("y", "z"):
        cp = apply_input(five_steps, cp, {"log": [item]}, {"run_id": "r"})
        store.put("th", cp)
    stats = redis_client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): stat["calls"] for name, stat in stats.items()}
    assert (calls.get("script", 0), calls["exec"]) == (0, 2)
    assert [c.id for c in store.list("th")] == [cp.id]
    assert dict(store.get("th").channel_values) == {"topic": "t", "log": ["x", "y", "z"]}  # type: ignore[union-attr]


def test_a_restarted_run_starts_from_its_input_on_an_empty_state(
    client: Client, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Resume off (required with checkpointing off): a run whose worker died is started again from its
    input; the checkpoints it started from are gone, so it starts on an empty state (not on its own
    half-done working state, which would run its first node twice)."""
    env = crash_env(redis_url, GRAPHQ_RESUME_INTERRUPTED_RUNS="false", GRAPHQ_ENABLE_CHECKPOINTING="false")
    crash = Client(redis_client, Registry.load(["tests.workflows.crash"]), client.queue)
    run_id = crash.enqueue("crashonce", {"n": 1})
    with Procs(tmp_path, env) as procs:
        procs.keep_one_worker()
        [final] = crash.wait([run_id], timeout_s=30)
    assert (final.status, final.attempt, final.result) == (
        RunStatus.COMPLETED,
        2,
        {"n": 1, "trail": ["first", "doom"]},
    )
    assert final.interrupted is not None and final.interrupted.type == "WorkerLost"
    assert executions(redis_client) == {"first": 2, "doom": 2}
    assert [c.step for c in crash.get_history(final.thread_id)] == [2]  # the input applied 0, first 1, doom 2


def test_update_state_keeps_the_replaced_runs_result(
    client: Client, redis_client: redis.Redis, no_history: None
) -> None:
    run_id = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    updated = client.update_state("five-steps", "th", {"count": 99}, as_node="e")
    assert client.get_run(run_id).result == FIVE
    assert [c.id for c in client.get_history("th")] == [updated.id]
    assert client.get_state("th").channel_values == {**FIVE, "count": 99}
    assert redis_client.hlen(keys.channel_values("th", "", "count")) == 1


def test_forks_are_refused_in_a_shell_without_the_setting_while_a_worker_keeps_no_history(
    client: Client, redis_client: redis.Redis, redis_url: str, heartbeats: Beats
) -> None:
    """The workers run with GRAPHQ_ENABLE_CHECKPOINTING=false, the operator's shell without it: its fork is
    refused naming the worker (before, it was accepted and ran as no fork; a second answer failed its run
    with CheckpointNotFoundError). Once that worker is gone, forks are accepted again."""
    run_id = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    head = client.get_run(run_id).head
    beat = heartbeats("w-nohist", ["graphq:five-steps"])
    off = Settings(redis_url=redis_url, enable_checkpointing=False, resume_interrupted_runs=False)
    published.publish(redis_client, off, "w-nohist")
    before = redis_client.dbsize()
    forked = invoke(FLOWS, redis_url, "enqueue", "five-steps", "--thread", "th", "--checkpoint", str(head))
    assert (forked.exit_code, forked.stderr.splitlines()) == (
        2,
        [
            f"error: --checkpoint: checkpoint_id {head!r}: starting from a given checkpoint (a fork) needs "
            "checkpoint history, and GRAPHQ_ENABLE_CHECKPOINTING=false (on worker w-nohist) keeps only each "
            "thread's working state"
        ],
    )
    assert redis_client.dbsize() == before
    beat.stop()
    published.publish(redis_client, Settings(redis_url=redis_url), "w-hist")  # a worker with history, newer
    assert client.enqueue("five-steps", None, thread_id="th", config={"checkpoint_id": head})
