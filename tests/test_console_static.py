"""The console's static files: the favicon every page names (browsers asked for /favicon.ico, a 404 in
the log on each page, without one), served from the package."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.security import Guard

REGISTRY = Registry.load(["tests.workflows.basic"])


def test_every_page_names_the_svg_favicon_the_console_serves(client: Client) -> None:
    web = TestClient(create_app(Console(client, Settings(), Guard())), base_url="http://127.0.0.1:8000")
    for path in ("/runs", "/requests", "/workers", "/tenants", "/schedules", "/workflows", "/login"):
        page = web.get(path)
        icons = re.findall(r'<link rel="icon" type="image/svg\+xml" href="([^"]+)">', page.text)
        assert (page.status_code, icons) == (200, ["/static/favicon.svg"]), path
    icon = web.get("/static/favicon.svg")
    assert (icon.status_code, icon.headers["content-type"]) == (200, "image/svg+xml")
    assert icon.text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
