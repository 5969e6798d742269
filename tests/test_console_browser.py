"""The console in a real browser: headless Chromium (Debian's package) driven by Playwright, against a real
``graphq ui`` subprocess on the test Redis. Screenshots: test-results/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphq.scheduler.api import Schedules
from tests.browser import browser_page, screenshot, start_console
from tests.workers import Procs

REGISTRY = Registry.load(["tests.workflows.basic"])


@pytest.fixture
def env(graphq_env: dict[str, str]) -> dict[str, str]:
    return {**graphq_env, "GRAPHQ_WORKFLOWS": "tests.workflows.basic"}


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
        page.wait_for_function("document.querySelectorAll('tr[data-run]').length === 1")
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
