"""``/tenants``: per tenant, its runs holding a slot and waiting for one, its limit and its oldest wait, and
the cluster's totals, as ``graphq tenants`` shows them; live."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from graphcore.backend.admission import tenants_report, waited
from graphcore.backend.reaper import server_ms
from graphcore.settings import Settings
from graphq.console.pages.live import live_page
from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter()


def _read(kv: Any, settings: Settings) -> dict[str, Any]:
    report = tenants_report(kv, settings, server_ms(kv))
    for t in report["tenants"]:
        t["oldest_wait"] = waited(t["oldest_wait_s"])
    return report


async def _load(request: Request) -> dict[str, Any]:
    console = Console.of(request)
    return await run_in_threadpool(_read, console.kv, console.settings)


live_page(router, "/tenants", "tenants.html", "_tenants_table.html", _load)
