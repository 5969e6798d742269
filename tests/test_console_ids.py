"""Thread ids with ``/``, ``#``, ``%`` and ``&`` (:func:`graphcore.keys.validate_id` allows them; it refuses
spaces and ``?``; a run id is also an RQ job id's part: letters, digits, ``_`` and ``-``): every console link
to a thread or run percent-encodes the id, and every page and API route opens it."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.security import CSRF_COOKIE, Guard
from tests.workers import work

REGISTRY = Registry.load(["tests.workflows.basic", "tests.workflows.console_pages"])

RUN = "r-1_a"
THREAD = "t/x#y%z"
RUN_PATH = "/runs/r-1_a"
THREAD_PATH = "/threads/t%2Fx%23y%25z"


def serve(client: Client) -> TestClient:
    return TestClient(create_app(Console(client, Settings(), Guard())), base_url="http://127.0.0.1:8000")


def hrefs(html: str) -> set[str]:
    return set(re.findall(r'(?:href|hx-post|hx-get|action|data-source)="([^"?]*)', html))


def test_quote_id_encodes_every_reserved_character() -> None:
    from graphq.console.rendering import quote_id  # new: the old code had none

    assert (quote_id("r/1#a%b&c"), quote_id(THREAD), quote_id(RUN)) == (
        "r%2F1%23a%25b%26c",
        "t%2Fx%23y%25z",
        RUN,
    )


def test_pages_link_to_and_open_a_run_and_thread_with_reserved_characters(client: Client) -> None:
    client.enqueue("counter", {"n": 2}, run_id=RUN, thread_id=THREAD)
    assert work(client)
    web = serve(client)
    listed = web.get("/runs")
    assert {RUN_PATH, THREAD_PATH} <= hrefs(listed.text)
    run_page = web.get(RUN_PATH)
    assert run_page.status_code == 200
    assert "<h1>" in run_page.text and RUN in run_page.text
    assert {THREAD_PATH, f"{RUN_PATH}/record", f"/api{RUN_PATH}/events"} <= hrefs(run_page.text)
    thread_page = web.get(THREAD_PATH)
    assert thread_page.status_code == 200
    assert {RUN_PATH, THREAD_PATH, f"{THREAD_PATH}/fork"} <= hrefs(thread_page.text)
    csrf = {"X-CSRF-Token": web.cookies[CSRF_COOKIE]}
    canceled = web.post(f"{RUN_PATH}/cancel", headers=csrf)
    assert canceled.status_code == 200
    assert RUN in canceled.text


def test_the_api_opens_a_run_and_thread_with_reserved_characters(client: Client) -> None:
    client.enqueue("counter", {"n": 2}, run_id=RUN, thread_id=THREAD)
    assert work(client)
    with serve(client) as web:  # the lifespan opens the async connection the event stream reads
        record = web.get(f"/api{RUN_PATH}")
        assert (record.status_code, record.json()["id"], record.json()["thread_id"]) == (200, RUN, THREAD)
        with web.stream("GET", f"/api{RUN_PATH}/events") as events:
            lines = [line for line in events.iter_lines() if line.startswith("event: ")]
        assert lines[-1] == "event: end"
        canceled = web.post(f"/api{RUN_PATH}/cancel", json={})
        assert (canceled.status_code, canceled.json()["changed"]) == (200, False)
        state = web.get(f"/api{THREAD_PATH}/state")
        assert (state.status_code, state.json()["values"]) == (200, {"n": 3, "log": ["bump3"]})
        history = web.get(f"/api{THREAD_PATH}/history")
        stored = [cp.id for cp in client.get_history(THREAD, 100)]
        assert (history.status_code, [cp["checkpoint_id"] for cp in history.json()]) == (200, stored)
        assert len(stored) >= 2


def test_the_inbox_links_a_waiting_run_of_such_a_thread_and_takes_its_answer(client: Client) -> None:
    client.enqueue("approval", {"amount": 40}, run_id=RUN, thread_id=THREAD)
    work(client)
    [asked] = client.requests(RUN)
    web = serve(client)
    inbox = web.get("/requests")
    assert inbox.status_code == 200
    assert {RUN_PATH, f"{RUN_PATH}/answer"} <= hrefs(inbox.text)
    csrf = {"X-CSRF-Token": web.cookies[CSRF_COOKIE]}
    answered = web.post(
        f"{RUN_PATH}/answer", data={"request": asked.id, "value": '{"ok": true}'}, headers=csrf
    )
    assert answered.status_code == 200
    assert f"answered {asked.id}; run {RUN} continues on a worker" in answered.text
    assert (client.requests(RUN), client.get_run(RUN).status.value) == ([], "queued")
