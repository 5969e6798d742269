"""The console's run, thread and requests pages in process (FastAPI's TestClient on the test Redis, runs
worked by an in-process burst worker): each page with real data, values escaped, each action's outcome and
each refusal with the client's (the CLI's) words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from markupsafe import escape

from graphcore.backend.client import Client
from graphcore.backend.event_lines import EventLines
from graphcore.backend.events import read_events
from graphcore.backend.json_forms import deadline_iso
from graphcore.engine.registry import Registry
from graphcore.errors import ArgumentTypeError, CheckpointNotFoundError
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.security import CSRF_COOKIE, Guard
from graphq.console.timeline import timeline
from tests.workers import work

REGISTRY = Registry.load(
    ["tests.workflows.console_pages", "tests.workflows.basic", "tests.workflows.breakpoints"]
)


def serve(client: Client, guard: Guard | None = None) -> TestClient:
    console = Console(client, Settings(), guard or Guard())
    web = TestClient(create_app(console), base_url="http://127.0.0.1:8000")
    web.get("/static/console.css")  # the CSRF cookie
    return web


def post(web: TestClient, path: str, **form: str) -> Response:
    """A page's htmx POST: the form, with the CSRF header."""
    return web.post(path, data=form, headers={"X-CSRF-Token": web.cookies[CSRF_COOKIE], "HX-Request": "true"})


def outcome(reply: Response) -> str:
    """The one line of an action's outcome fragment."""
    text = reply.text.split(">", 1)[1].rsplit("</p>", 1)[0]
    return text.split(" <a ", 1)[0]


def paused(client: Client, amount: int = 5, run_id: str | None = None) -> str:
    run_id = client.enqueue("approval", {"amount": amount}, run_id=run_id)
    work(client)
    assert client.get_run(run_id).status.value == "awaiting_input"
    return run_id


def test_the_run_page_shows_a_paused_run_and_its_answer_completes_it(client: Client) -> None:
    run_id = paused(client)
    [asked] = client.requests(run_id)
    web = serve(client)
    page = web.get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert f"<tr><th>run</th><td>{run_id}</td></tr>" in page.text
    assert "<tr><th>status</th><td>awaiting_input</td></tr>" in page.text
    assert f'<tr data-request="{asked.id}">' in page.text
    assert "expects Decision (required: ok)" in page.text
    assert f'data-source="/api/runs/{run_id}/events"' in page.text
    answered = post(web, f"/runs/{run_id}/answer", request=asked.id, value='{"ok": true, "note": "fine"}')
    assert (answered.status_code, outcome(answered)) == (
        200,
        f"answered {asked.id}; run {run_id} continues on a worker",
    )
    work(client)
    done = web.get(f"/runs/{run_id}")
    assert "<tr><th>status</th><td>completed</td></tr>" in done.text
    assert "&#34;outcome&#34;: &#34;ok=True note=fine (done)&#34;" in done.text  # the result, as JSON text
    assert client.get_run(run_id).result == {"amount": 5, "outcome": "ok=True note=fine (done)"}


