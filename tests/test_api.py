"""The HTTP API (``/api``) in process (FastAPI's TestClient, its lifespan started, on the test Redis; runs
worked by an in-process burst worker), and once end to end against a real ``graphq ui`` subprocess."""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.embedded import EmbeddedRedis, free_port
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import PermanentError
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.api.body import body_limit
from graphq.console.api.follow import BLOCK_S
from graphq.console.api.models import ShownRun
from graphq.console.openapi import document, text
from graphq.console.security import Guard
from graphq.worker.queue import RQStepQueue
from tests.browser import start_console
from tests.workers import Procs, graphq, wait_for, work

REGISTRY = Registry.load(["tests.workflows.basic", "tests.workflows.hitl", "graphq.examples.approval"])
OPENAPI = Path(__file__).resolve().parent.parent / "docs" / "reference" / "openapi.json"
HTTP_API = OPENAPI.with_name("http-api.md")
PROBLEM = "application/problem+json"


@pytest.fixture
def web(client: Client) -> Iterator[TestClient]:
    """The app on the test Redis, started (its async connection open), on a loopback host."""
    with TestClient(
        create_app(Console(client, Settings(), Guard())), base_url="http://127.0.0.1:8000"
    ) as app:
        yield app


def refused(reply: httpx.Response, status: int) -> str:
    """The problem's detail, after checking it is a problem+json of ``status``."""
    assert (reply.status_code, reply.headers["content-type"]) == (status, PROBLEM), reply.text
    body = reply.json()
    assert body["status"] == status
    detail: str = body["detail"]
    return detail


def cli_text(fn: Any, *args: Any, **kwargs: Any) -> str:
    """The message of the error ``fn(*args)`` raises: the CLI's text for it."""
    with pytest.raises(PermanentError) as raised:
        fn(*args, **kwargs)
    return str(raised.value)


def sse(lines: Iterator[str]) -> list[dict[str, str]]:
    """The messages of an SSE stream (``id``, ``event``, ``data``; comments dropped)."""
    messages: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in lines:
        if not line:
            if current:
                messages.append(current)
            current = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            current[name] = value
    if current:
        messages.append(current)
    return messages


def events(web: TestClient, run_id: str, **headers: str) -> list[dict[str, str]]:
    with web.stream("GET", f"/api/runs/{run_id}/events", headers=headers) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        return sse(reply.iter_lines())


def blocked_readers(kv: redis.Redis) -> int:
    """Connections of the test Redis blocked in a command (an XREAD BLOCK of a long-poll)."""
    return sum(1 for c in kv.client_list() if "b" in c.get("flags", "") and c.get("cmd") == "xread")


# --- POST /api/runs -------------------------------------------------------------------------------


def test_enqueue_one_run_then_a_worker_completes_it(web: TestClient, client: Client) -> None:
    reply = web.post("/api/runs", json={"workflow": "counter", "input": {"n": 1}, "tenant": "acme"})
    assert reply.status_code == 201
    [run_id] = reply.json()["run_ids"]
    record = client.get_run(run_id)
    assert (record.workflow, record.tenant, record.input, record.status) == (
        "counter",
        "acme",
        {"n": 1},
        RunStatus.QUEUED,
    )
    work(client)
    assert web.get(f"/api/runs/{run_id}").json()["result"] == {"n": 3, "log": ["bump2", "bump3"]}


def test_a_run_names_its_webhook(web: TestClient, client: Client) -> None:
    given = {"workflow": "counter", "webhook": "http://127.0.0.1:9/hook", "config": {"webhook": "http://x/"}}
    [run_id] = web.post("/api/runs", json=given).json()["run_ids"]
    assert client.get_run(run_id).config["webhook"] == "http://127.0.0.1:9/hook"
    bad = refused(web.post("/api/runs", json={"workflow": "counter", "webhook": "ftp://x/"}), 422)
    assert bad == "webhook: " + cli_text(client.enqueue, "counter", {}, config={"webhook": "ftp://x/"})


def test_a_batch_is_enqueued_all_or_nothing(web: TestClient, client: Client) -> None:
    good = {"workflow": "counter", "input": {"n": 1}, "thread_id": "t-batch"}
    bad = {"workflow": "counter", "input": {"n": "x"}}
    detail = refused(web.post("/api/runs", json={"runs": [good, good, bad]}), 422)
    assert detail == "runs.2.input: input.n: Input should be a valid integer (got 'x')"
    assert client.list_runs(10) == []
    reply = web.post("/api/runs", json={"runs": [good, good], "multitask": "enqueue"})
    assert reply.status_code == 201
    ids = reply.json()["run_ids"]
    assert [r.id for r in client.thread_runs("t-batch")] == ids
    busy = refused(web.post("/api/runs", json={"runs": [good], "multitask": "reject"}), 409)
    assert busy == cli_text(client.enqueue, "counter", {"n": 1}, thread_id="t-batch", multitask="reject")


