"""Webhooks (graphcore.backend.webhooks, the ``webhooks`` housekeeping loop): a run that ends or waits for
input gets its summary POSTed, signed, at least once, from an outbox written with its status change; on a
real Redis and a real HTTP receiver in this process (``graphq`` subprocesses where a deliverer is killed)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client import generate_latest

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, now_iso
from graphcore.backend.webhooks import Outbox
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.settings import Settings
from graphq.worker import metrics
from graphq.worker.housekeeping.reaper import Reaper
from graphq.worker.housekeeping.webhooks import Webhooks
from graphq.worker.step.lease import Lease
from tests.cli_helpers import error_line, invoke, ok
from tests.test_metrics import delta, samples
from tests.workers import ROOT, Procs, wait_for, work, worker_env

WORKFLOWS = ",".join(f"tests.workflows.{m}" for m in ("reducer_inputs", "hitl", "run_errors", "breakpoints"))
REGISTRY = Registry.load(WORKFLOWS.split(","))
SECRET = "s3cret-key"
GUIDE = ROOT / "docs" / "guides" / "webhooks.md"
OUTCOMES = ("delivered", "retried", "dead")


def documented_verify() -> Any:
    """The ``verify`` function of the webhooks guide, as printed there (its first Python block)."""
    code = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert code is not None
    space: dict[str, Any] = {}
    exec(code.group(1), space)  # the guide's recipe, run as written
    return space["verify"]


class Receiver:
    """An HTTP server on 127.0.0.1 recording every POST (headers, body) and answering each with the next
    of ``answers`` (the last one over and over); an answer ``"hang"`` keeps the request open until
    :attr:`release` is set."""

    def __init__(self, port: int = 0, answers: tuple[int | str, ...] = (200,)) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.answers = list(answers)
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((dict(self.headers.items()), body))
                answer = receiver.answers.pop(0) if len(receiver.answers) > 1 else receiver.answers[0]
                if answer == "hang":
                    receiver.release.wait(60)
                    return
                self.send_response(int(answer))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.got]


@pytest.fixture(autouse=True)
def _no_background_deliveries(monkeypatch: pytest.MonkeyPatch) -> None:
    """``work`` runs the housekeeping loops in this process while it works: their webhooks loop must not
    deliver behind the test's back (each test delivers with its own deliverer)."""
    monkeypatch.setenv("GRAPHQ_WEBHOOK_INTERVAL_S", "3600")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    up = Receiver()
    yield up
    up.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def deliverer(redis_client: redis.Redis, **settings: Any) -> Webhooks:
    return Webhooks(redis_client, Settings(webhook_secret=SECRET, **settings))


def outbox(redis_client: redis.Redis) -> tuple[list[str], list[str]]:
    """The ids of the deliveries due and dead."""
    due = [m.decode() for m in redis_client.zrange(keys.webhooks_due(), 0, -1)]
    dead = [m.decode() for m in redis_client.zrange(keys.webhooks_dead(), 0, -1)]
    return due, dead


