"""``/workflows``: the catalog the workers publish, one row per version (``graphq workflows list``), and
``/workflows/{name}``: each version's live workers, pinned runs, nodes and its graph drawn as inline SVG
(:mod:`graphq.console.diagram`) (``graphq workflows show``). Not live: counting pinned runs reads every run
that has not ended."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from graphcore.backend.catalog import read_catalog
from graphcore.backend.reaper import iso_ms
from graphcore.backend.upgrade_check import active_runs, pinned
from graphcore.errors import UnknownWorkflowError
from graphq.console.diagram import layout
from graphq.console.rendering import templates
from graphq.console.state import Console

__all__ = ["catalog", "router"]

router = APIRouter()


def catalog(kv: Any, name: str | None = None) -> list[dict[str, Any]]:
    """The catalog (or workflow ``name`` only), by name: ``{"name", "versions": [{"version", "description",
    "published_at" (ISO UTC), "served_by" (worker ids), "pinned_runs"}]}``, versions newest first."""
    counts = pinned(active_runs(kv, name))
    return [
        {
            "name": entry.name,
            "versions": [
                {
                    "version": v.version,
                    "description": v.description,
                    "published_at": iso_ms(v.published_ms),
                    "served_by": v.served_by,
                    "pinned_runs": counts[(entry.name, v.version)],
                }
                for v in entry.versions
            ],
        }
        for entry in read_catalog(kv, name)
    ]


@router.get("/workflows")
async def workflows_page(request: Request) -> Response:
    flows = await run_in_threadpool(catalog, Console.of(request).kv)
    return templates.TemplateResponse(request, "workflows.html", {"workflows": flows})


def _one(kv: Any, name: str) -> dict[str, Any]:
    """Workflow ``name`` with each version's diagram.

    Raises:
        UnknownWorkflowError: no worker published it (the text of ``graphq workflows show``).
    """
    found = catalog(kv, name)
    if not found:
        known = ", ".join(f["name"] for f in catalog(kv)) or "none"
        raise UnknownWorkflowError(f"unknown workflow {name!r}; known workflows: {known}")
    flow = found[0]
    for v in flow["versions"]:
        v["diagram"] = layout(v["description"])
    return flow


@router.get("/workflows/{name}")
async def workflow_page(request: Request, name: str) -> Response:
    flow = await run_in_threadpool(_one, Console.of(request).kv, name)
    return templates.TemplateResponse(request, "workflow.html", {"flow": flow})
