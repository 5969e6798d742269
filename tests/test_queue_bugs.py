"""Bugs on the queue found as a new user: racing answers, updates of a waiting thread, a cancel
that arrives during a run's last super-step."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.admission import PreparedJob
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, RunStore, now_iso
from graphcore.engine.interrupts import NotAwaitingInputError
from graphcore.engine.registry import Registry
from graphcore.errors import InvalidUpdateError
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue
from graphq.worker.step.lease import Lease
from tests.cli_helpers import error_line, invoke, ok, process_state_restored
from tests.workers import work
from tests.workflows import hitl

REGISTRY = Registry.load(["tests.workflows.hitl"])


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    hitl.CALLS.clear()


class _AnswerFirst(RQStepQueue):
    """A step queue whose first ``prepare`` (the answered step's job, inside the loser's MULTI, after its
    WATCH) lets another client answer the same request: the two answers race exactly there."""

    def __init__(self, kv: Any, settings: Settings, rival: Client, run_id: str) -> None:
        super().__init__(kv, settings)
        self.rival, self.run_id, self.raced = rival, run_id, False

    def prepare(self, run: Any, step: int | None = None) -> PreparedJob:
        if not self.raced:
            self.raced = True
            self.rival.answer(self.run_id, "from the winner")
        return super().prepare(run, step)


def test_the_loser_of_two_concurrent_answers_gets_the_already_answered_error(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"})
    work(client)
    [request] = client.requests(run_id)
    settings = Settings(redis_url=redis_url)
    loser = Client(redis_client, REGISTRY, _AnswerFirst(redis_client, settings, client, run_id))
    with pytest.raises(NotAwaitingInputError) as caught:
        loser.answer(run_id, "from the loser")
    assert (caught.value.run_id, caught.value.status, caught.value.answered) == (
        run_id,
        "queued",
        [request.id],
    )
    assert str(caught.value) == (
        f"run {run_id} is queued, not awaiting input; nothing to answer; answer one of its requests again, "
        f"on a new branch, with answer_again (--again): ['{request.id}']"
    )
    [record] = client.run_requests(run_id)
    assert (record.status, record.answer) == ("answered", "from the winner")
    run = client.get_run(run_id)
    assert redis_client.hgetall(keys.answers(run.thread_id, "", run.head or "")).keys() == {
        request.id.encode()
    }
    work(client)
    [second] = client.requests(run_id)
    assert second.value == {"question": "second?"}


def test_update_state_is_refused_while_a_run_of_the_thread_awaits_input(client: Client) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"}, thread_id="asked")
    work(client)
    head = client.get_state("asked")
    with pytest.raises(InvalidUpdateError) as caught:
        client.update_state("asking", "asked", {"topic": "coffee"}, as_node="ask_twice")
    assert str(caught.value) == (
        f"thread 'asked' has run {run_id} awaiting input; give the update with its answer: "
        f"client.answer({run_id!r}, value, update=..., goto=...) (graphq runs answer {run_id} --value JSON "
        f"--update JSON), or cancel it (graphq runs cancel {run_id})"
    )
    assert client.get_state("asked").id == head.id  # nothing written
    client.answer(run_id, "yes")
    work(client)
    client.answer(run_id, "no")
    work(client)
    done = client.get_run(run_id)
    assert done.result == {"topic": "tea", "answers": ["yes", "no"], "done": True}
    cp = client.update_state("asking", "asked", {"topic": "coffee"}, as_node="finish")  # ended: allowed
    assert (cp.source, cp.channel_values["topic"]) == ("update", "coffee")


FENCING = Registry.load(["tests.workflows.fencing"])


@pytest.mark.parametrize(
    ("interrupt", "said"),
    [
        (False, "cancel requested: the run stops before its next super-step"),
        (True, "cancel requested: running nodes are signalled and the run stops before its next super-step"),
    ],
)
def test_a_cancel_during_the_last_step_wins_over_completion(
    redis_client: redis.Redis, redis_url: str, interrupt: bool, said: str
) -> None:
    """X1: the node of the run's only step is canceled while it runs (and, with interrupt, ignores its
    token): the run ends canceled, never completed, and the step's checkpoint is kept."""
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, FENCING, RQStepQueue(redis_client, settings))
    run_id = client.enqueue("last-cancel", {"url": redis_url, "interrupt": interrupt}, thread_id="last")
    run_worker(settings, burst=True, registry=FENCING, kv=redis_client)
    run = client.get_run(run_id)
    assert (run.status, run.step, run.result) == (RunStatus.CANCELED, 1, None)
    assert run.error is not None
    assert (run.error.type, run.error.message) == (
        "Canceled",
        "canceled by request during the last super-step; its checkpoint is kept",
    )
    history = client.get_history("last")
    assert [c.step for c in history] == [1, 0, -1]
    assert history[0].id == run.head
    assert history[0].channel_values == {"url": redis_url, "interrupt": interrupt, "done": said}
    statuses = [(e.step, e.data) for e in read_events(redis_client, "last", run_id) if e.mode == "status"]
    assert statuses == [(1, {"status": "running"}), (1, {"status": "canceled"})]
    assert client.cancel(run_id) == f"run {run_id} is already canceled; nothing changed"
    assert redis_client.exists(keys.thread_active("last")) == 0  # the thread was handed over
    again = client.resume(run_id)  # X4: the thread goes on from the kept checkpoint (nothing left to run)
    run_worker(settings, burst=True, registry=FENCING, kv=redis_client)
    assert client.get_run(again).status == RunStatus.COMPLETED


