"""The runs page's bulk actions in process (FastAPI's TestClient on the test Redis): a count (dry run) that
changes nothing, a confirm that acts on exactly the filtered runs and the count it showed, the CLI's summary
line and refusals; resume of failed runs (an in-process burst worker fails them), thread delete by age;
CSRF and read-only."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.security import CSRF_COOKIE, Guard
from tests.test_bulk import enqueue, statuses, threads_left, threads_of_all_ages
from tests.workers import work

REGISTRY = Registry.load(["tests.workflows.admission", "tests.workflows.node_errors"])


def serve(client: Client, guard: Guard | None = None) -> TestClient:
    web = TestClient(
        create_app(Console(client, Settings(), guard or Guard())), base_url="http://127.0.0.1:8000"
    )
    web.get("/static/console.css")  # the CSRF cookie
    return web


def post(web: TestClient, **form: str) -> Response:
    """The bulk form's htmx POST, with the CSRF header."""
    headers = {"X-CSRF-Token": web.cookies[CSRF_COOKIE], "HX-Request": "true"}
    return web.post("/runs/bulk", data=form, headers=headers)


def said(reply: Response) -> str:
    """The outcome's line."""
    found = re.search(r'<p class="outcome[^"]*" role="\w+">(.*?)</p>', reply.text)
    assert found is not None, reply.text
    return html.unescape(found.group(1))


def listed(reply: Response) -> list[str]:
    """The ids listed under the line."""
    return [html.unescape(i) for i in re.findall(r'<li><a href="[^"]*">([^<]*)</a></li>', reply.text)]


def confirm(reply: Response) -> dict[str, str]:
    """The hidden fields of the outcome's Confirm form ({} when it asks nothing)."""
    pairs = re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', reply.text)
    return {name: html.unescape(value) for name, value in pairs}


def test_a_count_changes_nothing_and_confirm_cancels_exactly_the_filtered_runs(client: Client) -> None:
    ids = enqueue(client, "a", 12)
    enqueue(client, "b", 3)
    web = serve(client)
    counted = post(web, action="cancel", status="queued", tenant="a")
    assert (counted.status_code, said(counted)) == (
        200,
        "12 runs match (the first 10 below): 12 to cancel; cancel them?",
    )
    assert listed(counted) == ids[::-1][:10]  # the first ten, newest first
    asked = confirm(counted)
    assert asked == {
        "status": "queued",
        "tenant": "a",
        "action": "cancel",
        "older_than": "",
        "confirmed": "12",
    }
    assert "Confirm: cancel 12 runs</button>" in counted.text
    assert statuses(client, "a") == {"queued": 12}  # a count changes nothing

    done = post(web, **asked)
    assert (done.status_code, said(done), confirm(done)) == (200, "canceled 12 runs", {})
    assert statuses(client, "a") == {"canceled": 12}
    assert statuses(client, "b") == {"queued": 3}  # the other tenant untouched

    again = post(web, action="cancel", status="queued", tenant="a")
    assert (said(again), confirm(again)) == ("0 runs match: nothing to cancel", {})
    ended = post(web, action="cancel", tenant="a", confirmed="12")
    assert said(ended) == "canceled 0 runs; 12 skipped: already ended"


def test_confirm_asks_again_when_the_count_changed(client: Client) -> None:
    enqueue(client, "a", 3)
    web = serve(client)
    asked = confirm(post(web, action="interrupt", tenant="a"))
    assert asked["confirmed"] == "3"
    enqueue(client, "a", 2)
    changed = post(web, **asked)
    assert said(changed) == (
        "the count changed since you counted 3: 5 runs match now: 5 to cancel; cancel them and interrupt "
        "their running nodes?"
    )
    assert statuses(client, "a") == {"queued": 5}  # nothing done
    assert confirm(changed) == {**asked, "confirmed": "5"}
    assert said(post(web, **confirm(changed))) == "canceled 5 runs"
    assert statuses(client, "a") == {"canceled": 5}


def test_resume_of_failed_runs_resumes_them_once(client: Client) -> None:
    failed = enqueue_failing(client, "a", 3)
    enqueue_failing(client, "b", 2)
    assert work(client)
    web = serve(client)
    counted = post(web, action="resume", status="failed", tenant="a")
    assert (said(counted), listed(counted)) == ("3 runs match: 3 to resume; resume them?", failed[::-1])
    assert said(post(web, **confirm(counted))) == "resumed 3 runs"
    assert statuses(client, "a") == {"failed": 3, "queued": 3}
    for run_id in failed:
        assert (
            client.get_run(client.get_run(run_id).continued_by_run_id or "").continued_from_run_id == run_id
        )
    assert statuses(client, "b") == {"failed": 2}
    recount = post(web, action="resume", status="failed", tenant="a")
    assert said(recount) == "3 runs match: 0 to resume, 3 skipped: continued already; resume them?"
    again = post(web, action="resume", status="failed", tenant="a", confirmed="3")
    assert said(again) == "resumed 0 runs; 3 skipped: continued already"


