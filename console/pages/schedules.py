"""``/schedules``: every schedule as ``graphq schedules list`` shows it, with its next fires (``schedules
next``) and its last fires and their runs (``schedules history``), live; and the actions pause, resume and
trigger (POST, from htmx with the CSRF header), which call what the CLI calls and answer with its words."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from graphq.console.pages.actions import Outcome, act
from graphq.console.pages.live import live_page
from graphq.console.rendering import quote_id
from graphq.console.state import Console
from graphq.scheduler.api import Schedules, utc_text

__all__ = ["FIRES", "router"]

router = APIRouter()

FIRES = 3
"""Next fires and last fires shown per schedule."""


def _read(api: Schedules) -> dict[str, Any]:
    found = api.summaries()
    for s in found:
        readable = s["state"] is not None
        s["next"] = [utc_text(f) for f in api.next(s["name"], FIRES)] if readable else []
        s["history"] = api.history(s["name"], FIRES) if readable else []
    return {"schedules": found}


async def _load(request: Request) -> dict[str, Any]:
    console = Console.of(request)
    found = await run_in_threadpool(_read, Schedules(console.client))
    return {**found, "read_only": console.guard.read_only}


live_page(router, "/schedules", "schedules.html", "_schedules_table.html", _load)


def _act(api: Schedules, name: str, action: str) -> Outcome:
    """Do ``action`` on schedule ``name``: the CLI's line for it, and the run a trigger started."""
    if action == "trigger":
        run_id = api.trigger(name)
        if run_id is None:
            return Outcome(api.buffered_text(name))
        return Outcome(f"schedule {name}: triggered run {run_id}", f"/runs/{quote_id(run_id)}", "open run")
    getattr(api, action)(name)
    return Outcome(f"schedule {name}: {action}d")


@router.post("/schedules/{name}/{action}")
async def schedule_action(request: Request, name: str, action: str) -> Response:
    """Pause, resume or trigger schedule ``name``: the outcome as a fragment (an error in the CLI's words
    with its status, e.g. an unknown schedule 404, a trigger skipped by ``--overlap skip`` 409; 404 for an
    unknown action)."""
    if action not in ("pause", "resume", "trigger"):
        raise HTTPException(404, f"no action {action!r} on a schedule (pause, resume or trigger)")
    return await act(request, _act, Schedules(Console.of(request).client), name, action)
