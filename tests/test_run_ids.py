"""A run id names one run: ``client.enqueue(..., run_id=X)`` with an X in use is
refused and writes nothing, on the same thread (its input was replaced, the second run never ran) or on
another (the record was replaced: the first run left ``runs list``); two creates racing with one id, one
wins; a schedule's fire whose run id is taken is recorded missed instead of writing over that run."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.admission import PreparedJob
from graphcore.backend.client import Client, RunRequest
from graphcore.engine.registry import Registry
from graphcore.errors import RunExistsError
from graphcore.settings import Settings
from graphq.scheduler.api import Schedules
from graphq.scheduler.loop import Scheduler
from graphq.worker.queue import RQStepQueue
from tests.workers import work

REGISTRY = Registry.load(["tests.workflows.basic"])


def snapshot(kv: redis.Redis) -> dict[bytes, bytes | None]:
    """Every key of the database with its serialized value (DUMP): equal snapshots, nothing written."""
    return {k: kv.dump(k) for k in sorted(kv.keys("*"))}  # type: ignore[misc]


def refusal(run_id: str, thread: str) -> str:
    return (
        f"run {run_id} exists already (thread {thread!r}); nothing was enqueued: a run id names one run, "
        "give a new one or none"
    )


def test_an_id_in_use_on_the_same_thread_is_refused_and_the_first_run_runs(
    client: Client, redis_client: redis.Redis
) -> None:
    client.enqueue("counter", {"limit": 1}, run_id="r1")
    before = snapshot(redis_client)
    with pytest.raises(RunExistsError) as caught:
        client.enqueue("counter", {"limit": 5}, run_id="r1")
    assert str(caught.value) == refusal("r1", "r1")
    assert (caught.value.run_id, caught.value.thread_id) == ("r1", "r1")
    assert snapshot(redis_client) == before
    work(client)
    run = client.get_run("r1")
    assert (run.input, run.status.value) == ({"limit": 1}, "completed")
    assert run.result == {"n": 1, "limit": 1, "log": ["bump1"]}


def test_an_id_in_use_on_another_thread_is_refused_and_the_first_run_stays_listed(
    client: Client, redis_client: redis.Redis
) -> None:
    client.enqueue("counter", {"limit": 1}, run_id="r1", thread_id="first")
    before = snapshot(redis_client)
    with pytest.raises(RunExistsError) as caught:
        client.enqueue("counter", {"limit": 5}, run_id="r1", thread_id="second")
    assert str(caught.value) == refusal("r1", "first")
    assert snapshot(redis_client) == before
    assert [(r.id, r.thread_id, r.input) for r in client.list_runs()] == [("r1", "first", {"limit": 1})]


def test_one_id_given_to_two_runs_of_a_batch_is_refused(client: Client, redis_client: redis.Redis) -> None:
    requests = [RunRequest("counter", {"limit": i}, run_id="twice", thread_id=f"t{i}") for i in (1, 2)]
    with pytest.raises(RunExistsError) as caught:
        client.enqueue_many(requests)
    assert str(caught.value) == (
        "run id 'twice' is given to two runs of one request; nothing was enqueued: a run id names one run, "
        "give a new one or none"
    )
    assert snapshot(redis_client) == {}


def test_check_refuses_an_id_in_use(client: Client) -> None:
    client.enqueue("counter", {"limit": 1}, run_id="r1", thread_id="first")
    with pytest.raises(RunExistsError, match="run r1 exists already"):
        client.check(RunRequest("counter", {"limit": 1}, run_id="r1"))
    client.check(RunRequest("counter", {"limit": 1}, run_id="r2"))


class _RivalFirst(RQStepQueue):
    """A step queue whose first ``prepare`` (inside the MULTI of its client's create, after the WATCH and the
    check that the id is free) lets a rival client create a run of the same id on another thread: the two
    creates race exactly there."""

    def __init__(self, kv: Any, settings: Settings, rival: Client) -> None:
        super().__init__(kv, settings)
        self.rival, self.raced = rival, False

    def prepare(self, run: Any, step: int | None = None) -> PreparedJob:
        if not self.raced:
            self.raced = True
            self.rival.enqueue("counter", {"limit": 1}, run_id="race", thread_id="winner")
        return super().prepare(run, step)


def test_of_two_creates_racing_with_one_id_the_second_is_refused(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    loser = Client(redis_client, REGISTRY, _RivalFirst(redis_client, Settings(redis_url=redis_url), client))
    with pytest.raises(RunExistsError) as caught:
        loser.enqueue("counter", {"limit": 5}, run_id="race", thread_id="loser")
    assert str(caught.value) == refusal("race", "winner")
    assert [(r.id, r.thread_id, r.input) for r in client.list_runs()] == [("race", "winner", {"limit": 1})]
    assert redis_client.keys(keys.thread_pattern("loser")) == []
    assert redis_client.keys(keys.run_create("race")) == []


def test_of_eight_threads_creating_one_id_one_wins(client: Client, redis_client: redis.Redis) -> None:
    won: list[str] = []
    refused: list[str] = []

    def create(i: int) -> None:
        try:
            client.enqueue("counter", {"limit": i}, run_id="many", thread_id=f"t{i}")
            won.append(f"t{i}")
        except RunExistsError as exc:
            refused.append(str(exc.thread_id))

    racers = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    [thread] = won
    assert refused == [thread] * 7
    [run] = client.list_runs()
    assert (run.id, run.thread_id) == ("many", thread)
    mine = f"graphq:{{{thread}}}".encode()
    assert [k for k in redis_client.keys("graphq:{t*") if not k.startswith(mine)] == []


def test_a_fire_whose_run_id_is_taken_is_recorded_missed_and_the_run_kept(client: Client) -> None:
    """A run created under the id of a schedule's next fire (here by hand): the fire is recorded missed with
    why, and that run keeps its thread and input (the fire wrote over it)."""
    clock = [datetime(2026, 3, 7, tzinfo=UTC).timestamp()]
    schedules = Schedules(client, lambda: clock[0])
    schedules.add("fine", workflow="counter", cron="* * * * *", input={"limit": 3})
    client.enqueue("counter", {"limit": 1}, run_id="fine-20260307T000100Z", thread_id="mine")
    clock[0] += 100
    Scheduler(client, Settings(), clock=lambda: clock[0], name="a").tick()
    [fire] = schedules.history("fine")
    assert (fire.fire_time, fire.outcome, fire.run_id) == ("2026-03-07T00:01:00Z", "missed", None)
    assert fire.note == "not started: " + refusal("fine-20260307T000100Z", "mine")
    run = client.get_run("fine-20260307T000100Z")
    assert (run.thread_id, run.input, run.schedule) == ("mine", {"limit": 1}, None)
