"""The console in a real browser: headless Chromium (Debian's package) driven by Playwright, against a real
``graphq ui`` subprocess on the test Redis. Screenshots: test-results/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
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