def test_a_completed_run_gets_one_signed_delivery(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": receiver.url})
    run = client.get_run(run_id)
    assert run.webhook == receiver.url
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    assert outbox(redis_client) == ([f"{run_id}:completed:1"], [])
    assert deliverer(redis_client).deliver_due() == 1
    assert deliverer(redis_client).deliver_due() == 0  # delivered once: nothing left
    [(sent, body)] = receiver.got
    assert documented_verify()(SECRET, sent, body)
    assert not documented_verify()("another key", sent, body)
    assert sent["X-Graphq-Delivery"] == f"{run_id}:completed:1"
    assert sent["Content-Type"] == "application/json"
    ended = client.get_run(run_id)
    assert json.loads(body) == {
        "id": f"{run_id}:completed:1",
        "run_id": run_id,
        "thread_id": run.thread_id,
        "workflow": "echo",
        "tenant": "default",
        "status": "completed",
        "created_at": run.created_at,
        "steps": ended.step,
        "ended_at": ended.ended_at,
        "error": None,
    }
    assert outbox(redis_client) == ([], []) and not redis_client.exists(keys.webhooks())


def test_a_failed_run_s_delivery_carries_its_error(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("err-node", {}, config={"webhook": receiver.url})
    work(client)
    failed = client.get_run(run_id)
    assert failed.status == RunStatus.FAILED and failed.error is not None
    deliverer(redis_client).deliver_due()
    [summary] = receiver.bodies()
    assert (summary["id"], summary["status"]) == (f"{run_id}:failed:1", "failed")
    assert summary["error"] == {
        "type": failed.error.type,
        "message": failed.error.message,
        "node": failed.error.node,
        "step": failed.error.step,
    }


def test_a_paused_run_s_delivery_lists_its_open_requests_and_its_end_comes_next(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"}, config={"webhook": receiver.url})
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    [asked] = client.requests(run_id)
    deliverer(redis_client).deliver_due()
    [paused] = receiver.bodies()
    assert (paused["id"], paused["status"], paused["breakpoint"]) == (
        f"{run_id}:awaiting_input:1",
        "awaiting_input",
        None,
    )
    assert [(r["id"], r["node"], r["value"]) for r in paused["requests"]] == [
        (asked.id, "ask_twice", {"question": "first about tea?"})
    ]
    assert "ended_at" not in paused
    client.answer(run_id, "yes")
    work(client)
    client.answer(run_id, "again")
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    deliverer(redis_client).deliver_due()
    assert [b["id"] for b in receiver.bodies()] == [
        f"{run_id}:awaiting_input:1",
        f"{run_id}:awaiting_input:2",
        f"{run_id}:completed:3",
    ]


def test_a_run_without_a_webhook_writes_nothing_to_the_outbox(
    client: Client, redis_client: redis.Redis
) -> None:
    done = client.enqueue("echo", {"messages": ["hi"]})
    paused = client.enqueue("asking", {"topic": "tea"})
    work(client)
    assert client.get_run(done).status == RunStatus.COMPLETED
    assert client.get_run(paused).status == RunStatus.AWAITING_INPUT
    assert not redis_client.exists(keys.webhooks(), keys.webhooks_due(), keys.webhooks_dead())
    assert redis_client.hget(keys.run(client.get_run(done).thread_id, done), "webhooks") is None


def test_a_canceled_queued_run_gets_a_delivery(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": receiver.url})
    client.cancel(run_id)
    assert client.get_run(run_id).status == RunStatus.CANCELED
    assert outbox(redis_client) == ([f"{run_id}:canceled:1"], [])


def test_a_receiver_down_then_up_gets_the_same_delivery(client: Client, redis_client: redis.Redis) -> None:
    port = free_port()  # nothing listens there yet
    url = f"http://127.0.0.1:{port}/hook"
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": url})
    work(client)
    hooks = deliverer(redis_client, webhook_backoff_s=0.05, webhook_backoff_max_s=0.1)
    assert hooks.deliver_due() == 1
    [(waiting, _)] = Outbox(redis_client).listed()
    assert (waiting.id, waiting.attempts) == (f"{run_id}:completed:1", 1)
    assert waiting.last_error.startswith("ConnectError")
    up = Receiver(port, answers=(500, 200))  # up, failing once, then well
    try:
        wait_for(lambda: hooks.deliver_due() and len(up.got) == 2, what="the delivery after the 500")
        assert [s["X-Graphq-Delivery"] for s, _ in up.got] == [f"{run_id}:completed:1"] * 2
        assert all(documented_verify()(SECRET, s, b) for s, b in up.got)
        assert outbox(redis_client) == ([], [])
    finally:
        up.close()


def test_a_delivery_failing_too_often_is_a_dead_letter_until_retried(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    failing = Receiver(answers=(503,))
    registry = metrics.enable()
    before = samples(generate_latest(registry).decode())
    try:
        run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": failing.url})
        work(client)
        hooks = deliverer(redis_client, webhook_backoff_s=0.01, webhook_max_attempts=2)
        wait_for(lambda: hooks.deliver_due() == 0 and outbox(redis_client)[1], what="a dead letter")
        delivery = f"{run_id}:completed:1"
        assert outbox(redis_client) == ([], [delivery])
        assert len(failing.got) == 2
        [(dead, _)] = Outbox(redis_client).listed(dead=True)
        assert (dead.attempts, dead.last_error) == (2, "HTTP 503")
        listed = ok(invoke(WORKFLOWS, redis_url, "webhooks", "list", "--dead", "-o", "json"))
        assert [(d["id"], d["attempts"], d["last_error"]) for d in json.loads(listed.stdout)] == [
            (delivery, 2, "HTTP 503")
        ]
        table = ok(invoke(WORKFLOWS, redis_url, "webhooks", "list", "--dead")).stdout
        cells = [[c.strip() for c in re.split("[┃│]", line)] for line in table.splitlines()]
        assert cells[0][:4] == ["delivery", "run", "status", "tries"]
        assert cells[2][:4] == [delivery, run_id, "completed", "2"]
        failing.answers = [200]
        assert ok(invoke(WORKFLOWS, redis_url, "webhooks", "retry", delivery)).stdout == (
            f"webhook {delivery} is due again\n"
        )
        assert outbox(redis_client) == ([delivery], [])
        assert hooks.deliver_due() == 1
        assert len(failing.got) == 3 and outbox(redis_client) == ([], [])
        refused = ok(invoke(WORKFLOWS, redis_url, "webhooks", "retry", delivery), 2)
        assert error_line(refused) == f"error: webhooks retry: no dead letter {delivery!r}"
        after = samples(generate_latest(registry).decode())
    finally:
        metrics.disable()
        failing.close()
    counted = {o: delta(before, after, "graphq_webhook_deliveries_total", outcome=o) for o in OUTCOMES}
    assert counted == {"retried": 1, "dead": 1, "delivered": 1}


def test_a_deliverer_killed_mid_post_leaves_the_delivery_to_another(
    client: Client, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """A ``graphq reaper`` SIGKILLed while its POST waits for an answer: the delivery stays in the outbox and
    the next reaper delivers it (at least once: the receiver saw it twice, with one id)."""
    receiver = Receiver(answers=("hang", 200))
    env = worker_env(
        redis_url, WORKFLOWS, GRAPHQ_WEBHOOK_INTERVAL_S="0.1", GRAPHQ_WEBHOOK_TIMEOUT_S="2",
        GRAPHQ_WEBHOOK_SECRET=SECRET,
    )  # fmt: skip
    try:
        run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": receiver.url})
        work(client)
        with Procs(tmp_path, env) as procs:
            first = procs.start("reaper")
            wait_for(lambda: receiver.got, 60, "the first POST")
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
            assert outbox(redis_client) == ([f"{run_id}:completed:1"], [])
            procs.start("reaper")
            wait_for(lambda: outbox(redis_client) == ([], []), 60, "the delivery by the second reaper")
        assert [s["X-Graphq-Delivery"] for s, _ in receiver.got] == [f"{run_id}:completed:1"] * 2
        assert all(documented_verify()(SECRET, s, b) for s, b in receiver.got)
    finally:
        receiver.close()


def test_a_bad_webhook_is_refused_naming_it(client: Client, redis_url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": "ftp://example.com/x"})
    assert (info.value.param, str(info.value)) == (
        "webhook",
        "webhook 'ftp://example.com/x': must be an http:// or https:// URL",
    )
    refused = ok(invoke(WORKFLOWS, redis_url, "enqueue", "echo", "--webhook", "http://"), 2)
    assert error_line(refused) == "error: --webhook: webhook 'http://': names no host"
    batch = tmp_path / "runs.jsonl"
    batch.write_text('{"input": {"messages": ["a"]}}\n{"input": {"messages": ["b"]}, "webhook": "x y"}\n')
    refused = ok(invoke(WORKFLOWS, redis_url, "enqueue", "echo", "--input-file", str(batch)), 2)
    assert error_line(refused) == (
        f"error: {batch}:2: webhook 'x y': a URL holds no spaces or control characters"
    )
    assert client.list_runs() == []


def test_the_cli_s_webhook_and_a_batch_line_s(client: Client, redis_url: str, tmp_path: Path) -> None:
    batch = tmp_path / "runs.jsonl"
    batch.write_text(
        '{"input": {"messages": ["a"]}}\n{"input": {"messages": ["b"]}, "webhook": "http://b/"}\n'
    )
    given = ["enqueue", "echo", "--input-file", str(batch), "--webhook", "https://a/"]
    first, second = ok(invoke(WORKFLOWS, redis_url, *given)).stdout.split()
    assert (client.get_run(first).webhook, client.get_run(second).webhook) == ("https://a/", "http://b/")


def test_a_resume_and_a_continuation_keep_the_webhook_and_the_interrupted_run_sends_none(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    """A resume keeps its run's webhook. A run whose worker died is closed and continued by the reaper: the
    closed record adds no delivery (its chain goes on), the continuation keeps the webhook and delivers when
    it ends."""
    failed = client.enqueue("err-node", {}, config={"webhook": receiver.url})
    work(client)
    resumed = client.resume(failed)
    assert client.get_run(resumed).webhook == receiver.url
    client.cancel(resumed)
    redis_client.delete(keys.webhooks(), keys.webhooks_due())  # the failure's and the cancel's
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": receiver.url})
    thread = client.get_run(run_id).thread_id
    lease = Lease(redis_client, thread, run_id, 0.05, 0.025)
    assert lease.claim(0, now_iso(), CANCEL_ERROR.model_dump_json(), "w-1")[0] == 3
    wait_for(lambda: not redis_client.exists(keys.lease(thread, run_id)), what="the lease to lapse")
    wait_for(lambda: Reaper(redis_client, Settings()).sweep(), what="the reaper to act")
    interrupted = client.get_run(run_id)
    assert interrupted.status == RunStatus.FAILED and interrupted.continued_by_run_id is not None
    assert outbox(redis_client) == ([], [])
    continuation = interrupted.continued_by_run_id
    assert client.get_run(continuation).webhook == receiver.url
    work(client)
    assert client.get_run(continuation).status == RunStatus.COMPLETED
    assert outbox(redis_client) == ([f"{continuation}:completed:1"], [])


def test_a_stop_at_a_breakpoint_gets_a_delivery_naming_it(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("stops_before", {"items": ["x"]}, config={"webhook": receiver.url})
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    deliverer(redis_client).deliver_due()
    [stopped] = receiver.bodies()
    assert (stopped["id"], stopped["requests"], stopped["breakpoint"]) == (
        f"{run_id}:awaiting_input:1",
        [],
        {"when": "before", "nodes": ["b"]},
    )


def test_a_second_answer_s_branch_keeps_the_webhook(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("asking", {"topic": "tea"}, config={"webhook": receiver.url})
    work(client)
    [asked] = client.requests(run_id)
    client.answer(run_id, "yes")
    work(client)
    branch = client.answer_again(run_id, asked.id, "no")
    assert client.get_run(branch).webhook == receiver.url


def test_a_delivery_older_than_its_max_age_is_given_up_at_its_next_failure(
    client: Client, redis_client: redis.Redis
) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": url})
    work(client)
    [(waiting, _)] = Outbox(redis_client).listed()
    wait_for(lambda: server_ms(redis_client) > waiting.created_ms + 1, what="the delivery to age")
    deliverer(redis_client, webhook_max_age_s=0.001).deliver_due()
    assert outbox(redis_client) == ([], [f"{run_id}:completed:1"])
    [(dead, _)] = Outbox(redis_client).listed(dead=True)
    assert dead.attempts == 1


def test_without_a_secret_a_delivery_is_sent_unsigned(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": receiver.url})
    work(client)
    Webhooks(redis_client, Settings()).deliver_due()
    [(sent, _)] = receiver.got
    assert sent["X-Graphq-Delivery"] == f"{run_id}:completed:1"
    assert "X-Graphq-Signature" not in sent and sent["X-Graphq-Timestamp"].isdigit()


def test_a_deliverer_whose_hold_ran_out_cannot_set_the_tries_back(
    client: Client, redis_client: redis.Redis, receiver: Receiver
) -> None:
    """Deliverer A claims, its hold runs out, B claims and records its failed try; A's failure, coming
    after, writes nothing: it would have set the tries back to its own count and the due time to its own."""
    run_id = client.enqueue("echo", {"messages": ["hi"]}, config={"webhook": receiver.url})
    client.cancel(run_id)
    box = Outbox(redis_client)
    held_by_a = box.claim(hold_s=0)  # due again at once, as if A's hold had run out
    held_by_b = box.claim(hold_s=60)
    assert held_by_a is not None and held_by_b is not None and held_by_a.id == held_by_b.id
    assert box.retry(replace(held_by_b, attempts=1, last_error="HTTP 500"), due_ms=1) is True
    assert box.retry(replace(held_by_a, attempts=1, last_error="late"), due_ms=2) is False
    assert box.give_up(replace(held_by_a, attempts=1, last_error="late")) is False
    [(waiting, due)] = box.listed()
    assert (waiting.attempts, waiting.last_error, due) == (1, "HTTP 500", 1)