def test_a_cancel_during_a_step_that_asks_for_input_ends_the_run(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """X1: canceled while its step ran, the run does not go on to wait for an answer nobody should give."""
    settings = Settings(redis_url=redis_url)
    client = Client(redis_client, FENCING, RQStepQueue(redis_client, settings))
    run_id = client.enqueue("pause-cancel", {"url": redis_url, "interrupt": False}, thread_id="asked")
    run_worker(settings, burst=True, registry=FENCING, kv=redis_client)
    run = client.get_run(run_id)
    assert (run.status, run.step) == (RunStatus.CANCELED, 0)
    assert run.error is not None
    assert (run.error.type, run.error.message) == (
        "Canceled",
        "canceled by request during the step that asked for input; nobody is asked",
    )
    assert client.requests(run_id) == []
    assert [c.step for c in client.get_history("asked")] == [0, -1]
    statuses = [e.data["status"] for e in read_events(redis_client, "asked", run_id) if e.mode == "status"]
    assert statuses == ["running", "canceled"]
    assert redis_client.exists(keys.thread_active("asked")) == 0


def test_the_cli_loser_of_two_concurrent_answers_exits_2_with_one_line(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`graphq runs answer` losing the race to another answer: exit 2, one error line, no traceback."""
    run_id = client.enqueue("asking", {"topic": "tea"})
    work(client)
    [request] = client.requests(run_id)
    prepare = RQStepQueue.prepare
    raced: list[bool] = []

    def rival_first(self: RQStepQueue, run: Any) -> PreparedJob:
        if not raced:  # inside the CLI's MULTI, after its WATCH: another answer lands first
            raced.append(True)
            client.answer(run_id, "from the winner")
        return prepare(self, run)

    monkeypatch.setattr(RQStepQueue, "prepare", rival_first)
    with process_state_restored():
        result = invoke("tests.workflows.hitl", redis_url, "runs", "answer", run_id, "--value", '"late"')
    ok(result, 2)
    assert error_line(result) == (
        f"error: run {run_id} is queued, not awaiting input; nothing to answer; to answer its request again, "
        f"on a new branch: graphq --redis-url {redis_url} --workflows tests.workflows.hitl runs answer "
        f"{run_id} --request {request.id} --value '<JSON>' --again"
    )
    [record] = client.run_requests(run_id)
    assert (record.status, record.answer) == ("answered", "from the winner")


def test_an_answer_given_as_the_step_pauses_is_claimed_at_once(
    client: Client, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pause gives the step's lease back in the script that sets AwaitingInput: an answer that comes
    before the pausing job has even returned gets its step claimed at once (it used to find the lease still
    held, be skipped, and leave the run queued for good)."""
    run_id = client.enqueue("asking", {"topic": "tea"})
    set_status = RunStore.set_status
    claims: list[int] = []

    def answer_at_once(self: RunStore, record: Any, status: RunStatus, **options: Any) -> bool:
        done = set_status(self, record, status, **options)
        if status == RunStatus.AWAITING_INPUT and done and not claims:
            client.answer(run_id, "yes")
            lease = Lease(redis_client, record.thread_id, run_id, 30, 10)
            claims.append(lease.claim(record.step, now_iso(), CANCEL_ERROR.model_dump_json())[0])
            lease.release()
        return done

    monkeypatch.setattr(RunStore, "set_status", answer_at_once)
    work(client)
    assert claims == [3]  # claimed
    run = client.get_run(run_id)
    assert run.status == RunStatus.AWAITING_INPUT
    [second] = client.requests(run_id)
    assert second.value == {"question": "second?"}
