"""The console's operations pages in process (FastAPI's TestClient on the test Redis): the runs page's
counts, filters and search; workers (a real worker subprocess), tenants, schedules (pause, resume and
trigger, then what the CLI shows) and workflows (the catalog a worker published, its graph drawn)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from graphcore.backend import published
from graphcore.backend.catalog import _write as write_catalog
from graphcore.backend.catalog import read_catalog
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunFilter, RunStatus
from graphcore.engine.describe import version_of
from graphcore.engine.registry import Registry
from graphcore.engine.validate import canonical_json
from graphcore.errors import ConfigError
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.security import CSRF_COOKIE, Guard
from graphq.scheduler.api import Schedules
from graphq.worker.queue import RQStepQueue
from tests.cli_helpers import error_line, invoke, ok
from tests.workers import Procs, wait_for, work

MODULES = "tests.workflows.basic,tests.workflows.admission"
REGISTRY = Registry.load(MODULES.split(","))


def serve(client: Client, settings: Settings | None = None) -> TestClient:
    console = Console(client, settings or Settings(), Guard())
    return TestClient(create_app(console), base_url="http://127.0.0.1:8000")


def rows(page: str, attribute: str) -> list[str]:
    """The values of ``attribute`` on the page's rows (``data-run``...), in order."""
    return [html.unescape(v) for v in re.findall(rf'<tr {attribute}="([^"]*)"', page)]


def counts(page: str) -> dict[str, str]:
    """Status → the count the page shows."""
    found = re.findall(r'data-status="([a-z_]+)">[a-z_]+ <b>([0-9+]*)</b>', page)
    return dict(found)


def cli_json(redis_url: str, *args: str) -> object:
    return json.loads(ok(invoke(MODULES, redis_url, *args, "-o", "json")).stdout)


# -- runs -------------------------------------------------------------------------------------------------


def test_the_runs_page_counts_runs_per_status_with_the_other_filters(client: Client) -> None:
    client.enqueue("counter", {"n": 1}, run_id="r-done", tenant="acme")
    client.enqueue("counter", {"n": 1}, run_id="r-gone", tenant="acme")
    client.cancel("r-gone")
    work(client)
    client.enqueue("counter", {"n": 1}, run_id="r-wait-1", tenant="acme")
    client.enqueue("counter", {"n": 1}, run_id="r-wait-2", tenant="globex")
    web = serve(client)
    page = web.get("/runs").text
    assert counts(page) == {
        "queued": "2",
        "running": "0",
        "awaiting_input": "0",
        "completed": "1",
        "failed": "0",
        "canceled": "1",
        "any": "",
    }
    assert rows(page, "data-run") == ["r-wait-2", "r-wait-1", "r-gone", "r-done"]
    acme = web.get("/runs/table", params={"tenant": "acme", "status": "queued"}).text
    assert rows(acme, "data-run") == ["r-wait-1"]
    assert (counts(acme)["queued"], counts(acme)["completed"], counts(acme)["canceled"]) == ("1", "1", "1")
    link = re.search(r'href="([^"]*)" class="count status-completed"', acme)
    assert link is not None
    assert html.unescape(link.group(1)) == "/runs?tenant=acme&status=completed"


def test_counts_look_at_the_newest_runs_only_and_say_so(client: Client) -> None:
    client.enqueue_many([RunRequest("counter", {"n": 1}) for _ in range(1001)])
    page = serve(client).get("/runs/table").text
    assert counts(page)["queued"] == "1000+"
    assert counts(page)["completed"] == "0"
    assert "counted among the newest 1000 runs" in page
    found = client.runs.count_statuses(window=3)
    assert (found.counts[RunStatus.QUEUED], found.scanned, found.more) == (3, 3, True)


def test_a_filtered_listing_looks_through_the_newest_runs_it_is_given(client: Client) -> None:
    """The page's listing reads at most LIST_WINDOW ids per refresh, not every run."""
    client.enqueue("counter", {"n": 1}, run_id="r-oldest", tenant="rare")
    client.enqueue_many([RunRequest("counter", {"n": 1}) for _ in range(4)])
    rare = RunFilter(tenant="rare")
    assert [r.id for r in client.list_runs(50, rare, within=4)] == []
    assert [r.id for r in client.list_runs(50, rare, within=5)] == ["r-oldest"]
    assert [r.id for r in client.list_runs(50, rare)] == ["r-oldest"]
    with pytest.raises(ConfigError, match="within"):
        client.list_runs(50, rare, within=0)


