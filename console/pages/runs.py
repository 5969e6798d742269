"""``/runs``: the runs, filtered, newest first, live (the table reloads itself)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from graphcore.backend.runs import RunFilter, RunStatus
from graphq.console.rendering import templates
from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter()


@router.get("/")
def home() -> Response:
    return RedirectResponse("/runs", status_code=303)


@router.get("/runs")
async def runs_page(request: Request) -> Response:
    return await _runs(request, "runs.html")


@router.get("/runs/table")
async def runs_table(request: Request) -> Response:
    """The table alone, for the page's live refresh."""
    return await _runs(request, "_runs_table.html")


async def _runs(request: Request, template: str) -> Response:
    query = request.query_params
    status = query.get("status") or None
    where = RunFilter(
        tenant=query.get("tenant") or None,
        status=None if status is None else RunStatus(status),
        workflow=query.get("workflow") or None,
    )
    client = Console.of(request).client
    records = await run_in_threadpool(client.list_runs, 50, None if where == RunFilter() else where)
    context = {"runs": records, "where": where, "statuses": [s.value for s in RunStatus]}
    return templates.TemplateResponse(request, template, context)
