"""``/workers``: the live workers, as ``graphq workers`` lists them, with the workflow versions each serves
(the catalog's); live."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from graphcore.backend.catalog import read_catalog
from graphcore.backend.reaper import iso_ms, server_ms
from graphcore.backend.workers import live_workers
from graphq.console.pages.live import live_page
from graphq.console.state import Console

__all__ = ["router", "served_versions"]

router = APIRouter()


def served_versions(kv: Any) -> dict[str, list[tuple[str, str]]]:
    """Worker id → the ``(workflow, version)`` pairs it published and serves (versions 64 hex digits),
    by workflow."""
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in read_catalog(kv):
        for version in entry.versions:
            for worker_id in version.served_by:
                found.setdefault(worker_id, []).append((entry.name, version.version))
    return found


def _read(kv: Any) -> dict[str, Any]:
    now = server_ms(kv)
    versions = served_versions(kv)
    rows = [
        {
            "worker": w,
            "heartbeat_at": iso_ms(w.heartbeat_ms),
            "heartbeat_age_s": max(0.0, (now - w.heartbeat_ms) / 1000),
            "versions": versions.get(w.id, []),
        }
        for w in live_workers(kv, now)
    ]
    return {"workers": rows}


async def _load(request: Request) -> dict[str, Any]:
    return await run_in_threadpool(_read, Console.of(request).kv)


live_page(router, "/workers", "workers.html", "_workers_table.html", _load)