def test_enqueue_refusals_are_problems_with_the_client_text(web: TestClient, client: Client) -> None:
    unknown = refused(web.post("/api/runs", json={"workflow": "nope"}), 404)
    assert unknown == cli_text(client.enqueue, "nope", {})
    bad_config = refused(web.post("/api/runs", json={"workflow": "counter", "config": {"bogus": 1}}), 422)
    assert bad_config == "config: " + cli_text(client.enqueue, "counter", {}, config={"bogus": 1})
    client.enqueue("counter", {"n": 1}, run_id="r-taken")
    taken = refused(web.post("/api/runs", json={"workflow": "counter", "run_id": "r-taken"}), 409)
    assert taken == cli_text(client.enqueue, "counter", {}, run_id="r-taken")
    extra = refused(web.post("/api/runs", json={"workflow": "counter", "bogus": 1}), 422)
    assert extra == "body.run.bogus: Extra inputs are not permitted"
    malformed = web.post("/api/runs", content=b'{"workflow": ', headers={"Content-Type": "application/json"})
    assert refused(malformed, 422) == "body.13: JSON decode error: Expecting value"
    empty = refused(web.post("/api/runs", json={"runs": []}), 422)
    assert empty == "body.batch.runs: List should have at least 1 item after validation, not 0"
    assert len(client.list_runs(10)) == 1