def enqueue_failing(client: Client, tenant: str, n: int) -> list[str]:
    return [client.enqueue("keyerror", {}, tenant=tenant) for _ in range(n)]


def test_delete_threads_older_than_a_duration(client: Client) -> None:
    threads_of_all_ages(client)
    web = serve(client)
    counted = post(web, action="delete", older_than="30d", tenant="a")
    assert said(counted) == (
        "4 threads unused for 30d match: 3 to delete, 1 skipped: a run is active on it; delete them?"
    )
    assert sorted(listed(counted)) == ["busy", "old1", "old2", "old3"]
    assert '<li><a href="/threads/old1">old1</a></li>' in counted.text
    assert threads_left(client) == ["busy", "new", "old1", "old2", "old3", "oldb"]
    done = post(web, **confirm(counted))
    assert said(done) == "deleted 3 threads; 1 skipped: a run is active on it"
    assert threads_left(client) == ["busy", "new", "oldb"]
    # no run filter: every thread unused that long, as `graphq threads delete --older-than 30d`
    everywhere = post(web, action="delete", older_than="30d")
    assert (said(everywhere), sorted(listed(everywhere))) == (
        "2 threads unused for 30d match: 1 to delete, 1 skipped: a run is active on it; delete them?",
        ["busy", "oldb"],
    )


@pytest.mark.parametrize(
    ("form", "status", "line"),
    [
        (
            {"action": "cancel"},
            422,
            "give at least one of status, workflow, tenant, schedule, version to cancel every run they match",
        ),
        (
            {"action": "resume", "confirmed": "1"},
            422,
            "give at least one of status, workflow, tenant, schedule, version to resume every run they match",
        ),
        (
            {"action": "cancel", "q": "r-1", "tenant": "a"},
            422,
            "q: a bulk action acts on the filters, not on a search: clear the search first",
        ),
        (
            {"action": "purge", "tenant": "a"},
            422,
            "action: 'purge' is not a bulk action (one of cancel, interrupt, resume, delete)",
        ),
        (
            {"action": "delete", "tenant": "a"},
            422,
            "older than: give a duration (e.g. 30d) to delete every thread unused that long",
        ),
        (
            {"action": "delete", "older_than": "30x"},
            422,
            "older than '30x' is invalid: use a number and a unit s, m, h or d (e.g. 90s, 5m, 2h)",
        ),
        (
            {"action": "delete", "older_than": "0"},
            422,
            "older than '0' is invalid: use a duration above 0 (e.g. 90s, 5m, 2h): a thread used just now is "
            "not old",
        ),
        (
            {"action": "cancel", "status": "bogus"},
            422,
            "status: 'bogus' is not a run status (one of queued, running, awaiting_input, completed, failed, "
            "canceled)",
        ),
        (
            {"action": "cancel", "schedule": "nope"},
            404,
            "no schedule named 'nope' (graphq schedules list shows them)",
        ),
    ],
)
def test_bad_input_is_refused_with_one_line_and_nothing_changes(
    client: Client, form: dict[str, str], status: int, line: str
) -> None:
    enqueue(client, "a", 2)
    reply = post(serve(client), **form)
    assert (reply.status_code, said(reply), confirm(reply)) == (status, line, {})
    assert statuses(client, "a") == {"queued": 2}


def test_csrf_and_read_only(client: Client) -> None:
    enqueue(client, "a", 2)
    web = serve(client)
    assert 'hx-post="/runs/bulk"' in web.get("/runs").text
    forged = web.post("/runs/bulk", data={"action": "cancel", "tenant": "a", "confirmed": "2"})
    assert forged.status_code == 403
    assert "a console action needs its CSRF token" in forged.text
    read_only = serve(client, Guard(read_only=True))
    assert 'hx-post="/runs/bulk"' not in read_only.get("/runs").text  # the panel is not shown
    refused = post(read_only, action="cancel", tenant="a", confirmed="2")
    assert refused.status_code == 403
    assert "the console is read-only (started with --read-only)" in refused.text
    assert statuses(client, "a") == {"queued": 2}
