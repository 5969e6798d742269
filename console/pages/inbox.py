"""``/requests``: the human requests inbox — every open request of the runs waiting for input, oldest
first, with its deadline and what it asks, and an answer form; the requests answered lately (those of the
newest :data:`ANSWERED_FROM` runs, newest answer first), to answer again (a new branch of the thread). Any
request is answered again from its run's page.

There is no index of open requests across runs: the inbox lists the runs awaiting input
(:meth:`Client.list_runs`, newest :data:`RUNS` of them) and reads each one's open requests, as ``graphq
runs requests RUN`` does for one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from graphcore.backend.client import Client
from graphcore.backend.json_forms import deadline_iso, to_json
from graphcore.backend.run_fields import schema_text
from graphcore.backend.runs import RunFilter, RunRecord, RunStatus
from graphcore.engine.interrupts import RequestRecord
from graphcore.errors import RunNotFoundError
from graphq.console.rendering import templates
from graphq.console.state import Console

__all__ = ["Asked", "open_requests", "router"]

router = APIRouter()

RUNS = 1_000
"""Most runs awaiting input the inbox reads (the newest)."""
ANSWERED_FROM = 50
"""The answered requests shown are those of this many newest runs."""


@dataclass(frozen=True)
class Asked:
    """A request in the inbox, with the run that made it: ``request`` is its record (open or answered)."""

    run: RunRecord
    request: RequestRecord


def open_requests(client: Client) -> list[Asked]:
    """The open requests of the runs awaiting input (the newest :data:`RUNS`), oldest request first."""
    found: list[Asked] = []
    for run in client.list_runs(RUNS, RunFilter(status=RunStatus.AWAITING_INPUT)):
        try:
            made = client.run_requests(run.id)
        except RunNotFoundError:  # deleted, or its thread expired, meanwhile
            continue
        found += [Asked(run, r) for r in made if r.status == "open"]
    return sorted(found, key=lambda asked: (asked.request.created_at or "", asked.request.id))


def answered_requests(client: Client) -> list[Asked]:
    """The answered requests of the newest :data:`ANSWERED_FROM` runs, newest answer first."""
    found: list[Asked] = []
    for run in client.list_runs(ANSWERED_FROM):
        try:
            made = client.run_requests(run.id)
        except RunNotFoundError:
            continue
        found += [Asked(run, r) for r in made if r.status == "answered"]
    return sorted(found, key=lambda asked: asked.request.answered_at or "", reverse=True)


@router.get("/requests")
async def inbox(request: Request) -> Response:
    console = Console.of(request)
    context = await run_in_threadpool(_context, console.client)
    return templates.TemplateResponse(
        request, "requests.html", {**context, "read_only": console.guard.read_only}
    )


def _context(client: Client) -> dict[str, Any]:
    return {
        "open": open_requests(client),
        "answered": answered_requests(client),
        "keeps_history": client.keeps_history(),
        "schema_text": schema_text,
        "to_json": to_json,
        "deadline_iso": deadline_iso,
        "runs": RUNS,
        "answered_from": ANSWERED_FROM,
    }