def test_the_schedule_and_version_filters_and_the_search(client: Client, redis_url: str) -> None:
    api = Schedules(client)
    api.add("hourly", workflow="counter", cron="@hourly", input={"n": 1})
    fired = api.trigger("hourly")
    client.enqueue("counter", {"n": 1}, run_id="r-plain", thread_id="t-shared")
    client.enqueue("counter", {"n": 1}, run_id="r-second", thread_id="t-shared")
    work(client)
    web = serve(client)
    by_schedule = web.get("/runs", params={"schedule": "hourly"}).text
    assert rows(by_schedule, "data-run") == [fired]
    listed = cli_json(redis_url, "runs", "list", "--schedule", "hourly")
    assert [r["id"] for r in listed] == [fired]  # type: ignore[index]
    version = client.get_run("r-plain").version
    assert version is not None
    assert rows(web.get("/runs", params={"version": version[:8]}).text, "data-run") == [
        "r-second",
        "r-plain",
        fired,
    ]
    assert rows(web.get("/runs", params={"version": "0" + version[:7]}).text, "data-run") == []
    assert rows(web.get("/runs", params={"q": "r-plain"}).text, "data-run") == ["r-plain"]
    assert rows(web.get("/runs", params={"q": "t-shared"}).text, "data-run") == ["r-second", "r-plain"]
    nothing = web.get("/runs", params={"q": "t-none"}).text
    assert "no run and no thread has the id &#39;t-none&#39;" in nothing
    unknown = web.get("/runs", params={"schedule": "nope"})
    assert unknown.status_code == 200
    assert "no schedule named &#39;nope&#39; (graphq schedules list shows them)" in unknown.text
    cli = error_line(ok(invoke(MODULES, redis_url, "runs", "list", "--schedule", "nope"), 2))
    assert cli == "error: no schedule named 'nope' (graphq schedules list shows them)"
    bad = web.get("/runs/table", params={"status": "done"}).text
    assert "status: &#39;done&#39; is not a run status (one of queued, running," in bad


def test_a_search_shows_the_run_with_that_id_and_the_runs_of_the_thread_with_it(client: Client) -> None:
    client.enqueue("counter", {"n": 1}, run_id="s-first")  # its thread is "s-first"
    client.enqueue("counter", {"n": 1}, run_id="s-again", thread_id="s-first")
    client.enqueue("counter", {"n": 1}, run_id="s-other", thread_id="s-again")
    web = serve(client)
    assert rows(web.get("/runs", params={"q": "s-first"}).text, "data-run") == ["s-again", "s-first"]
    assert rows(web.get("/runs", params={"q": "s-again"}).text, "data-run") == ["s-other", "s-again"]
    assert rows(web.get("/runs", params={"q": "s-other"}).text, "data-run") == ["s-other"]
    queued = web.get("/runs", params={"q": "s-first", "status": "queued"}).text
    assert rows(queued, "data-run") == ["s-again", "s-first"]
    assert rows(web.get("/runs", params={"q": "s-first", "status": "done"}).text, "data-run") == []


def test_the_runs_page_keeps_its_filters_in_the_form_and_escapes(client: Client) -> None:
    client.enqueue("counter", {"n": 1}, run_id="r-x", tenant="<i>acme</i>")
    page = serve(client).get("/runs", params={"tenant": "<i>acme</i>", "workflow": "counter"}).text
    assert rows(page, "data-run") == ["r-x"]
    assert '<input name="tenant" value="&lt;i&gt;acme&lt;/i&gt;">' in page
    assert "<i>acme</i>" not in page
    assert '<input name="workflow" value="counter">' in page
    assert 'hx-get="/runs/table" hx-trigger="every 2s" hx-swap="innerHTML" hx-include=".filters"' in page


# -- workers, tenants ---------------------------------------------------------------------------------------


