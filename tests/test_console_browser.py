"""The console in a real browser: headless Chromium (Debian's package) driven by Playwright, against a real
``graphq ui`` subprocess on the test Redis. Screenshots: test-results/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphq.scheduler.api import Schedules
from tests.browser import browser_page, screenshot, start_console
from tests.workers import Procs, wait_for, work

REGISTRY = Registry.load(["tests.workflows.basic", "tests.workflows.console_pages"])


@pytest.fixture
def env(graphq_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    workflows = "tests.workflows.basic,tests.workflows.console_pages"
    return {**graphq_env, "GRAPHQ_WORKFLOWS": workflows, "GRAPHQ_TEST_DIR": str(tmp_path)}


def test_the_runs_page_lists_filters_and_updates_live(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    client.enqueue("counter", {"n": 1}, run_id="r-first", tenant="acme")
    client.enqueue("counter", {"n": 1}, run_id="r-other", tenant="globex")
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at("/runs"))
        assert page.locator("tr[data-run]").count() == 2
        page.select_option("select[name=status]", "queued")
        page.fill("input[name=tenant]", "acme")
        page.press("input[name=tenant]", "Enter")
        expect(page.locator("tr[data-run]")).to_have_count(
            1
        )  # (a JS predicate would be eval: the CSP bars it)
        assert page.locator("tr[data-run]").get_attribute("data-run") == "r-first"
        client.enqueue("counter", {"n": 1}, run_id="r-later", tenant="acme")
        # the table reloads itself every 2 s, keeping the filter
        page.wait_for_selector("tr[data-run=r-later]", timeout=30_000)
        assert page.locator("tr[data-run]").count() == 2
        screenshot(page, "runs-filtered")


def test_the_operations_pages_with_a_worker_a_schedule_and_a_run_held(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path, redis_url: str
) -> None:
    """Every operations page with real data: trigger a schedule from its page and see its run appear and
    complete (a real worker), filter the runs and reload (the filter stays), a worker holding a run, its
    tenant running, the workflow's graph; a screenshot of each page."""
    env = {**env, "GRAPHQ_WORKFLOWS": "tests.workflows.basic,tests.workflows.ctrl_c"}
    env |= {"GRAPHQ_TEST_DIR": str(tmp_path), "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5"}
    Schedules(client).add("nightly", workflow="counter", cron="0 2 * * *", input={"n": 1})
    procs.start("worker", env=env)
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at("/schedules"))
        page.click("tr[data-schedule=nightly] button[name=trigger]")
        page.wait_for_selector("#outcome .ok")
        said = page.inner_text("#outcome")
        assert said.startswith("schedule nightly: triggered run nightly-")
        run_id = said.split("triggered run ")[1].split(" ")[0]
        page.wait_for_selector(f"tr[data-schedule=nightly] .fires a[href='/runs/{run_id}']", timeout=30_000)
        page.click("tr[data-schedule=nightly] button[name=pause]")
        page.wait_for_selector("tr[data-schedule=nightly] button[name=resume]", timeout=30_000)
        assert page.inner_text("tr[data-schedule=nightly] .paused") == "yes"
        screenshot(page, "schedules")

        page.goto(console.at("/runs?schedule=nightly"))
        page.wait_for_selector(f"tr[data-run='{run_id}'] .status-completed", timeout=60_000)
        page.select_option("select[name=status]", "completed")
        page.wait_for_url("**/runs?*status=completed*")
        page.reload()
        assert page.locator("select[name=status]").input_value() == "completed"
        assert page.locator("input[name=schedule]").input_value() == "nightly"
        assert page.locator("tr[data-run]").count() == 1
        assert page.inner_text("a.count.current") == "completed 1"
        screenshot(page, "runs-by-schedule")

        held = Client(client.kv, Registry.load(["tests.workflows.ctrl_c"]), client.queue)
        (tmp_path / "hold").touch()
        held.enqueue("held", {}, run_id="r-held", tenant="acme")
        page.goto(console.at("/workers"))
        page.wait_for_selector("tr[data-worker] a[href='/runs/r-held']", timeout=60_000)
        screenshot(page, "workers")
        page.goto(console.at("/tenants"))
        assert page.inner_text("tr[data-tenant=acme] td:nth-child(3)") == "1"
        screenshot(page, "tenants")
        page.goto(console.at("/workflows"))
        assert page.locator("tr[data-workflow=held]").count() == 1
        screenshot(page, "workflows")
        page.click("tr[data-workflow=held] td:first-child a")
        nodes = page.locator("svg.diagram g[data-node]")
        assert nodes.evaluate_all("gs => gs.map(g => g.dataset.node)") == [
            "__start__",
            "first",
            "slow",
            "last",
        ]
        screenshot(page, "workflow-held")
        page.goto(console.at("/workflows/approval"))  # conditional edges dashed, one skipping a rank
        assert page.locator("svg.diagram path.dg-dashed").count() == 4
        screenshot(page, "workflow-approval")
    (tmp_path / "hold").unlink()


