"""The console in a real browser: headless Chromium (Debian's package) driven by Playwright, against a real
``graphq ui`` subprocess on the test Redis. Screenshots: test-results/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
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
        refusal = page.locator(f".outcome-slot[data-request='{asked.id}'] .outcome.error")
        assert refusal.inner_text() == (
            "value: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
        )
        form.locator("textarea").fill('{"ok": true, "note": "within budget"}')
        form.locator("button").click()
        done = page.locator(f".outcome-slot[data-request='{asked.id}'] .outcome.ok")
        assert done.inner_text() == f"answered {asked.id}; run {run_id} continues on a worker {run_id}"
        wait_for(
            lambda: client.get_run(run_id).status.value == "completed", 60, "the answered run to complete"
        )
        page.reload()
        assert page.locator("#run-status").inner_text() == "completed"
        assert '"outcome": "ok=True note=within budget (done)"' in page.locator("pre.result").inner_text()
        screenshot(page, "run-answered")
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
        assert page.locator("#run-status").inner_text() == "running"  # the page as it was loaded
        (tmp_path / "go-3").touch()  # the step in flight ends; the run stops before the next
        page.wait_for_selector("#events-state >> text=the run is canceled", timeout=60_000)
        assert client.get_run(run_id).status.value == "canceled"
        assert client.get_run(run_id).result is None
        modes = [item.get_attribute("class") for item in events.all()]
        assert modes[-1] == "event event-status"
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