@pytest.fixture
def env(graphq_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {
        **graphq_env,
        "GRAPHQ_WORKFLOWS": "tests.workflows.ctrl_c,tests.workflows.basic",
        "GRAPHQ_TEST_DIR": str(tmp_path),
        "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5",
    }


def test_the_workers_page_shows_a_live_worker_its_run_step_and_versions(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path, redis_url: str
) -> None:
    held = Registry.load(["tests.workflows.ctrl_c", "tests.workflows.basic"])
    mine = Client(client.kv, held, RQStepQueue(client.kv, Settings(redis_url=redis_url)))
    (tmp_path / "hold").touch()
    procs.start("worker", env=env)
    run_id = mine.enqueue("held", {}, run_id="r-held")
    wait_for(lambda: (tmp_path / "slow-started").exists(), 60, "the slow step to start")
    web = serve(client)

    def holding() -> str | None:
        page = web.get("/workers/table").text
        return page if run_id in page else None

    page = wait_for(holding, 60, "the worker's heartbeat to name the run")
    [worker] = cli_json(redis_url, "workers")  # type: ignore[misc]
    assert rows(page, "data-worker") == [worker["id"]]
    assert f'<a href="/runs/{run_id}">{run_id}</a>' in page
    assert f"<td>{worker['thread_step']}</td>" in page
    catalog = {w["name"]: w["versions"][0]["version"] for w in cli_json(redis_url, "workflows", "list")}  # type: ignore[union-attr]
    for name in ("held", "counter"):
        assert f'<a href="/workflows/{name}#version-{catalog[name]}">{name}</a>' in page
        assert f'<span class="mono">{catalog[name][:12]}</span>' in page
    assert " s ago</td>" in page
    (tmp_path / "hold").unlink()


def test_the_tenants_page_shows_what_graphq_tenants_shows(
    redis_client: redis.Redis, redis_url: str, client: Client
) -> None:
    settings = Settings(redis_url=redis_url, max_concurrent_runs=3, tenant_weights="b=2")
    published.publish(redis_client, settings, "w-1")
    limited = Client(redis_client, REGISTRY, RQStepQueue(redis_client, settings))
    limited.enqueue_many([RunRequest("tick", {}, tenant="acme") for _ in range(4)])
    limited.enqueue_many([RunRequest("ticks", {}, tenant="<b>b</b>")])
    page = serve(limited, settings).get("/tenants").text
    shown = cli_json(redis_url, "tenants")
    assert [t["tenant"] for t in shown["tenants"]] == ["<b>b</b>", "acme"]  # type: ignore[index]
    assert rows(page, "data-tenant") == ["<b>b</b>", "acme"]
    number = r"\s*<td>(\S+)</td>"
    cells = re.findall(r"<tr data-tenant=[^>]*>\s*<td>.*?</td>" + number * 4, page)
    expected = [
        (str(t["weight"]), str(t["running"]), str(t["queued"]), str(t["limit"]))
        for t in shown["tenants"]  # type: ignore[index]
    ]
    assert cells == expected == [("1", "0", "1", "3"), ("1", "3", "1", "3")]
    assert "cluster: 3 running of 3 (GRAPHQ_MAX_CONCURRENT_RUNS), 2 queued" in page
    assert "&lt;b&gt;b&lt;/b&gt;" in page
    assert "<b>b</b>" not in page


# -- schedules -----------------------------------------------------------------------------------------------


def post(web: TestClient, path: str, status: int = 200) -> str:
    """POST ``path`` as the page's htmx does (the CSRF header from the cookie a GET set); the reply's text,
    which must come with ``status``."""
    web.get("/schedules")
    reply = web.post(path, headers={"X-CSRF-Token": web.cookies[CSRF_COOKIE], "HX-Request": "true"})
    assert reply.status_code == status, reply.text
    return reply.text


def test_the_schedules_page_pauses_resumes_and_triggers_as_the_cli_does(
    client: Client, redis_url: str
) -> None:
    api = Schedules(client)
    api.add("nightly", workflow="counter", cron="0 2 * * *", input={"n": 1}, overlap="skip")
    web = serve(client)
    page = web.get("/schedules").text
    assert rows(page, "data-schedule") == ["nightly"]
    upcoming = [f["utc"] for f in cli_json(redis_url, "schedules", "next", "nightly", "-n", "3")]  # type: ignore[index]
    assert re.findall(r"<div class=\"(?:due)?\">([0-9: -]+)</div>", page) == [
        u[:19].replace("T", " ") for u in upcoming
    ]
    assert '<td class="paused">no</td>' in page
    assert '<span class="muted">none yet</span>' in page

    assert "schedule nightly: paused" in post(web, "/schedules/nightly/pause")
    assert cli_json(redis_url, "schedules", "show", "nightly")["paused"] is True  # type: ignore[index]
    assert '<td class="paused">yes</td>' in web.get("/schedules/table").text
    assert "schedule nightly: resumed" in post(web, "/schedules/nightly/resume")
    assert cli_json(redis_url, "schedules", "show", "nightly")["paused"] is False  # type: ignore[index]

    outcome = post(web, "/schedules/nightly/trigger")
    [fire] = cli_json(redis_url, "schedules", "history", "nightly")  # type: ignore[misc]
    run_id = fire["run_id"]
    assert f"schedule nightly: triggered run {run_id}" in outcome
    assert f'<a href="/runs/{run_id}">open run</a>' in outcome
    table = web.get("/schedules/table").text
    assert (
        f'{fire["fire_time"][:19].replace("T", " ")} started <a href="/runs/{run_id}">{run_id}</a>' in table
    )

    skipped = post(web, "/schedules/nightly/trigger", 409)  # its run has not ended: --overlap skip
    cli = error_line(ok(invoke(MODULES, redis_url, "schedules", "trigger", "nightly"), 2))
    assert html.unescape(re.sub(r"<[^>]+>", "", skipped)).strip() == cli.removeprefix("error: ")
    assert 'class="outcome error" role="alert"' in skipped
    unknown = post(web, "/schedules/nope/pause", 404)
    assert "no schedule named &#39;nope&#39; (graphq schedules list shows them)" in unknown


def test_schedule_actions_need_the_csrf_header_and_a_known_action(client: Client) -> None:
    Schedules(client).add("nightly", workflow="counter", cron="0 2 * * *", input={"n": 1})
    web = serve(client)
    web.get("/schedules")
    refused = web.post("/schedules/nightly/pause")
    assert refused.status_code == 403
    assert Schedules(client).get("nightly").paused is False
    odd = web.post("/schedules/nightly/explode", headers={"X-CSRF-Token": web.cookies[CSRF_COOKIE]})
    assert odd.status_code == 404
    assert "no action &#39;explode&#39; on a schedule (pause, resume or trigger)" in odd.text
    assert 'hx-post="/schedules/nightly/pause"' in web.get("/schedules").text
    read_only = TestClient(
        create_app(Console(client, Settings(), Guard(read_only=True))), base_url="http://127.0.0.1"
    )
    assert "hx-post" not in read_only.get("/schedules").text


# -- workflows -----------------------------------------------------------------------------------------------


def test_the_workflows_pages_show_the_catalog_and_draw_the_graph(
    client: Client, procs: Procs, env: dict[str, str], redis_url: str
) -> None:
    procs.start("worker", env=env)
    published = wait_for(lambda: read_catalog(client.kv), 60, "the worker to publish its workflows")
    listed = {w["name"]: w for w in cli_json(redis_url, "workflows", "list")}  # type: ignore[union-attr]
    web = serve(client)
    page = web.get("/workflows").text
    assert (
        rows(page, "data-workflow")
        == [e.name for e in published]
        == sorted(n for n, w in listed.items() if "catalog" in w["source"])
    )
    counter = listed["counter"]["versions"][0]
    assert f'<tr data-workflow="counter" data-version="{counter["version"]}">' in page
    shown = web.get("/workflows/counter").text
    assert f'<section class="version" id="version-{counter["version"]}"' in shown
    nodes = re.findall(r'<g class="dg-node dg-(\w+)" data-node="([^"]+)">', shown)
    assert nodes == [("start", "__start__"), ("node", "bump"), ("end", "__end__")]
    edges = re.findall(
        r'<path class="dg-edge( dg-dashed)?" d="[^"]+" marker-end="[^"]+" data-edge="([^"]+)"', shown
    )
    assert edges == [("", "__start__→bump"), (" dg-dashed", "bump→bump"), (" dg-dashed", "bump→__end__")]
    assert counter["served_by"][0] in shown
    missing = web.get("/workflows/nope")
    assert missing.status_code == 404
    cli = error_line(ok(invoke(env["GRAPHQ_WORKFLOWS"], redis_url, "workflows", "show", "nope"), 2))
    said = re.search(r'<p class="error" role="alert">(.*?)</p>', missing.text)
    assert said is not None
    assert html.unescape(said.group(1)) == cli.removeprefix("error: ")


def test_a_node_name_from_the_catalog_is_escaped_in_the_drawing(client: Client) -> None:
    """The catalog is data any worker writes: a node named like markup is shown as text."""
    description = {
        "format": 2,
        "name": "odd",
        "channels": [],
        "nodes": [
            {
                "name": "<script>x</script>",
                "fn": "m.f",
                "subgraph": None,
                "settings": {},
                "timeout_s": None,
                "retry": None,
            }
        ],
        "edges": [
            {"kind": "edge", "sources": ["__start__"], "targets": ["<script>x</script>"], "router": None}
        ],
    }
    write_catalog(client.kv, "w-1", {"odd": (version_of(description), canonical_json(description))})
    shown = serve(client).get("/workflows/odd").text
    assert "<script>x</script>" not in shown
    assert 'data-node="&lt;script&gt;x&lt;/script&gt;"' in shown
    assert 'dominant-baseline="central">&lt;script&gt;x&lt;/script&gt;</text>' in shown