def test_a_paused_run_is_answered_from_the_inbox_and_completes(
    client: Client, procs: Procs, env: dict[str, str]
) -> None:
    procs.start("worker", env=env)
    run_id = client.enqueue("approval", {"amount": 40}, run_id="r-approve")
    wait_for(lambda: client.get_run(run_id).status.value == "awaiting_input", 60, "the run to ask")
    [asked] = client.requests(run_id)
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at("/requests"))
        row = page.locator(f"tr[data-request='{asked.id}']")
        assert "expects Decision (required: ok)" in row.inner_text()
        screenshot(page, "requests-inbox")
        row.locator(f"a[href='/runs/{run_id}']").click()
        page.wait_for_url(console.at(f"/runs/{run_id}"))
        form = page.locator(f"tr[data-request='{asked.id}'] form.answer")
        form.locator("textarea").fill("{ok: yes}")
        form.locator("button").click()
        refusal = page.locator("#outcome .outcome.error")
        assert refusal.inner_text() == (
            "value: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
        )
        form.locator("textarea").fill('{"ok": true, "note": "within budget"}')
        form.locator("button").click()
        done = page.locator("#outcome .outcome.ok")
        assert done.inner_text() == f"answered {asked.id}; run {run_id} continues on a worker {run_id}"
        # no reload: the answer's reply reopens the stream, whose end reloads the record
        page.wait_for_selector("#run-status >> text=completed", timeout=60_000)
        assert '"outcome": "ok=True note=within budget (done)"' in page.locator("pre.result").inner_text()
        again = page.locator(f"tr[data-request='{asked.id}'] form.answer")
        assert again.locator("button").inner_text() == "Answer again"
        screenshot(page, "run-answered")
        again.locator("textarea").fill('{"ok": false, "note": "over budget"}')
        again.locator("button").click()
        branched = page.locator("#outcome .outcome.ok", has_text="branches off")
        branched.wait_for()
        branch = branched.inner_text().split()[1]
        assert branched.inner_text() == f"run {branch} branches off run {run_id} with a new answer {branch}"
        branched.locator("a").click()
        page.wait_for_url(console.at(f"/runs/{branch}"))
        page.wait_for_selector("#run-status >> text=completed", timeout=60_000)
        assert '"outcome": "ok=False note=over budget (done)"' in page.locator("pre.result").inner_text()
        page.goto(console.at("/requests"))
        assert page.locator("table.inbox tr[data-request]").count() == 0


def test_a_running_run_shows_its_events_live_and_is_canceled_from_its_page(
    client: Client, procs: Procs, env: dict[str, str], tmp_path: Path
) -> None:
    procs.start("worker", env=env)
    run_id = client.enqueue("gated", {"gates": 4}, run_id="r-gated")
    wait_for(lambda: client.get_run(run_id).status.value == "running", 60, "the run to start")
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at(f"/runs/{run_id}"))
        events = page.locator("#events li")
        page.wait_for_selector("#events li.event-status")  # running, streamed
        for n in (1, 2):
            before = events.count()
            (tmp_path / f"go-{n}").touch()  # step n may end now: its events arrive without a reload
            arrived = page.locator("#events li.event-updates", has_text=f'"ticks":[{n}]')
            arrived.wait_for(timeout=60_000)
            assert events.count() > before
        page.locator("form[hx-post$='/cancel'] button", has_text="Cancel").first.click()
        outcome = page.locator("#outcome .outcome")
        assert outcome.inner_text() == "cancel requested: the run stops before its next super-step"
        assert page.locator("#run-status").inner_text() == "running"  # canceling: it runs its step to the end
        (tmp_path / "go-3").touch()  # the step in flight ends; the run stops before the next
        page.wait_for_selector("#events-state >> text=the run is canceled", timeout=60_000)
        assert client.get_run(run_id).status.value == "canceled"
        assert client.get_run(run_id).result is None
        modes = [item.get_attribute("class") for item in events.all()]
        assert modes[-1] == "event event-status"
        page.wait_for_selector("#run-status >> text=canceled", timeout=60_000)  # without a reload
        assert page.locator(".actions button").all_inner_texts() == ["Resume"]
        screenshot(page, "run-live-canceled")
        page.reload()
        assert page.locator("#run-status").inner_text() == "canceled"
        assert [s.inner_text() for s in page.locator("tr[data-step] td:nth-child(2)").all()] == ["tick"] * 3