def test_an_answer_is_refused_with_the_cli_words(client: Client) -> None:
    run_id = paused(client)
    [asked] = client.requests(run_id)
    web = serve(client)
    bad_json = post(web, f"/runs/{run_id}/answer", request=asked.id, value="{ok")
    assert (bad_json.status_code, outcome(bad_json)) == (
        422,
        "value: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    )
    nan = post(web, f"/runs/{run_id}/answer", request=asked.id, value="NaN")
    assert (nan.status_code, outcome(nan)) == (
        422,
        "value: NaN is not a JSON number (JSON has no NaN or Infinity)",
    )
    unknown = post(web, f"/runs/{run_id}/answer", request="0123456789abcdef", value="1")
    assert unknown.status_code == 422
    assert outcome(unknown) == (
        f"no pending request &#39;0123456789abcdef&#39;; pending: [&#39;{asked.id}&#39;] "
        "(an answered request is answered again on a new branch: answer_again / --again)"
    )
    assert client.get_run(run_id).status.value == "awaiting_input"  # nothing changed
    post(web, f"/runs/{run_id}/answer", request=asked.id, value='{"ok": false}')
    twice = post(web, f"/runs/{run_id}/answer", request=asked.id, value='{"ok": true}')
    assert twice.status_code == 409
    assert outcome(twice).startswith(f"run {run_id} is queued, not awaiting input; nothing to answer")


def test_a_second_answer_starts_a_branch_the_thread_page_draws(client: Client) -> None:
    run_id = paused(client)
    [asked] = client.requests(run_id)
    client.answer(run_id, {"ok": True})
    work(client)
    web = serve(client)
    again = post(
        web, f"/runs/{run_id}/answer", request=asked.id, value='{"ok": false, "note": "no"}', again="true"
    )
    assert again.status_code == 200
    branch = outcome(again).split()[1]
    assert outcome(again) == f"run {branch} branches off run {run_id} with a new answer"
    assert f'href="/runs/{branch}"' in again.text
    work(client)
    thread = client.get_run(run_id).thread_id
    assert client.get_run(branch).result == {"amount": 5, "outcome": "ok=False note=no (done)"}
    page = web.get(f"/threads/{thread}")
    assert page.status_code == 200
    history = client.get_history(thread)
    forked = [cp for cp in history if sum(1 for c in history if c.parent_id == cp.id) == 2]
    assert [cp.step for cp in forked] == [0]
    assert "2 branches from step 0:" in page.text
    assert page.text.count("data-checkpoint=") == len(history)
    assert f'<a class="run" href="/runs/{branch}">' in page.text


def test_the_thread_page_shows_a_state_the_difference_of_two_and_forks(client: Client) -> None:
    run_id = paused(client, amount=5)
    client.answer(run_id, {"ok": True})
    work(client)
    thread = client.get_run(run_id).thread_id
    history = client.get_history(thread)  # newest first: finish, ask, start, input
    web = serve(client)
    state = web.get(f"/threads/{thread}?checkpoint={history[1].id}")
    assert "&#34;outcome&#34;: &#34;ok=True note=&#34;" in state.text
    assert "next: finish" in state.text
    compared = web.get(f"/threads/{thread}?a={history[2].id}&b={history[0].id}")
    assert '<tr data-key="outcome" class="change-added"><td>outcome</td><td>added</td>' in compared.text
    assert 'data-key="amount"' not in compared.text  # the same in both
    refused = post(
        web, f"/threads/{thread}/fork", checkpoint=history[1].id, values='{"nope": 1}', as_node="ask"
    )
    assert refused.status_code == 422
    with pytest.raises(Exception) as error:
        client.update_state("approval", thread, {"nope": 1}, "ask", checkpoint_id=history[1].id)
    assert outcome(refused) == str(error.value).replace("'", "&#39;")
    forked = post(
        web, f"/threads/{thread}/fork", checkpoint=history[2].id, values='{"amount": 7}', as_node="__start__"
    )
    assert forked.status_code == 200, forked.text
    new_id = outcome(forked).split()[1]
    assert outcome(forked) == f"checkpoint {new_id} forks checkpoint {history[2].id} on thread {thread}"
    new = client.get_state(thread, new_id)
    assert (new.parent_id, new.metadata["source"], client.get_state(thread).id) == (
        history[2].id,
        "update",
        new_id,
    )
    assert client.shown_values(thread, new)["amount"] == 7
    page = web.get(f"/threads/{thread}")
    assert "2 branches from step 0:" in page.text


def test_update_state_at_a_checkpoint_writes_its_child(client: Client) -> None:
    run_id = paused(client)
    client.answer(run_id, {"ok": True})
    work(client)
    thread = client.get_run(run_id).thread_id
    old = client.get_history(thread)[2]
    cp = client.update_state("approval", thread, {"amount": 9}, "__start__", checkpoint_id=old.id)
    assert (cp.parent_id, cp.step, client.get_state(thread).id) == (old.id, old.step + 1, cp.id)
    with pytest.raises(CheckpointNotFoundError) as missing:
        client.update_state("approval", thread, {"amount": 9}, checkpoint_id="nope")
    assert str(missing.value) == f"thread {thread!r} has no checkpoint nope"
    with pytest.raises(ArgumentTypeError, match="checkpoint_id"):
        client.update_state("approval", thread, {"amount": 9}, checkpoint_id=5)  # type: ignore[arg-type]


def test_cancel_and_resume_show_the_cli_words(client: Client) -> None:
    run_id = client.enqueue("gated", {"gates": 2}, run_id="r-gated")
    web = serve(client)
    refused = post(web, f"/runs/{run_id}/resume")
    assert (refused.status_code, outcome(refused)) == (
        422,
        f"run {run_id} is queued; only an ended run, or one stopped at a breakpoint, can be resumed",
    )
    canceled = post(web, f"/runs/{run_id}/cancel")
    assert (canceled.status_code, outcome(canceled)) == (200, "canceled")
    again = post(web, f"/runs/{run_id}/cancel", interrupt="true")
    assert outcome(again) == f"run {run_id} is already canceled; nothing changed"
    resumed = post(web, f"/runs/{run_id}/resume")
    new_id = client.get_run(run_id).continued_by_run_id
    assert (resumed.status_code, outcome(resumed)) == (
        200,
        f"run {new_id} continues run {run_id} on thread {run_id}",
    )
    assert post(web, "/runs/nope/cancel").status_code == 404
    no_csrf = web.post(f"/runs/{new_id}/cancel", data={})
    assert no_csrf.status_code == 403
    assert client.get_run(new_id).status.value == "queued"


def test_the_step_timeline_comes_from_the_events(client: Client) -> None:
    run_id = client.enqueue("gated", {"gates": 2})
    work(client)
    record = client.get_run(run_id)
    steps = timeline(read_events(client.kv, record.thread_id, run_id))
    history = client.get_history(record.thread_id)  # newest first
    assert [(s.step, s.nodes, s.retries, s.outcome) for s in steps] == [
        (1, ["tick"], 0, "checkpoint"),
        (2, ["tick"], 0, "completed"),
    ]
    assert [s.checkpoint_id for s in steps] == [history[1].id, history[0].id]
    assert all(s.duration_ms is not None and s.duration_ms >= 0 for s in steps)
    page = serve(client).get(f"/runs/{run_id}")
    assert page.text.count("<tr data-step=") == 2
    assert f'href="/threads/{record.thread_id}?checkpoint={history[0].id}"' in page.text
    assert f"the worker that last held this run is <code>{record.worker}</code>" in page.text


def test_the_inbox_lists_open_requests_oldest_first_and_escapes_them(client: Client) -> None:
    first = paused(client, amount=1, run_id="r-first")
    second = client.enqueue("approval", {"amount": 2}, run_id="r-second", config={"request_timeout_s": 3600})
    evil = client.enqueue("approval", {"amount": 3}, run_id="r-evil")
    work(client)
    web = serve(client)
    page = web.get("/requests")
    assert page.status_code == 200
    order = [
        line.split('data-run="')[1].split('"')[0]
        for line in page.text.splitlines()
        if "<tr data-request=" in line
    ]
    created = {r: client.requests(r)[0].created_at for r in (first, second, evil)}
    assert order == sorted(created, key=lambda r: created[r])
    assert order[0] == first
    assert "expects Decision (required: ok)" in page.text
    [timed] = client.requests(second)
    deadline = (deadline_iso(timed.deadline_ms) or "")[:19].replace("T", " ")
    row = page.text.split(f'data-run="{second}">', 1)[1].split("</tr>", 1)[0]
    assert row.split("<td>")[2] == f"{deadline}</td>\n      "
    client.answer(first, {"ok": True})
    work(client)
    after = web.get("/requests")
    rows = [line for line in after.text.splitlines() if "<tr data-request=" in line]
    assert len(rows) == 3  # two open, one answered (to answer again)
    assert 'name="again" value="true"' in after.text


def test_run_values_are_text_never_html(client: Client) -> None:
    run_id = client.enqueue("gated", {"gates": 1, "label": "<script>alert(1)</script>"}, run_id="r-esc")
    page = serve(client).get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    missing = serve(client).get("/runs/%3Cb%3Enope")
    assert missing.status_code == 404
    assert "&lt;b&gt;nope" in missing.text
    assert "<b>nope" not in missing.text


def test_the_events_stream_as_server_sent_events_and_resume_after_the_last_id(client: Client) -> None:
    run_id = client.enqueue("gated", {"gates": 2})
    work(client)
    record = client.get_run(run_id)
    stored = list(read_events(client.kv, record.thread_id, run_id))
    with serve(client) as web:  # its lifespan opens the async connection the stream reads with
        whole = _messages(web.get(f"/api/runs/{run_id}/events"))
        rest = _messages(web.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": stored[3].id}))
        assert web.get("/api/runs/nope/events").status_code == 404
    lines = EventLines(client, record)
    shown = [line for event in stored for line in lines.lines(event)]  # as `graphq runs watch -o json`
    numbered = [(f"{e.id}.{n}", x.mode) for e in stored for n, x in enumerate(lines.lines(e))]
    assert [(x.id, x.mode) for x in shown] == [(i.partition(".")[0], mode) for i, mode in numbered]
    assert [(m.get("id"), m["event"]) for m in whole] == [*numbered, (None, "end")]
    assert {"mode": "updates", "step": 1, "data": {"tick": {"ticks": [1]}}} in [m["data"] for m in whole]
    assert whole[-1]["data"] == {"status": "completed", "continued_by_run_id": None}
    after = [f"{e.id}.{n}" for e in stored[4:] for n, _ in enumerate(lines.lines(e))]
    assert [m.get("id") for m in rest] == [*after, None]  # a stream id: after all of its lines


def _messages(reply: Response) -> list[dict[str, Any]]:
    assert reply.headers["content-type"].startswith("text/event-stream")
    found = []
    for block in reply.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append({**fields, "data": json.loads(fields["data"])})
    return found


def test_a_step_that_asked_and_ran_again_is_two_rows_of_the_timeline(client: Client) -> None:
    run_id = paused(client)
    client.answer(run_id, {"ok": True})
    work(client)
    record = client.get_run(run_id)
    steps = timeline(read_events(client.kv, record.thread_id, run_id))
    assert [(s.step, s.nodes, s.outcome) for s in steps] == [
        (1, [], "awaiting_input"),
        (1, ["ask"], "checkpoint"),
        (2, ["finish"], "completed"),
    ]
    assert steps[1].began_ms >= steps[0].ended_ms  # the wait for the answer is in neither


def test_a_failed_run_shows_its_error_with_traceback(client: Client) -> None:
    run_id = client.enqueue("failing", {"n": 0})
    work(client)
    record = client.get_run(run_id)
    assert record.error is not None
    page = serve(client).get(f"/runs/{run_id}")
    assert '<p class="error" role="alert">NodeError: ' in page.text
    assert "kaboom at node explode" in page.text
    traceback = page.text.split('<pre class="traceback">', 1)[1].split("</pre>", 1)[0]
    assert traceback == str(escape(record.error.traceback))  # whole, as text
    assert "raise RuntimeError(&#34;kaboom at node explode&#34;)" in traceback
    assert page.text.count("<tr data-step=") == 2
    assert "<td>failed</td>" in page.text


def _actions(page: Response) -> list[str]:
    """The buttons of the page's action forms (those that POST), in page order."""
    return [
        form.split("<button", 1)[1].split(">", 1)[1].split("<", 1)[0]
        for form in page.text.split("<form")[1:]
        if form.split(">", 1)[0].count("hx-post=")
    ]


def test_the_run_page_answers_again_a_request_the_inbox_no_longer_lists(client: Client) -> None:
    run_id = paused(client, run_id="r-old")
    [asked] = client.requests(run_id)
    client.answer(run_id, {"ok": True})
    work(client)
    for n in range(50):  # newer runs: the inbox's window of answered requests leaves r-old out
        client.enqueue("gated", {"gates": 1}, run_id=f"r-new-{n}")
    web = serve(client)
    inbox = web.get("/requests")
    assert f'data-run="{run_id}"' not in inbox.text
    assert (
        "The answered requests of the newest 50 runs (by when each run was created), newest answer first; "
        "a request of an older run is answered again from its run's page." in inbox.text
    )
    page = web.get(f"/runs/{run_id}")
    row = page.text.split(f'<tr data-request="{asked.id}">', 1)[1].split("</tr>", 1)[0]
    [done] = client.run_requests(run_id)
    assert done.status == "answered"
    assert row.rsplit("<td>", 1)[1] == f"{(done.answered_at or '')[:19].replace('T', ' ')}</td>\n    "
    assert 'hx-post="/runs/r-old/answer" hx-target="#outcome"' in row
    assert 'name="again" value="true"' in row
    again = post(web, f"/runs/{run_id}/answer", request=asked.id, value='{"ok": false}', again="true")
    branch = outcome(again).split()[1]
    assert (again.status_code, outcome(again)) == (
        200,
        f"run {branch} branches off run {run_id} with a new answer",
    )
    assert f'<a href="/runs/{branch}">{branch}</a>' in again.text
    assert again.headers["HX-Trigger"] == "run-changed"


def test_the_inbox_lists_answers_newest_answer_first(client: Client) -> None:
    older = paused(client, amount=1, run_id="r-a")
    newer = paused(client, amount=2, run_id="r-b")
    client.answer(newer, {"ok": True})
    client.answer(older, {"ok": False})  # answered last: listed first
    page = serve(client).get("/requests")
    listed = page.text.split("<h2>Answered lately</h2>", 1)[1]
    assert [row.split('"', 1)[0] for row in listed.split('data-run="')[1:]] == [older, newer]


def test_read_only_shows_no_action_and_says_so(client: Client) -> None:
    run_id = paused(client, run_id="r-ro")
    thread = client.get_run(run_id).thread_id
    web = serve(client, Guard(read_only=True))
    for path in (f"/runs/{run_id}", "/requests", f"/threads/{thread}", "/runs"):
        page = web.get(path)
        assert page.status_code == 200
        assert (path, _actions(page)) == (path, [])
        assert (path, page.text.count('<span class="badge read-only"')) == (path, 1)
    assert "Fork from here" not in web.get(f"/threads/{thread}").text
    writable = serve(client)
    assert 'class="badge read-only"' not in writable.get("/runs").text
    assert _actions(writable.get(f"/runs/{run_id}")) == ["Cancel", "Cancel with interrupt", "Answer"]
    assert "Fork from here" in writable.get(f"/threads/{thread}").text


def test_the_run_page_offers_cancel_until_the_end_and_resume_when_it_is_accepted(client: Client) -> None:
    web = serve(client)
    queued = client.enqueue("gated", {"gates": 1}, run_id="r-q")
    assert client.resume_refusal(client.get_run(queued)) == "not ended"
    assert _actions(web.get(f"/runs/{queued}")) == ["Cancel", "Cancel with interrupt"]
    client.cancel(queued)
    assert client.resume_refusal(client.get_run(queued)) is None
    assert _actions(web.get(f"/runs/{queued}")) == ["Resume"]
    new_id = client.resume(queued)
    assert client.resume_refusal(client.get_run(queued)) == "continued already"
    assert _actions(web.get(f"/runs/{queued}")) == []
    work(client)
    assert client.get_run(new_id).status.value == "completed"
    assert client.resume_refusal(client.get_run(new_id)) == "nothing left to run"
    assert _actions(web.get(f"/runs/{new_id}")) == []
    stopped = client.enqueue("stops_before", {"items": []}, run_id="r-stop")
    work(client)
    assert client.get_run(stopped).status.value == "awaiting_input"
    assert client.resume_refusal(client.get_run(stopped)) is None
    assert _actions(web.get(f"/runs/{stopped}")) == ["Cancel", "Cancel with interrupt", "Resume"]


def test_the_record_part_reloads_when_the_run_changes(client: Client) -> None:
    run_id = paused(client, run_id="r-rec")
    web = serve(client)
    page = web.get(f"/runs/{run_id}")
    assert (
        f'<div id="run-record" hx-get="/runs/{run_id}/record" hx-trigger="run-changed from:body" '
        'hx-swap="innerHTML">' in page.text
    )
    assert page.text.index('<div id="outcome"') < page.text.index('<div id="run-record"')
    refused = post(web, f"/runs/{run_id}/resume")
    assert (refused.status_code, "HX-Trigger" in refused.headers) == (422, False)
    canceled = post(web, f"/runs/{run_id}/cancel")
    assert (canceled.status_code, outcome(canceled), canceled.headers["HX-Trigger"]) == (
        200,
        "canceled",
        "run-changed",
    )
    part = web.get(f"/runs/{run_id}/record")
    assert part.status_code == 200
    assert '<span class="status status-canceled" id="run-status">canceled</span>' in part.text
    assert "<tr><th>status</th><td>canceled</td></tr>" in part.text
    assert _actions(part) == ["Resume"]
    assert "<html" not in part.text
    assert web.get("/runs/nope/record").status_code == 404


def test_a_fork_refuses_a_state_update_that_is_not_an_object_and_says_which_node_it_wrote_as(
    client: Client,
) -> None:
    run_id = paused(client, run_id="r-fork")
    client.answer(run_id, {"ok": True})
    work(client)
    thread = client.get_run(run_id).thread_id
    head = client.get_state(thread)
    web = serve(client)
    for text, kind in (("[1, 2]", "a list"), ('"x"', "a string"), ("3", "a number"), ("null", "null")):
        listed = post(web, f"/threads/{thread}/fork", checkpoint=head.id, values=text, as_node="")
        assert (listed.status_code, outcome(listed)) == (
            422,
            f"state update: must be a JSON object (key: value), got {kind}",
        )
    assert client.update_writer("approval", thread, head.id) == "finish"
    with pytest.raises(Exception) as error:
        client.update_state("approval", thread, {"bogus": 1}, "finish", checkpoint_id=head.id)
    unknown = post(web, f"/threads/{thread}/fork", checkpoint=head.id, values='{"bogus": 1}', as_node="")
    assert (unknown.status_code, outcome(unknown)) == (
        422,
        f"as node &#39;finish&#39; (the node that wrote last): {error.value}".replace("'", "&#39;"),
    )
    assert client.get_state(thread).id == head.id  # nothing written
