"""``/api/runs``: read runs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from graphcore.backend.json_forms import jsonable, record_json
from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter(tags=["runs"])


@router.get("/runs/{run_id}", summary="One run's record")
async def get_run(request: Request, run_id: str) -> dict[str, Any]:
    """The run's record (the JSON of ``graphq runs show RUN -o json`` without its requests).

    Errors: 404 when no run has that id (problem+json).
    """
    record = await run_in_threadpool(Console.of(request).client.get_run, run_id)
    data: dict[str, Any] = jsonable(record_json(record))
    return data
