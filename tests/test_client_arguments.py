"""Every public method of the client refuses an argument of the wrong type, or out of range, with an error
naming the parameter, before anything is written: ``tenant=123`` was ``'int' object is not iterable``,
``config="nope"`` ``dictionary update sequence element #0``, ``wait("abc")`` ``no run with id 'a'``, a
made-up ``continued_from_run_id`` was stored, and ``update_state`` stored a value of a type ``enqueue``
refuses."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import redis

from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunFilter, RunStatus
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.inputs import InputTypeError
from graphcore.engine.registry import Registry
from graphcore.errors import ArgumentTypeError, ConfigError, RunNotFoundError
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import connect_client

REGISTRY = Registry.load(["tests.workflows.typed"])
ID_RULE = (
    "is invalid: use 1-200 characters without braces, brackets, ':', '*', '?', spaces or control characters"
)
LIMIT = "must be an int from 1 to 100000"
ACME = RunFilter(tenant="acme")

Call = Callable[[Client, str], Any]
"""A client call, given the client and the id of a queued run on thread ``t1``."""

CASES: list[tuple[str, Call, type[Exception], str]] = [
    ("enqueue", lambda c, r: c.enqueue("typed", {}, tenant=123), ArgumentTypeError,
     "tenant must be a str (got int 123)"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, config="nope"), ArgumentTypeError,
     "config must be a mapping of run options, a RunConfig or None (got str 'nope')"),
    ("enqueue", lambda c, r: c.enqueue(123, {}), ArgumentTypeError,
     "workflow must be a workflow name (str) (got int 123)"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, thread_id=5), ArgumentTypeError,
     "thread_id must be a str or None (got int 5)"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, run_id=["r"]), ArgumentTypeError,
     "run id must be a str (got list ['r'])"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, continued_from_run_id="made-up"), RunNotFoundError,
     "continued_from_run_id: no run with id 'made-up'"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, thread_id="t2", continued_from_run_id=r), ConfigError,
     "continued_from_run_id: run R is a run of thread 't1', not of this run's thread 't2'"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, continued_from_run_id=7), ArgumentTypeError,
     "continued_from_run_id must be a str (got int 7)"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, continued_from_run_id="a b"), ConfigError,
     f"continued_from_run_id 'a b' {ID_RULE}"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, preset_answers=[1]), ArgumentTypeError,
     "preset_answers must be a mapping (got list [1])"),
    ("enqueue", lambda c, r: c.enqueue("typed", {}, multitask="never"), ConfigError,
     "multitask must be one of ['reject', 'enqueue'] (got 'never')"),
    ("enqueue_many", lambda c, r: c.enqueue_many(RunRequest("typed")), ArgumentTypeError,
     "requests must be a list of RunRequests (got RunRequest RunRequest(workflow='typed', input=None, "
     "thread_id=None, ten…)"),
    ("enqueue_many", lambda c, r: c.enqueue_many(["typed"]), ArgumentTypeError,
     "requests[0] must be a RunRequest (got str 'typed')"),
    ("enqueue_guarded", lambda c, r: c.enqueue_guarded([], "x"), ArgumentTypeError,
     "guard must be a Guard or None (got str 'x')"),
    ("check", lambda c, r: c.check("typed"), ArgumentTypeError,
     "request must be a RunRequest (got str 'typed')"),
    ("get_run", lambda c, r: c.get_run(5), ArgumentTypeError,
     "run id must be a str (got int 5)"),
    ("chain", lambda c, r: c.chain(None), ArgumentTypeError,
     "run id must be a str (got NoneType None)"),
    ("requests", lambda c, r: c.requests(b"r"), ArgumentTypeError,
     "run id must be a str (got bytes b'r')"),
    ("run_requests", lambda c, r: c.run_requests(1.5), ArgumentTypeError,
     "run id must be a str (got float 1.5)"),
    ("answer", lambda c, r: c.answer(r, "yes", request_id=3), ArgumentTypeError,
     "request_id must be a str or None (got int 3)"),
    ("answer_again", lambda c, r: c.answer_again(r, 3, "yes"), ArgumentTypeError,
     "request_id must be a str (got int 3)"),
    ("cancel", lambda c, r: c.cancel(r, interrupt="yes"), ArgumentTypeError,
     "interrupt must be a bool (got str 'yes')"),
    ("try_cancel", lambda c, r: c.try_cancel(r, interrupt=1), ArgumentTypeError,
     "interrupt must be a bool (got int 1)"),
    ("resume", lambda c, r: c.resume([r]), ArgumentTypeError,
     "run id must be a str (got list ['R'])"),
    ("wait", lambda c, r: c.wait("abc"), ArgumentTypeError,
     "run_ids must be a list of run ids (got str 'abc')"),
    ("wait", lambda c, r: c.wait([r, 5]), ArgumentTypeError,
     "run_ids[1] must be a run id (got int 5)"),
    ("wait", lambda c, r: c.wait([r], timeout_s=-1), ConfigError,
     "timeout_s must be a number of seconds at least 0 or None (got -1)"),
    ("wait", lambda c, r: c.wait([r], timeout_s=float("nan")), ConfigError,
     "timeout_s must be a number of seconds at least 0 or None (got nan)"),
    ("wait", lambda c, r: c.wait([r], timeout_s="5"), ArgumentTypeError,
     "timeout_s must be a number of seconds at least 0 or None (got str '5')"),
    ("wait", lambda c, r: c.wait([r], poll_s=0), ConfigError,
     "poll_s must be a number of seconds above 0 and at most 60 (got 0)"),
    ("wait", lambda c, r: c.wait([r], on_change=5), ArgumentTypeError,
     "on_change must be a callable or None (got int 5)"),
    ("cancel_runs", lambda c, r: c.cancel_runs(RunFilter()), ConfigError,
     "where: give at least one filter (tenant, status, workflow, schedule, version)"),
    ("cancel_runs", lambda c, r: c.cancel_runs("acme"), ArgumentTypeError,
     "where must be a RunFilter (got str 'acme')"),
    ("cancel_runs", lambda c, r: c.cancel_runs(ACME, batch=0), ConfigError, f"batch {LIMIT} (got 0)"),
    ("cancel_runs", lambda c, r: c.cancel_runs(ACME, interrupt="yes"), ArgumentTypeError,
     "interrupt must be a bool (got str 'yes')"),
    ("cancel_runs", lambda c, r: c.cancel_runs(ACME, dry_run=1), ArgumentTypeError,
     "dry_run must be a bool (got int 1)"),
    ("cancel_runs", lambda c, r: c.cancel_runs(ACME, stop=True), ArgumentTypeError,
     "stop must be a callable returning a bool, or None (got bool True)"),
    ("cancel_runs", lambda c, r: c.cancel_runs(ACME, progress="x"), ArgumentTypeError,
     "progress must be a callable taking a BulkResult, or None (got str 'x')"),
    ("resume_runs", lambda c, r: c.resume_runs(RunFilter()), ConfigError,
     "where: give at least one filter (tenant, status, workflow, schedule, version)"),
    ("resume_runs", lambda c, r: c.resume_runs(ACME, batch="9"), ArgumentTypeError,
     f"batch {LIMIT} (got str '9')"),
    ("delete_threads", lambda c, r: c.delete_threads(0), ConfigError,
     "older_than_s must be a number of seconds above 0 (got 0)"),
    ("delete_threads", lambda c, r: c.delete_threads("30d"), ArgumentTypeError,
     "older_than_s must be a number of seconds above 0 (got str '30d')"),
    ("delete_threads", lambda c, r: c.delete_threads(60, "acme"), ArgumentTypeError,
     "where must be a RunFilter or None (got str 'acme')"),
    ("delete_threads", lambda c, r: c.delete_threads(60, force=1), ArgumentTypeError,
     "force must be a bool (got int 1)"),
    ("list_runs", lambda c, r: c.list_runs(0), ConfigError, f"limit {LIMIT} (got 0)"),
    ("list_runs", lambda c, r: c.list_runs(99999999999999999999), ConfigError,  # a Redis ResponseError
     f"limit {LIMIT} (got 99999999999999999999)"),
    ("list_runs", lambda c, r: c.list_runs("5"), ArgumentTypeError,
     f"limit {LIMIT} (got str '5')"),
    ("list_runs", lambda c, r: c.list_runs(where="acme"), ArgumentTypeError,
     "where must be a RunFilter or None (got str 'acme')"),
    ("stuck_runs", lambda c, r: c.stuck_runs(True), ArgumentTypeError,
     f"limit {LIMIT} (got bool True)"),
    ("get_history", lambda c, r: c.get_history("t1", limit=0), ConfigError,
     f"limit {LIMIT} or None (got 0)"),
    ("get_history", lambda c, r: c.get_history(5), ArgumentTypeError,
     "thread id must be a str (got int 5)"),
    ("get_state", lambda c, r: c.get_state("t1", checkpoint_id=5), ArgumentTypeError,
     "checkpoint_id must be a str or None (got int 5)"),
    ("get_state", lambda c, r: c.get_state("a b"), ConfigError, f"thread id 'a b' {ID_RULE}"),
    ("thread_runs", lambda c, r: c.thread_runs(5), ArgumentTypeError,
     "thread id must be a str (got int 5)"),
    ("delete_thread", lambda c, r: c.delete_thread("t1", force="yes"), ArgumentTypeError,
     "force must be a bool (got str 'yes')"),
    ("delete_thread", lambda c, r: c.delete_thread(None), ArgumentTypeError,
     "thread id must be a str (got NoneType None)"),
    ("update_state", lambda c, r: c.update_state(5, "t1", {}), ArgumentTypeError,
     "workflow must be a workflow name (str) (got int 5)"),
    ("update_state", lambda c, r: c.update_state("typed", 5, {}), ArgumentTypeError,
     "thread id must be a str (got int 5)"),
    ("update_state", lambda c, r: c.update_state("typed", "t1", {}, as_node=5), ArgumentTypeError,
     "as_node must be a node name (str) or None (got int 5)"),
    ("open_requests", lambda c, r: c.open_requests(0), ConfigError, f"limit {LIMIT} (got 0)"),
    ("open_requests", lambda c, r: c.open_requests("5"), ArgumentTypeError,
     f"limit {LIMIT} (got str '5')"),
    ("resume_refusal", lambda c, r: c.resume_refusal(r), ArgumentTypeError,
     "run must be a RunRecord (get_run's) (got str 'R')"),
    ("update_writer", lambda c, r: c.update_writer(5, "t1"), ArgumentTypeError,
     "workflow must be a workflow name (str) (got int 5)"),
    ("update_writer", lambda c, r: c.update_writer("typed", "a b"), ConfigError,
     f"thread id 'a b' {ID_RULE}"),
    ("thread_step", lambda c, r: c.thread_step(r), ArgumentTypeError,
     "record must be a RunRecord (get_run's) (got str 'R')"),
    ("shown_values", lambda c, r: c.shown_values("t1", {"a": 1}), ArgumentTypeError,
     "cp must be a Checkpoint (got dict {'a': 1})"),
    ("shown_values", lambda c, r: c.shown_values("t1", Checkpoint("c1", None, 0, {}), workflow=5),
     ArgumentTypeError,
     "workflow must be a workflow name (str) or None (got int 5)"),
]  # fmt: skip

WITHOUT_ARGUMENTS = {"keeps_history"}


@pytest.fixture
def client(redis_url: str, redis_client: redis.Redis) -> Client:
    return connect_client(redis_url, registry=REGISTRY)


def test_every_public_method_is_covered() -> None:
    """A new public method gets its cases here."""
    public = {n for n, _ in inspect.getmembers(Client, inspect.isfunction) if not n.startswith("_")}
    assert public == {name for name, *_ in CASES} | WITHOUT_ARGUMENTS


@pytest.mark.parametrize(
    ("method", "call", "error", "message"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_a_bad_argument_is_named(
    client: Client, method: str, call: Call, error: type[Exception], message: str
) -> None:
    run_id = client.enqueue("typed", {"amount": 1}, thread_id="t1")
    before = [(r.id, r.status) for r in client.list_runs()]
    with pytest.raises(error) as info:
        call(client, run_id)
    assert str(info.value) == message.replace("'R'", repr(run_id)).replace("run R ", f"run {run_id} ")
    assert [(r.id, r.status) for r in client.list_runs()] == before  # nothing written
    if isinstance(info.value, ArgumentTypeError):
        assert isinstance(info.value, TypeError)


def test_update_state_checks_types_as_enqueue_does(client: Client, redis_url: str) -> None:
    """update_state stored ``{"amount": "x"}`` on an ``amount: int`` state, which enqueue refuses; now the
    same check refuses it (path ``values``), and a JSON-form value is stored as its type, as enqueue does."""
    run_id = client.enqueue("typed", {"amount": 1}, thread_id="t1")
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    head = client.get_state("t1")
    with pytest.raises(InputTypeError) as info:
        client.update_state("typed", "t1", {"amount": "x"})
    assert str(info.value) == "values.amount: Input should be a valid integer (got 'x')"
    with pytest.raises(InputTypeError) as info:
        client.update_state("typed", "t1", {"tags": [1]}, as_node="describe")
    assert str(info.value) == "values.tags[0]: Input should be a valid string (got 1)"
    with pytest.raises(InputTypeError) as info:
        client.update_state("typed", "t1", {"amount": 1.5}, as_node="__start__")  # as an input
    assert str(info.value) == "values.amount: Input should be a valid integer (got 1.5)"
    assert client.get_state("t1").id == head.id  # nothing written
    cp = client.update_state("typed", "t1", {"amount": 2, "when": "2026-01-02T03:04:05Z"})
    assert cp.channel_values["amount"] == 2
    assert cp.channel_values["when"] == datetime.fromisoformat("2026-01-02T03:04:05+00:00")
    assert client.get_state("t1").id == cp.id
