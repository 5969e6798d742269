"""The console in tests: a real ``graphq ui`` subprocess on a free port, and headless Chromium (Debian's
``chromium``, ``make browser`` installs it) driven by Playwright.

Screenshots go to ``test-results/screenshots/`` at the repository's root (:func:`screenshot`).
"""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphcore.backend.embedded import free_port
from tests.workers import ROOT, Procs, wait_for

__all__ = [
    "CHROMIUM_FLAGS",
    "SHOTS",
    "Console",
    "browser_page",
    "chromium_path",
    "screenshot",
    "start_console",
]

SHOTS = ROOT / "test-results" / "screenshots"
CHROMIUM_FLAGS = [
    "--no-sandbox",  # as root in a container
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # no calls home: the machine's network is closed
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """The Chromium to drive: ``GRAPHQ_TEST_CHROMIUM``, else ``chromium`` on the PATH.

    Raises:
        AssertionError: none is installed (``make browser`` installs Debian's package).
    """
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found is not None, "no chromium on the PATH: run `make browser` (apt-get install chromium)"
    return found


class Console:
    """A running ``graphq ui``: its base URL and process."""

    def __init__(self, url: str, proc: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.proc = proc

    def at(self, path: str) -> str:
        """The absolute URL of ``path`` (``/runs``)."""
        return self.url + path


def start_console(procs: Procs, env: dict[str, str], *args: str, **settings: str) -> Console:
    """Start ``graphq ui --port <free> ARGS`` and wait until it answers."""
    port = free_port()
    proc = procs.start("ui", "--port", str(port), *args, env=env, **settings)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert proc.poll() is None, procs.logged(proc)
        try:
            with urllib.request.urlopen(url + "/static/console.css", timeout=5) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    wait_for(answers, 60, "graphq ui to answer")
    return Console(url, proc)


@contextmanager
def browser_page() -> Iterator[Any]:
    """A fresh page of headless Chromium (a new context: no cookies), closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(30_000)
            yield context.new_page()
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot of ``page`` as ``SHOTS/<name>.png``; its path."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