def test_the_thread_tree_shows_a_fork_made_in_the_browser(
    client: Client, procs: Procs, env: dict[str, str]
) -> None:
    run_id = client.enqueue("approval", {"amount": 5}, run_id="r-thread")
    work(client)
    client.answer(run_id, {"ok": True})
    work(client)
    thread = client.get_run(run_id).thread_id
    start = client.get_history(thread)[2]  # newest first: finish, ask, step 0, input
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at(f"/runs/{run_id}"))
        page.locator(f"a[href='/threads/{thread}']").first.click()
        page.locator(f"li[data-checkpoint='{start.id}'] a.cp").click()
        page.wait_for_url(console.at(f"/threads/{thread}?checkpoint={start.id}"))
        page.fill("form.fork textarea", '{"amount": 7}')
        page.fill("form.fork input[name=as_node]", "__start__")
        page.locator("form.fork button").click()
        made = page.locator("#fork-outcome .outcome.ok")
        made.wait_for()
        new_id = client.get_state(thread).id
        assert (
            made.inner_text()
            == f"checkpoint {new_id} forks checkpoint {start.id} on thread {thread} {new_id}"
        )
        made.locator("a").click()
        page.wait_for_url(console.at(f"/threads/{thread}?checkpoint={new_id}"))
        assert page.locator("p.forked").first.inner_text() == "2 branches from step 0:"
        assert '"amount": 7' in page.locator("#state").inner_text()
        screenshot(page, "thread-fork")
        page.fill("form.diff input[name=a]", start.id)
        page.locator("form.diff button").click()
        page.wait_for_selector("tr[data-key=amount]")
        assert page.locator("tr[data-key=amount] td:nth-child(2)").inner_text() == "changed"
        screenshot(page, "thread-difference")


def test_a_bulk_cancel_of_one_tenants_queued_runs(client: Client, procs: Procs, env: dict[str, str]) -> None:
    """Filter the queued runs of one tenant, Count (nothing changes), Confirm: the table shows them canceled,
    the other tenant's run still queued."""
    for n in (1, 2, 3):
        client.enqueue("counter", {"n": 1}, run_id=f"r-acme-{n}", tenant="acme")
    client.enqueue("counter", {"n": 1}, run_id="r-globex", tenant="globex")
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at("/runs"))
        page.select_option("select[name=status]", "queued")
        page.fill("input[name=tenant]", "acme")
        page.press("input[name=tenant]", "Enter")
        expect(page.locator("tr[data-run]")).to_have_count(3)
        page.locator(".bulk-form button", has_text="Count").click()
        asked = page.locator("#bulk-outcome .outcome.ask")
        expect(asked).to_have_text("3 runs match: 3 to cancel; cancel them?")
        assert page.locator("#bulk-outcome li").all_inner_texts() == ["r-acme-3", "r-acme-2", "r-acme-1"]
        assert client.get_run("r-acme-1").status.value == "queued"  # a count changes nothing
        screenshot(page, "bulk-count")
        page.locator("#bulk-outcome form.confirm button", has_text="Confirm: cancel 3 runs").click()
        expect(page.locator("#bulk-outcome .outcome.ok")).to_have_text("canceled 3 runs")
        page.select_option("select[name=status]", "")  # any status: the tenant's runs, now canceled
        expect(page.locator("tr[data-run] .status-canceled")).to_have_count(3)
        assert page.locator("tr[data-run]").count() == 3
        screenshot(page, "bulk-cancel")
    assert client.get_run("r-globex").status.value == "queued"


def test_a_run_answered_elsewhere_updates_its_open_page(
    client: Client, procs: Procs, env: dict[str, str]
) -> None:
    """The page of a run waiting for input follows it once it is answered elsewhere (here by the client, as
    `graphq runs answer` would): its stream had ended at the pause, and nothing on the page acted."""
    procs.start("worker", env=env)
    run_id = client.enqueue("approval", {"amount": 7}, run_id="r-elsewhere")
    wait_for(lambda: client.get_run(run_id).status.value == "awaiting_input", 60, "the run to ask")
    console = start_console(procs, env)
    with browser_page() as page:
        page.goto(console.at(f"/runs/{run_id}"))
        expect(page.locator("#run-status")).to_have_text("awaiting_input")
        expect(page.locator("#events-state")).to_contain_text("awaiting_input")
        client.answer(run_id, {"ok": True})
        expect(page.locator("#run-status")).to_have_text("completed", timeout=60_000)
