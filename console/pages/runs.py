"""``/runs``: the runs, filtered (status, workflow, tenant, schedule, version) or searched (the run with an
id and the runs of the thread with it), newest first, with the runs per status; live (the table reloads
itself, the filters stay in the URL)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import QueryParams

from graphcore.backend.client import Client
from graphcore.backend.runs import COUNT_WINDOW, RunFilter, RunRecord, RunStatus, StatusCounts
from graphcore.errors import ConfigError, PermanentError, RunNotFoundError
from graphq.console.pages.live import live_page
from graphq.console.state import Console
from graphq.scheduler.schedules import ScheduleStore

__all__ = ["FILTERS", "LIMIT", "LIST_WINDOW", "router", "run_filter"]

router = APIRouter()

LIMIT = 50
"""Runs a page shows."""

LIST_WINDOW = 10_000
"""The newest runs a filtered listing looks through (a filter few runs match must not read every run at
each refresh); a search by id reads that run or thread only."""

FILTERS = ("status", "workflow", "tenant", "schedule", "version", "q")
"""The query parameters of ``/runs`` (``q``: a run or thread id)."""

_STATUSES = [s.value for s in RunStatus]


@router.get("/")
def home() -> Response:
    return RedirectResponse("/runs", status_code=303)


def run_filter(client: Client, query: Mapping[str, str]) -> RunFilter:
    """The filter of ``query`` (the query string, or a form with the same fields).

    Raises:
        ConfigError: an unknown status (naming the parameter and the statuses).
        ScheduleNotFoundError: no schedule has the name given as ``schedule``.
    """
    status = query.get("status") or None
    if status is not None and status not in _STATUSES:
        raise ConfigError(f"status: {status!r} is not a run status (one of {', '.join(_STATUSES)})")
    schedule = query.get("schedule") or None
    return RunFilter(
        tenant=query.get("tenant") or None,
        status=None if status is None else RunStatus(status),
        workflow=query.get("workflow") or None,
        schedule=schedule,
        created_from=None if schedule is None else ScheduleStore(client.kv).created_at(schedule),
        version=(query.get("version") or "").strip().lower() or None,
    )


def _searched(client: Client, wanted: str, where: RunFilter) -> tuple[list[RunRecord], str | None]:
    """The run with id ``wanted`` and the runs of thread ``wanted`` (a thread's id is its first run's id by
    default: the search also shows its resumes and branches), newest first, each once, kept by ``where``;
    and a note when ``wanted`` is neither."""
    try:
        found = {r.id: r for r in client.thread_runs(wanted)}
    except ConfigError as exc:
        return [], f"{wanted!r} is not a run or thread id: {exc}"
    try:
        found.setdefault(wanted, client.get_run(wanted))
    except RunNotFoundError:
        if not found:
            return [], f"no run and no thread has the id {wanted!r}"
    newest = sorted(found.values(), key=lambda r: r.created_at, reverse=True)
    return [r for r in newest if where.record_matches(r)][:LIMIT], None


def _read(client: Client, query: QueryParams) -> dict[str, Any]:
    form = {k: query.get(k, "") for k in FILTERS}
    try:
        where = run_filter(client, query)
    except PermanentError as exc:  # a bad status, an unknown schedule: said where the table would be
        return {"form": form, "runs": [], "note": str(exc), "counts": [], "partial": False}
    wanted = form["q"].strip()
    counts = client.runs.count_statuses(where)
    note = None
    if wanted:
        records, note = _searched(client, wanted, where)
    elif where == RunFilter():
        records = client.list_runs(LIMIT)
    else:
        records = client.list_runs(LIMIT, where, within=LIST_WINDOW)
        if len(records) < LIMIT and counts.total > LIST_WINDOW:
            note = f"searched the newest {LIST_WINDOW} runs: graphq runs list looks through every run"
    return {
        "form": form,
        "runs": records,
        "note": note,
        "counts": _chips(query, counts),
        "partial": counts.more,
    }


def _chips(query: QueryParams, found: StatusCounts) -> list[dict[str, Any]]:
    """Per status: its count (``12+`` when older runs were not counted), and the link to the runs with it
    (the other filters kept)."""
    kept = {k: v for k, v in query.items() if k in FILTERS and k != "status" and v}
    return [
        {
            "status": status.value,
            "count": f"{n}+" if found.more and n else str(n),
            "href": "/runs?" + urlencode({**kept, "status": status.value}),
            "current": query.get("status") == status.value,
        }
        for status, n in found.counts.items()
    ] + [
        {"status": "any", "count": "", "href": "/runs?" + urlencode(kept), "current": not query.get("status")}
    ]


async def _load(request: Request) -> dict[str, Any]:
    client = Console.of(request).client
    found = await run_in_threadpool(_read, client, request.query_params)
    return {
        **found,
        "statuses": _STATUSES,
        "window": COUNT_WINDOW,
        "read_only": Console.of(request).guard.read_only,
    }


live_page(router, "/runs", "runs.html", "_runs_table.html", _load)