def test_an_idempotency_key_answers_a_repeat_with_the_same_runs(web: TestClient, client: Client) -> None:
    body = {"runs": [{"workflow": "counter", "input": {"n": 1}}, {"workflow": "counter", "input": {"n": 2}}]}
    first = web.post("/api/runs", json=body, headers={"Idempotency-Key": "k-1"})
    again = web.post("/api/runs", json=body, headers={"Idempotency-Key": "k-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    assert sorted(r.id for r in client.list_runs(10)) == sorted(first.json()["run_ids"])
    other = web.post("/api/runs", json={"workflow": "counter"}, headers={"Idempotency-Key": "k-1"})
    assert refused(other, 422) == (
        "Idempotency-Key 'k-1' was used with another body in the last 24 h; use a new key for another request"
    )
    ttl = client.kv.ttl(keys.api_idempotency("k-1"))
    assert 0 < ttl <= 24 * 3600
    assert len(client.list_runs(10)) == 2


def test_concurrent_repeats_of_a_key_make_one_run(web: TestClient, client: Client) -> None:
    body = {"workflow": "counter", "input": {"n": 1}}
    replies: list[httpx.Response] = []

    def post() -> None:
        replies.append(web.post("/api/runs", json=body, headers={"Idempotency-Key": "k-race"}))

    posters = [threading.Thread(target=post) for _ in range(8)]
    for poster in posters:
        poster.start()
    for poster in posters:
        poster.join(120)
    assert sorted(r.status_code for r in replies) == [200] * 7 + [201]
    assert len({tuple(r.json()["run_ids"]) for r in replies}) == 1
    assert [r.id for r in client.list_runs(10)] == replies[0].json()["run_ids"]


def test_a_malformed_idempotency_key_is_refused(web: TestClient, client: Client) -> None:
    long = web.post("/api/runs", json={"workflow": "counter"}, headers={"Idempotency-Key": "k" * 256})
    assert refused(long, 422) == "Idempotency-Key: must be 1 to 255 characters, not only spaces"
    assert client.list_runs(10) == []


def test_a_repeat_after_a_refused_first_try_enqueues_once(web: TestClient, client: Client) -> None:
    """The first try stored its ids but enqueued nothing (the thread was busy): the repeat creates them."""
    client.enqueue("counter", {"n": 1}, thread_id="t-busy")
    body = {"workflow": "counter", "thread_id": "t-busy", "multitask": "reject"}
    refused(web.post("/api/runs", json=body, headers={"Idempotency-Key": "k-2"}), 409)
    client.cancel(client.thread_runs("t-busy")[0].id)
    first = web.post("/api/runs", json=body, headers={"Idempotency-Key": "k-2"})
    again = web.post("/api/runs", json=body, headers={"Idempotency-Key": "k-2"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    assert len(client.thread_runs("t-busy")) == 2


def test_a_refused_request_gives_its_idempotency_key_back(web: TestClient, client: Client) -> None:
    """A body refused (unknown workflow, invalid input) holds no key: the corrected body with the same key
    enqueues once; a key a request enqueued with stays its own."""
    key = {"Idempotency-Key": "k-fix"}
    refused(web.post("/api/runs", json={"workflow": "countr"}, headers=key), 404)
    refused(web.post("/api/runs", json={"workflow": "counter", "input": {"n": "x"}}, headers=key), 422)
    assert client.kv.get(keys.api_idempotency("k-fix")) is None
    fixed = {"workflow": "counter", "input": {"n": 1}}
    first = web.post("/api/runs", json=fixed, headers=key)
    again = web.post("/api/runs", json=fixed, headers=key)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    other = web.post("/api/runs", json={"workflow": "nope"}, headers=key)
    assert refused(other, 422).startswith("Idempotency-Key 'k-fix' was used with another body")
    assert json.loads(client.kv.get(keys.api_idempotency("k-fix")))["run_ids"] == first.json()["run_ids"]
    assert [r.id for r in client.list_runs(10)] == first.json()["run_ids"]


def test_a_post_without_a_bearer_that_is_not_json_is_told_the_content_type(web: TestClient) -> None:
    for headers in ({"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}):
        reply = web.post("/api/runs", content=b'{"workflow": "counter"}', headers=headers)
        assert (
            refused(reply, 403) == "an API POST without a bearer token must be Content-Type: application/json"
        )


def test_with_a_token_a_body_that_is_not_json_is_a_415(client: Client) -> None:
    app = create_app(Console(client, Settings(), Guard(token="s3cret")))
    bearer = {"Authorization": "Bearer s3cret"}
    with TestClient(app, base_url="http://graphq.internal") as web:
        for path in ("/api/runs", "/api/runs/x/cancel", "/api/requests/x/answer"):
            for kind in ("text/plain", None):
                headers = bearer if kind is None else {**bearer, "Content-Type": kind}
                reply = web.post(path, content=b'{"workflow": "counter"}', headers=headers)
                assert refused(reply, 415) == "Content-Type must be application/json"
        assert web.post("/api/runs/x/cancel", headers=bearer).status_code == 404  # no body: no type needed
    assert client.list_runs(10) == []


def test_nan_and_infinity_are_refused(web: TestClient, client: Client) -> None:
    json_type = {"Content-Type": "application/json"}
    for sent, said in (
        (b'{"workflow": "counter", "input": {"n": NaN}}', "NaN is not a JSON number"),
        (b'{"workflow": "counter", "input": {"n": -Infinity}}', "-Infinity is not a JSON number"),
        (b'{"workflow": "counter", "input": {"n": 1e999}}', "number 1e999 is out of range for a float"),
    ):
        assert refused(web.post("/api/runs", content=sent, headers=json_type), 422).startswith(
            "body: " + said
        )
    answer = web.post("/api/requests/x/answer", content=b'{"value": NaN}', headers=json_type)
    assert refused(answer, 422).startswith("body: NaN is not a JSON number")
    assert client.list_runs(10) == []


def test_a_body_over_the_limit_is_refused_with_or_without_a_content_length(client: Client) -> None:
    settings = Settings(max_input_bytes=1000)
    one = 2 * 1000 + 64 * 1024
    assert (body_limit(settings, batch=False), body_limit(settings, batch=True)) == (one, 64 * 1024 * 1024)
    too_big = json.dumps({"value": "x" * one}).encode()
    app = create_app(Console(client, settings, Guard()))
    with TestClient(app, base_url="http://127.0.0.1") as web:
        sized = web.post(
            "/api/requests/x/answer", content=too_big, headers={"Content-Type": "application/json"}
        )
        assert refused(sized, 413) == (
            f"the request body is larger than {one} bytes (the limit follows GRAPHQ_MAX_INPUT_BYTES)"
        )
        streamed = web.post(
            "/api/requests/x/answer",
            content=iter([too_big[:1000], too_big[1000:]]),  # chunked: no Content-Length
            headers={"Content-Type": "application/json"},
        )
        assert "content-length" not in streamed.request.headers
        assert refused(streamed, 413).startswith(f"the request body is larger than {one} bytes")
        big_run = {"workflow": "counter", "input": {"n": 1}, "thread_id": "t" * 100}
        batch = {"runs": [big_run] * 500}
        assert len(json.dumps(batch)) > one  # over one run's limit, under a batch's
        enqueued = web.post("/api/runs", json=batch)
        assert enqueued.status_code == 201, enqueued.text
        assert len(enqueued.json()["run_ids"]) == 500


# --- GET /api/runs, GET /api/runs/{id}?wait= ------------------------------------------------------


def test_list_runs_filters_as_runs_list_does(web: TestClient, client: Client) -> None:
    a = client.enqueue("counter", {"n": 1}, tenant="acme", run_id="r-a")
    client.enqueue("counter", {"n": 1}, tenant="globex", run_id="r-b")
    listed = web.get("/api/runs", params={"tenant": "acme", "status": "queued"}).json()
    assert [r["id"] for r in listed] == [a]
    assert "result" not in listed[0]
    assert [r["id"] for r in web.get("/api/runs", params={"limit": 1}).json()] == ["r-b"]
    assert refused(web.get("/api/runs", params={"status": "nope"}), 422).startswith(
        "query.status: Input should be"
    )
    assert refused(web.get("/api/runs", params={"limit": 0}), 422) == (
        "query.limit: Input should be greater than or equal to 1"
    )
    assert refused(web.get("/api/runs", params={"colour": "red"}), 422) == (
        "query.colour: Extra inputs are not permitted"
    )
    assert refused(web.get("/api/runs", params={"tenant": "a b"}), 422).startswith("tenant: ")


def test_a_run_is_what_runs_show_prints_with_its_requests(
    web: TestClient, client: Client, graphq_env: dict[str, str]
) -> None:
    run_id = client.enqueue("asking", {"topic": "a"})
    work(client)
    env = {**graphq_env, "GRAPHQ_WORKFLOWS": "tests.workflows.hitl"}
    shown = json.loads(graphq("runs", "show", run_id, "-o", "json", env=env).stdout)
    assert {
        "thread_step",
        "waiting_for_slot_until",
        "waiting_for_version",
        "requests",
        "all_requests",
    } <= set(shown)
    assert web.get(f"/api/runs/{run_id}").json() == shown
    waited = web.get(f"/api/runs/{run_id}", params={"wait": 60})
    assert (waited.headers["Graphq-Wait"], waited.json()) == ("paused", shown)
    assert [r["value"] for r in shown["requests"]] == [{"question": "first about a?"}]
    assert list(ShownRun.model_fields) == list(shown)  # the OpenAPI document describes what is sent
    assert ShownRun.model_validate(shown).all_requests[0].id == shown["requests"][0]["id"]


def test_a_long_poll_returns_when_a_worker_ends_the_run(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    replies: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: replies.append(web.get(f"/api/runs/{run_id}?wait=120")))
    waiter.start()
    wait_for(lambda: blocked_readers(client.kv) == 1, 60, "the long-poll to block on the run's events")
    assert replies == []
    work(client)
    waiter.join(150)
    [reply] = replies
    assert (reply.status_code, reply.headers["graphq-wait"], reply.json()["status"]) == (
        200,
        "ended",
        "completed",
    )


def test_a_long_poll_times_out_with_the_record_as_it_is(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    reply = web.get(f"/api/runs/{run_id}", params={"wait": 0.2})
    assert (reply.status_code, reply.headers["graphq-wait"], reply.json()["status"]) == (
        200,
        "timeout",
        "queued",
    )


def test_more_long_polls_than_a_default_connection_pool_are_held(web: TestClient, client: Client) -> None:
    """redis-py's pools open 100 connections by default: the 101st poll was refused (503)."""
    run_id = client.enqueue("counter", {"n": 1})
    replies: list[httpx.Response] = []
    polls = [
        threading.Thread(target=lambda: replies.append(web.get(f"/api/runs/{run_id}?wait=300")))
        for _ in range(105)
    ]
    for poll in polls:
        poll.start()
    wait_for(lambda: blocked_readers(client.kv) == 105 or replies, 120, "105 long-polls to block")
    early = list(replies)
    work(client)  # ends the polls, also when the check below fails
    for poll in polls:
        poll.join(300)
    assert early == []
    assert [(r.status_code, r.headers.get("graphq-wait")) for r in replies] == [(200, "ended")] * 105


def test_a_long_poll_outlasts_a_blocking_read(web: TestClient, client: Client) -> None:
    """A wait longer than one XREAD BLOCK (5 s): redis-py's default read timeout (5 s) cut it, a 503."""
    run_id = client.enqueue("counter", {"n": 1})
    reply = web.get(f"/api/runs/{run_id}", params={"wait": BLOCK_S + 2})
    assert (reply.status_code, reply.headers.get("graphq-wait")) == (200, "timeout"), reply.text


def test_a_long_poll_of_a_paused_run_returns_at_once(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("asking", {"topic": "x"})
    work(client)
    reply = web.get(f"/api/runs/{run_id}", params={"wait": 300})
    assert (reply.headers["graphq-wait"], reply.json()["status"]) == ("paused", "awaiting_input")


def test_get_run_refusals(web: TestClient, client: Client) -> None:
    assert refused(web.get("/api/runs/nope"), 404) == cli_text(client.get_run, "nope")
    run_id = client.enqueue("counter", {"n": 1})
    for wait, why in (("0", "greater than 0"), ("301", "less than or equal to 300"), ("x", "valid number")):
        assert why in refused(web.get(f"/api/runs/{run_id}", params={"wait": wait}), 422)


# --- events (SSE) ---------------------------------------------------------------------------------


def test_events_are_the_lines_of_runs_watch_and_end_with_the_status(
    web: TestClient, client: Client, graphq_env: dict[str, str]
) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    work(client)
    messages = events(web, run_id)
    assert messages[-1] == {"event": "end", "data": '{"status": "completed", "continued_by_run_id": null}'}
    env = {**graphq_env, "GRAPHQ_WORKFLOWS": "tests.workflows.basic"}
    watched = graphq("runs", "watch", run_id, "-o", "json", env=env)
    assert watched.returncode == 0, watched.stderr
    lines = [json.loads(line) for line in watched.stdout.splitlines()]
    assert [(m["id"].partition(".")[0], m["event"], json.loads(m["data"])) for m in messages[:-1]] == [
        (line["id"], line["mode"], {"mode": line["mode"], "step": line["step"], "data": line["data"]})
        for line in lines
    ]


def test_every_message_has_its_own_id_and_a_resume_after_any_sends_exactly_the_rest(
    web: TestClient, client: Client
) -> None:
    run_id = client.enqueue("counter", {"n": 1, "limit": 4})
    work(client)
    every = events(web, run_id)[:-1]
    ids = [m["id"] for m in every]
    assert len(set(ids)) == len(ids)
    numbers: dict[str, list[str]] = {}
    for message_id in ids:
        entry, _, n = message_id.partition(".")
        numbers.setdefault(entry, []).append(n)
    assert all(n == [str(i) for i in range(len(n))] for n in numbers.values())
    assert any(len(n) > 1 for n in numbers.values())  # tasks+updates, checkpoints+values
    for i, message_id in enumerate(ids):  # a connection dropped after each message
        rest = events(web, run_id, **{"Last-Event-ID": message_id})
        assert rest[:-1] == every[i + 1 :], message_id  # none twice, none missed
        assert rest[-1]["event"] == "end"
    several = next(entry for entry, n in numbers.items() if len(n) > 1)
    first = ids.index(f"{several}.0")
    with web.stream("GET", f"/api/runs/{run_id}/events", params={"after": f"{several}.0"}) as reply:
        assert sse(reply.iter_lines())[:-1] == every[first + 1 :]
    with web.stream("GET", f"/api/runs/{run_id}/events", params={"after": several}) as reply:
        later = [m for m in every if m["id"].partition(".")[0] != several][first:]
        assert sse(reply.iter_lines())[:-1] == later  # a stream id: after all of its lines (runs watch)


def test_a_malformed_event_id_is_refused(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    assert refused(web.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "x"}), 422) == (
        "Last-Event-ID: 'x' is not an event id (MILLISECONDS-SEQUENCE: 1712345678901-0)"
    )
    assert refused(web.get(f"/api/runs/{run_id}/events", params={"after": "1-0.x"}), 422) == (
        "after: '1-0.x' is not an event id: after '.' comes the line's number (1712345678901-0.1)"
    )
    huge = refused(web.get(f"/api/runs/{run_id}/events", params={"after": f"{2**64}-0"}), 422)
    assert huge == f"after: '{2**64}-0' is not an event id: MILLISECONDS and SEQUENCE are at most {2**64 - 1}"
    assert refused(web.get("/api/runs/nope/events"), 404) == cli_text(client.get_run, "nope")


def test_events_after_the_last_one_of_an_ended_run_end_at_once(
    web: TestClient, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is left to wait for: the stream ends without the blocking read (made an hour long here)."""
    run_id = client.enqueue("counter", {"n": 1})
    work(client)
    last = events(web, run_id)[-2]["id"]
    monkeypatch.setattr("graphq.console.api.follow.BLOCK_S", 3600.0)
    got: list[list[dict[str, str]]] = []
    reader = threading.Thread(target=lambda: got.append(events(web, run_id, **{"Last-Event-ID": last})))
    reader.daemon = True
    reader.start()
    wait_for(lambda: got, timeout_s=60, what="the stream's end")
    assert [(m["event"], json.loads(m["data"])["status"]) for m in got[0]] == [("end", "completed")]


def test_an_idle_event_stream_gets_pings_then_follows_the_run_live(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    seen: list[str] = []
    with web.stream("GET", f"/api/runs/{run_id}/events") as reply:
        lines = reply.iter_lines()
        for line in lines:  # nothing happens to the queued run: a ping keeps the connection open
            seen.append(line)
            if line.startswith(":"):
                break
        client.cancel(run_id)
        rest = sse(lines)
    assert seen == [": ping"]
    assert [m["event"] for m in rest] == ["status", "end"]
    assert json.loads(rest[-1]["data"])["status"] == "canceled"


def test_an_event_stream_whose_redis_goes_away_ends_with_an_error_problem() -> None:
    server = EmbeddedRedis(appendonly=False).start()
    try:
        kv = redis.Redis(port=server.port, socket_connect_timeout=1)
        client = Client(kv, REGISTRY, RQStepQueue(kv, Settings(redis_url=server.url)))
        run_id = client.enqueue("counter", {"n": 1})  # queued, no worker: the stream waits in XREAD
        settings = Settings(redis_retry_attempts=2, redis_retry_max_wait_s=0.1)
        app = create_app(Console(client, settings, Guard()))
        with (
            TestClient(app, base_url="http://127.0.0.1") as web,
            web.stream("GET", f"/api/runs/{run_id}/events") as reply,
        ):
            assert reply.status_code == 200
            wait_for(lambda: blocked_readers(kv) == 1, timeout_s=60, what="the stream's XREAD")
            server.stop()
            messages = sse(reply.iter_lines())
    finally:
        server.stop()
    assert [m["event"] for m in messages] == ["error"]
    error = json.loads(messages[0]["data"])
    assert {k: error[k] for k in ("type", "title", "status")} == {
        "type": "about:blank",
        "title": "Service Unavailable",
        "status": 503,
    }
    assert error["detail"].startswith("lost the connection to Redis: "), error  # then redis-py's words


def test_events_of_a_paused_run_end_with_awaiting_input(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("asking", {"topic": "x"})
    work(client)
    messages = events(web, run_id)
    assert [m["event"] for m in messages[-2:]] == ["status", "end"]
    assert json.loads(messages[-1]["data"]) == {"status": "awaiting_input", "continued_by_run_id": None}
    assert "interrupt" in [m["event"] for m in messages]


# --- cancel, resume -------------------------------------------------------------------------------


def test_cancel_then_resume(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    canceled = web.post(f"/api/runs/{run_id}/cancel", json={"interrupt": False})
    assert canceled.json() == {"message": "canceled", "changed": True}
    again = web.post(f"/api/runs/{run_id}/cancel", json=None, headers={"Content-Type": "application/json"})
    assert again.json() == {"message": client.cancel(run_id), "changed": False}
    resumed = web.post(f"/api/runs/{run_id}/resume", json={})
    assert resumed.status_code == 200
    new_id = resumed.json()["run_id"]
    assert resumed.json()["continued_from_run_id"] == run_id
    work(client)
    assert client.get_run(new_id).status == RunStatus.COMPLETED
    refusal = refused(web.post(f"/api/runs/{new_id}/resume", json={}), 422)
    assert refusal == cli_text(client.resume, new_id)
    assert refused(web.post("/api/runs/nope/cancel", json={}), 404) == cli_text(client.cancel, "nope")
    for loose in ("x", "yes", "true", 1):  # strict booleans: only true and false
        assert refused(web.post(f"/api/runs/{run_id}/cancel", json={"interrupt": loose}), 422) == (
            "body.interrupt: Input should be a valid boolean"
        )
    assert refused(web.post("/api/runs", json={"workflow": "counter", "tenant": 7}), 422) == (
        "body.run.tenant: Input should be a valid string"
    )


# --- requests ------------------------------------------------------------------------------------


def test_open_requests_oldest_first_then_answered(web: TestClient, client: Client) -> None:
    first = client.enqueue("asking", {"topic": "a"})
    work(client)
    second = client.enqueue("asking", {"topic": "b"})
    work(client)
    listed = web.get("/api/requests").json()
    assert [(r["run_id"], r["value"]) for r in listed] == [
        (first, {"question": "first about a?"}),
        (second, {"question": "first about b?"}),
    ]
    assert listed[0] | {"created_at": None} == {
        "id": client.requests(first)[0].id,
        "value": {"question": "first about a?"},
        "node": "ask_twice",
        "task_id": client.requests(first)[0].task_id,
        "index": 0,
        "created_at": None,
        "deadline_ms": None,
        "deadline": None,
        "response_schema": None,
        "run_id": first,
        "thread_id": first,
        "workflow": "asking",
        "tenant": "default",
    }
    assert [r["run_id"] for r in web.get("/api/requests", params={"limit": 1}).json()] == [first]
    request_id = listed[0]["id"]
    answered = web.post(f"/api/requests/{request_id}/answer", json={"value": "yes"})
    assert answered.json() == {"request_id": request_id, "run_id": first, "branch_run_id": None}
    assert [r["run_id"] for r in web.get("/api/requests").json()] == [second]
    gone = refused(web.post(f"/api/requests/{request_id}/answer", json={"value": "no"}), 404)
    assert gone.startswith(f"no open request with id {request_id!r}")
    not_waiting = refused(
        web.post(f"/api/requests/{request_id}/answer", json={"value": "no", "run_id": first}), 409
    )
    assert not_waiting == (
        f"run {first} is queued, not awaiting input; nothing to answer; answer one of its requests again, "
        f'on a new branch, with "again": true: [{request_id!r}]'
    )
    again = web.post(
        f"/api/requests/{request_id}/answer", json={"value": "no", "run_id": first, "again": True}
    )
    branch = again.json()["branch_run_id"]
    assert again.json() == {"request_id": request_id, "run_id": first, "branch_run_id": branch}
    work(client)
    assert [(r["run_id"], r["value"]) for r in web.get("/api/requests").json()] == [
        (second, {"question": "first about b?"}),
        (first, {"question": "second?"}),  # answered: it goes on to its second request
    ]
    assert (client.get_run(branch).thread_id, client.get_run(branch).status) == (first, RunStatus.QUEUED)


def test_answer_refusals(web: TestClient, client: Client) -> None:
    run_id = client.enqueue("asking", {"topic": "a"})
    work(client)
    request_id = client.requests(run_id)[0].id
    url = f"/api/requests/{request_id}/answer"
    assert refused(web.post(url, json={"value": "x", "again": True}), 422) == (
        "again: needs run_id (the run that made the request)"
    )
    assert refused(web.post(url, json={"value": "x", "run_id": run_id, "update": {"nope": 1}}), 422) == (
        cli_text(client.answer, run_id, "x", request_id, update={"nope": 1})
    )
    assert refused(web.post(url, json={"run_id": run_id}), 422) == "body.value: Field required"
    deep: Any = "x"
    for _ in range(201):
        deep = [deep]
    assert refused(web.post(url, json={"value": deep}), 422).startswith("value: ")
    assert client.requests(run_id)[0].id == request_id  # nothing answered


# --- threads -------------------------------------------------------------------------------------


def test_thread_state_and_history_as_graphq_state_prints_them(
    web: TestClient, client: Client, graphq_env: dict[str, str]
) -> None:
    client.enqueue("counter", {"n": 1}, thread_id="t-s")
    work(client)
    env = {**graphq_env, "GRAPHQ_WORKFLOWS": "tests.workflows.basic"}
    shown = graphq("state", "t-s", "-o", "json", env=env)
    assert web.get("/api/threads/t-s/state").json() == json.loads(shown.stdout)
    history = graphq("state", "t-s", "--history", "--limit", "2", "-o", "json", env=env)
    assert web.get("/api/threads/t-s/history", params={"limit": 2}).json() == json.loads(history.stdout)
    older = json.loads(history.stdout)[1]["checkpoint_id"]
    at = web.get("/api/threads/t-s/state", params={"checkpoint_id": older}).json()
    assert (at["checkpoint_id"], at["values"]) == (older, {"n": 2, "log": ["bump2"]})
    assert refused(web.get("/api/threads/none/state"), 404) == cli_text(client.get_state, "none")
    assert refused(web.get("/api/threads/none/history"), 404) == "thread 'none' has no checkpoints"
    assert refused(web.get("/api/threads/t-s/state", params={"checkpoint_id": "x"}), 404) == cli_text(
        client.get_state, "t-s", "x"
    )
    assert refused(web.get("/api/threads/t-s/history", params={"limit": 0}), 422) == (
        "query.limit: Input should be greater than or equal to 1"
    )


# --- auth ----------------------------------------------------------------------------------------


def test_the_api_wants_the_bearer_token_and_read_only_refuses_actions(client: Client) -> None:
    app = create_app(Console(client, Settings(), Guard(token="s3cret")))
    with TestClient(app, base_url="http://graphq.internal") as web:
        for method, path in (("GET", "/api/runs"), ("POST", "/api/runs"), ("GET", "/api/requests")):
            assert web.request(method, path).status_code == 401
            wrong = web.request(method, path, headers={"Authorization": "Bearer nope"})
            assert refused(wrong, 401) == "that is not the console's token"
        ok = web.post("/api/runs", json={"workflow": "counter"}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 201
    read_only = create_app(Console(client, Settings(), Guard(read_only=True)))
    with TestClient(read_only, base_url="http://127.0.0.1") as web:
        for path in ("/api/runs", "/api/runs/x/cancel", "/api/runs/x/resume", "/api/requests/x/answer"):
            assert (
                refused(web.post(path, json={}), 403) == "the console is read-only (started with --read-only)"
            )
        assert web.get("/api/runs").status_code == 200
        assert web.head("/api/runs").status_code == 405  # as docs/reference/http-api.md says
    assert len(client.list_runs(10)) == 1


# --- OpenAPI -------------------------------------------------------------------------------------


def test_redis_unreachable_is_a_503(web: TestClient) -> None:
    gone = Client(redis.Redis(port=free_port(), socket_connect_timeout=1), REGISTRY)
    with TestClient(create_app(Console(gone, Settings(), Guard())), base_url="http://127.0.0.1") as app:
        detail = refused(app.get("/api/runs/r-1"), 503)
        assert detail.startswith("lost the connection to Redis: ")  # then redis-py's words


def test_the_served_openapi_document_is_the_one_checked_in(web: TestClient) -> None:
    assert web.get("/api/docs").status_code == 404  # no Swagger UI: it needs a CDN and an inline script
    served = web.get("/api/openapi.json").json()
    assert served == document()
    assert text(served) == OPENAPI.read_text(), (
        "docs/reference/openapi.json is stale: .venv/bin/python -m graphq.console.openapi > "
        "docs/reference/openapi.json"
    )


def test_the_documented_examples_run_as_documented(web: TestClient, client: Client) -> None:
    """The bodies of docs/reference/http-api.md's curl examples, sent in its order, do what it says."""
    examples = HTTP_API.read_text().split("## Examples")[1]
    enqueue_body, answer_body = (json.loads(b) for b in re.findall(r"-d '([^']*)'", examples))
    key = re.search(r"-H 'Idempotency-Key: ([^']*)'", examples)
    assert key is not None
    [run_id] = web.post("/api/runs", json=enqueue_body, headers={"Idempotency-Key": key[1]}).json()["run_ids"]
    work(client)
    assert web.get(f"/api/runs/{run_id}", params={"wait": 60}).headers["Graphq-Wait"] == "paused"
    [request] = web.get("/api/requests").json()
    assert request["value"] == {"question": "Approve 120 for ana?", "amount": 120}
    web.post(f"/api/requests/{request['id']}/answer", json=answer_body).raise_for_status()
    work(client)
    assert json.loads(events(web, run_id)[-1]["data"])["status"] == "completed"
    history = web.get(f"/api/threads/{run_id}/history", params={"limit": 5}).json()
    assert len(history) == 5


def test_the_openapi_document_says_what_the_server_sends(web: TestClient) -> None:
    """Errors are problem+json of the Problem schema (as refused() checks the server's), never FastAPI's
    validation error; the bearer token is a security scheme; the long-poll's header is described."""
    doc = web.get("/api/openapi.json").json()
    assert "ValidationError" not in json.dumps(doc)
    assert set(doc["components"]["schemas"]["Problem"]["required"]) == {"type", "title", "status", "detail"}
    operations = [op for path in doc["paths"].values() for op in path.values()]
    assert len(operations) == 10
    for op in operations:
        errors = {code: r for code, r in op["responses"].items() if code >= "400"}
        assert sorted(errors) == ["401", "403", "404", "409", "413", "415", "422", "503"]
        for answer in errors.values():
            assert answer["content"] == {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    bearer = doc["components"]["securitySchemes"]["bearer"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    assert "GRAPHQ_UI_TOKEN" in bearer["description"]
    assert doc["security"] == [{"bearer": []}, {}]
    wait = doc["paths"]["/api/runs/{run_id}"]["get"]["responses"]["200"]["headers"]["Graphq-Wait"]
    assert wait["schema"] == {"type": "string", "enum": ["ended", "paused", "timeout"]}
    problem = refused(web.post("/api/runs", json={"workflow": "counter", "bogus": 1}), 422)
    assert problem == "body.run.bogus: Extra inputs are not permitted"


# --- end to end ----------------------------------------------------------------------------------


def test_end_to_end_against_graphq_ui_and_a_worker(procs: Procs, graphq_env: dict[str, str]) -> None:
    env = {**graphq_env, "GRAPHQ_WORKFLOWS": "tests.workflows.hitl"}
    console = start_console(procs, env, GRAPHQ_UI_TOKEN="t0ken")
    procs.start("worker", env=env)
    auth = {"Authorization": "Bearer t0ken"}
    with httpx.Client(base_url=console.url, headers=auth, timeout=180) as api:
        enqueued = api.post("/api/runs", json={"workflow": "asking", "input": {"topic": "e2e"}})
        assert enqueued.status_code == 201
        [run_id] = enqueued.json()["run_ids"]
        paused = api.get(f"/api/runs/{run_id}", params={"wait": 120})
        assert "graphq-wait" in paused.headers, paused.text
        assert (paused.headers["graphq-wait"], paused.json()["status"]) == ("paused", "awaiting_input")
        [asked] = api.get("/api/requests").json()
        api.post(f"/api/requests/{asked['id']}/answer", json={"value": "one"}).raise_for_status()
        # the stream follows the answered run live, past its first pause, to its second
        with api.stream("GET", f"/api/runs/{run_id}/events") as stream:
            seen = sse(stream.iter_lines())
        assert json.loads(seen[-1]["data"]) == {"status": "awaiting_input", "continued_by_run_id": None}
        asks = [json.loads(m["data"])["data"]["requests"] for m in seen if m["event"] == "interrupt"]
        assert [[i["value"] for i in ask] for ask in asks] == [
            [{"question": "first about e2e?"}],
            [{"question": "second?"}],
        ]
        [asked] = api.get("/api/requests").json()
        assert asked["value"] == {"question": "second?"}
        api.post(f"/api/requests/{asked['id']}/answer", json={"value": "two"}).raise_for_status()
        done = api.get(f"/api/runs/{run_id}", params={"wait": 120})
        assert (done.headers["graphq-wait"], done.json()["status"]) == ("ended", "completed")
        assert done.json()["result"] == {"topic": "e2e", "answers": ["one", "two"], "done": True}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_graphq_ui_stops_at_once_ending_its_long_polls_and_event_streams_cleanly(
    procs: Procs, graphq_env: dict[str, str], client: Client, signum: signal.Signals
) -> None:
    """From the trial: stopped with a stream and two long-polls open, the server waited for its graceful
    shutdown timeout (5 s), then answered the long-polls 500 and cut the stream mid-chunk, with tracebacks."""
    env = {**graphq_env, "GRAPHQ_WORKFLOWS": "tests.workflows.basic"}
    console = start_console(procs, env)
    run_id = client.enqueue("counter", {"n": 1})  # queued, no worker: every wait waits

    def poll() -> httpx.Response:
        return httpx.get(f"{console.url}/api/runs/{run_id}", params={"wait": 120}, timeout=180)

    def stream() -> list[dict[str, str]]:
        with httpx.stream("GET", f"{console.url}/api/runs/{run_id}/events", timeout=180) as reply:
            assert reply.status_code == 200
            return sse(reply.iter_lines())  # a stream cut mid-chunk raises here

    with ThreadPoolExecutor(3) as pool:
        polls = [pool.submit(poll), pool.submit(poll)]
        streamed = pool.submit(stream)
        wait_for(lambda: blocked_readers(client.kv) == 3, timeout_s=60, what="the three waits' XREADs")
        console.proc.send_signal(signum)
        assert console.proc.wait(timeout=20) == 0, procs.logged(console.proc)
        replies = [p.result(timeout=20) for p in polls]
        assert streamed.result(timeout=20) == []  # no message (the run has no event), no `end`
    for reply in replies:
        assert (reply.status_code, reply.headers.get("graphq-wait")) == (200, "timeout"), reply.text
        assert reply.json()["status"] == "queued"
    assert "Traceback" not in procs.logged(console.proc)
    assert "timeout graceful shutdown exceeded" not in procs.logged(console.proc)
