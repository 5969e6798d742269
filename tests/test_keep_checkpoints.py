"""GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false (R7): a completed run's thread loses its checkpoints, in
every namespace, unless another run of the thread still needs them (active: queued, running, awaiting
input, a continuation; or waiting in its line); the last run's completion removes them. The results stay
in the run records; run records, request records and event streams are not checkpoints and stay.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.retention import checkpoint_keys, remove_after_completion
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import get_settings, load_settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from tests.cli_helpers import invoke
from tests.workers import Start, ended, wait_for
from tests.workflows import hitl
from tests.workflows.shutdown import shutdown_env, started

FLOWS = "tests.workflows.retention,tests.workflows.hitl,tests.workflows.subgraphs,tests.workflows.shutdown"
REGISTRY = Registry.load(FLOWS.split(","))
FIVE = {"topic": "t", "log": ["a", "b", "c", "d", "e"], "count": 5}


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    """`graphq worker` processes that give a step up 1 s after SIGTERM (the drain timeout)."""
    return shutdown_env(redis_url, tmp_path)


@pytest.fixture
def drop_after(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> Iterator[None]:
    monkeypatch.setenv("GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION", "false")
    monkeypatch.setenv("GRAPHQ_REDIS_URL", redis_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def client(redis_client: redis.Redis, drop_after: None) -> Client:
    hitl.CALLS.clear()
    return Client(redis_client, REGISTRY, RQStepQueue(redis_client, load_settings()))


def work(client: Client) -> None:
    run_worker(load_settings(), burst=True, registry=REGISTRY, kv=client.kv)


def kinds(kv: redis.Redis, thread: str) -> dict[str, int]:
    """How many keys of each kind the thread has (``cp``, ``hist``, ``ch``, ``log``, ``run``, ...)."""
    found: dict[str, int] = {}
    for key in kv.scan_iter(match=keys.thread_pattern(thread)):
        kind = key.decode().split("}:", 1)[1].split(":", 1)[0]
        found[kind] = found.get(kind, 0) + 1
    return found


def test_a_completed_run_leaves_no_checkpoint(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    run = client.get_run(run_id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, FIVE)  # from its record now
    assert kinds(redis_client, "th") == {"run": 1, "events": 1, "runs": 1}
    assert client.get_history("th") == []
    shown = invoke(FLOWS, redis_url, "state", "th")
    assert (shown.exit_code, shown.stderr) == (
        2,
        "error: thread 'th' has no checkpoint; 1 of its runs completed, and checkpoints are removed when a "
        "run completes with GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false (`graphq runs show RUN` keeps "
        "each run's result)\n",
    )
    history = invoke(FLOWS, redis_url, "state", "th", "--history")
    assert (history.exit_code, history.stderr) == (
        2,
        "error: thread 'th' has no checkpoints; 1 of its runs completed, and checkpoints are removed when a "
        "run completes with GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false (`graphq runs show RUN` keeps "
        "each run's result)\n",
    )
    again = client.enqueue("five-steps", {"topic": "u"}, thread_id="th")  # resume_if_exists: nothing left
    work(client)
    assert client.get_run(again).result == {"topic": "u", "log": ["a", "b", "c", "d", "e"], "count": 5}
    assert kinds(redis_client, "th") == {"run": 2, "events": 2, "runs": 1}


def test_kept_while_another_run_of_the_thread_waits_then_removed_by_the_last(
    client: Client, redis_client: redis.Redis
) -> None:
    first = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    asker = client.enqueue("asking", {"topic": "tea"}, thread_id="th")  # waits behind it in the line
    assert redis_client.lrange(keys.thread_waiting("th"), 0, -1) == [asker.encode()]
    work(client)  # first completes; asker becomes active, runs and waits for input
    assert client.get_run(first).status == RunStatus.COMPLETED
    assert client.get_run(asker).status == RunStatus.AWAITING_INPUT
    # first's 7 checkpoints, asker's input checkpoint and its input applied are kept: asker (awaiting input)
    # needs them
    assert [c.step for c in client.get_history("th")] == [7, 6, 5, 4, 3, 2, 1, 0, -1]
    assert kinds(redis_client, "th") == {
        "cp": 1,
        "hist": 1,
        "ch": 2,  # topic, count
        "log": 1,  # log (first's appends)
        "writes": 3,  # each run's input (its __start__ task's writes), asker's paused step
        "run": 2,
        "events": 2,
        "runs": 1,
        "active": 1,
        "requests": 1,
    }
    assert redis_client.hlen(keys.checkpoints("th")) == 9
    assert client.get_run(first).result == FIVE
    assert b"result" in redis_client.hkeys(keys.run("th", first))  # kept in its record already
    client.answer(asker, "yes")
    work(client)
    client.answer(asker, "no")
    work(client)
    done = client.get_run(asker)
    # its result holds its own graph's keys (as LangGraph's output), not the five-steps run's log and count
    # that share the thread (since 1a97350)
    assert (done.status, done.result) == (
        RunStatus.COMPLETED,
        {"topic": "tea", "answers": ["yes", "no"], "done": True},
    )
    assert kinds(redis_client, "th") == {"run": 2, "events": 2, "runs": 1, "requests": 1}
    assert client.get_run(first).result == FIVE
    assert checkpoint_keys(redis_client, "th") == [keys.checkpoints("th"), keys.history("th")]


def review_batch(client: Client, work_here: Callable[[], None]) -> str:
    """A ``batch-review`` run (two subgraph tasks that ask, in their own namespaces), answered to the end."""
    run_id = client.enqueue("batch-review", {"items": ["a", "b"]}, thread_id="th")
    work_here()
    first, second = client.requests(run_id)
    client.answer(run_id, {first.id: "yes", second.id: "no"})
    work_here()
    assert client.get_run(run_id).result == {"items": ["a", "b"], "notes": ["a:yes", "b:no"], "joined": 2}
    return run_id


def checkpoint_scan(kv: redis.Redis, thread: str) -> set[str]:
    kinds_ = ("cp", "hist", "ch", "log", "writes", "answers")
    found = {k.decode() for k in kv.scan_iter(match=keys.thread_pattern(thread))}
    return {k for k in found if k.split("}:", 1)[1].split(":", 1)[0] in kinds_}


def test_subgraph_namespaces_are_removed_too(client: Client, redis_client: redis.Redis) -> None:
    review_batch(client, lambda: work(client))
    assert kinds(redis_client, "th") == {"run": 1, "events": 1, "runs": 1, "requests": 1}


def test_checkpoint_keys_are_found_from_the_records(redis_client: redis.Redis, redis_url: str) -> None:
    """With checkpoints kept (the default), :func:`checkpoint_keys` names every checkpoint key of the
    thread, those of its subgraph namespaces included (the same as a SCAN finds)."""
    get_settings.cache_clear()
    settings = load_settings().model_copy(update={"redis_url": redis_url})
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))
    review_batch(client, lambda: run_worker(settings, burst=True, registry=REGISTRY, kv=redis_client))
    scanned = checkpoint_scan(redis_client, "th")
    assert len({k.split(":cp:")[1] for k in scanned if ":cp:" in k}) == 3  # the root and two subgraphs
    found = checkpoint_keys(redis_client, "th")
    assert {k for k in found if redis_client.exists(k)} == scanned


def test_removal_is_idempotent_and_leaves_a_thread_another_run_needs(
    client: Client, redis_client: redis.Redis
) -> None:
    run_id = client.enqueue("five-steps", {"topic": "t"}, thread_id="th")
    work(client)
    assert remove_after_completion(redis_client, "th", run_id, None) == "removed"  # again: nothing left
    client.kv.set(keys.thread_active("th"), "someone-else")
    assert remove_after_completion(redis_client, "th", run_id, None) == "kept"


def test_a_run_given_up_at_shutdown_keeps_them_for_its_continuation(
    start: Start,
    tmp_path: Path,
    redis_client: redis.Redis,
    drop_after: None,
) -> None:
    """A stopping worker gives the step up (drain timeout): the run ends Canceled with its checkpoints;
    its continuation completes and removes them."""
    client = Client(redis_client, REGISTRY, RQStepQueue(redis_client, load_settings()))
    settings = {"GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION": "false"}
    worker = start(**settings)
    run_id = client.enqueue("two-steps", {"first": {}, "second": {"until_cancel": 2}})
    wait_for(lambda: started(tmp_path, "second"), what="the second step to start")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(15) == 1
    run = client.get_run(run_id)
    assert (run.status, run.error.type if run.error else None) == (RunStatus.CANCELED, "WorkerShutdown")
    assert [c.step for c in client.get_history(run.thread_id)] == [1, 0, -1]  # kept for the continuation
    assert run.continued_by_run_id is not None
    start(**settings)
    final = ended(client, run.continued_by_run_id)
    assert (final.status, final.result) == (
        RunStatus.COMPLETED,
        {"done": ["first", "second"], "first": {}, "second": {"until_cancel": 2}},
    )
    wait_for(lambda: "cp" not in kinds(redis_client, run.thread_id), what="the checkpoints to go")
    assert kinds(redis_client, run.thread_id) == {"run": 2, "events": 2, "runs": 1}
